@ A Thumb-2 module fragment for modplt's counting tests: 32-bit ARM REL
@ relocations whose addends live in the instructions, Thumb and ARM
@ state, zero and non-zero addends, and core and init sections.
	.syntax unified

	.section .text,"ax",%progbits
	.thumb
	.global core_fn
	.thumb_func
core_fn:
	bl	memset		@ THM_CALL memset, zero addend
	bl	memset		@ the same entry
	bl	memcpy		@ THM_CALL memcpy
	b.w	memcpy		@ THM_JUMP24 memcpy: its own (type, symbol) group
	bl	memmove+8	@ THM_CALL memmove, non-zero addend: its own entry
	bl	memmove+8	@ again: the kernel never deduplicates non-zero addends
	bl	near		@ same section: never a PLT
	bl	far_fn		@ another section of this module
	.global near
	.type	near, %function
	.thumb_func
near:
	bx	lr

	.section .text.unlikely,"ax",%progbits
	.thumb
	.global far_fn
	.thumb_func
far_fn:
	bl	memset		@ a new section: memset again
	bx	lr

	.section .init.text,"ax",%progbits
	.arm
	.global init_fn
init_fn:
	bl	memset		@ ARM CALL memset
	bl	memset
	b	memcpy		@ ARM JUMP24 memcpy
	bl	memcpy+16	@ ARM CALL memcpy, addend 16
	bx	lr

	@ The kernel's module.lds gives every module these placeholders.
	.section .plt,"ax",%progbits
	.byte 0
	.section .init.plt,"ax",%progbits
	.byte 0
