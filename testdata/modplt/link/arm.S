@ 32-bit ARM relocations that apply_relocate() handles (ARM state and a
@ Thumb-2 kernel's), for the GNU ld comparison (see Makefile; addresses
@ in arm.syms). The addends live in the instructions.
	.syntax unified
	.text
	.arm
	.globl	f
f:
	.fnstart
	bl	ext_fn				@ R_ARM_CALL
	b	ext_fn				@ R_ARM_JUMP24
	blne	ext_fn				@ R_ARM_JUMP24 (conditional)
	bl	other				@ R_ARM_CALL into .othertext
	movw	r0, #:lower16:ext_data		@ R_ARM_MOVW_ABS_NC
	movt	r0, #:upper16:ext_data		@ R_ARM_MOVT_ABS
	movw	r1, #:lower16:ext_data - .	@ R_ARM_MOVW_PREL_NC
	movt	r1, #:upper16:ext_data - .	@ R_ARM_MOVT_PREL
	add	r2, pc, #:pc_g0_nc:(ext_data)	@ R_ARM_ALU_PC_G0_NC
	add	r2, r2, #:pc_g1_nc:(ext_data + 4) @ R_ARM_ALU_PC_G1_NC
	ldr	r3, [r2, #:pc_g2:(ext_data + 8)]	@ R_ARM_LDR_PC_G2
	bx	lr
	.fnend					@ .ARM.exidx: R_ARM_PREL31

	.thumb
	.globl	g
	.type	g, %function
	.thumb_func
g:
	bl	ext_tfn				@ R_ARM_THM_CALL
	b.w	ext_tfn				@ R_ARM_THM_JUMP24
	movw	r0, #:lower16:ext_data		@ R_ARM_THM_MOVW_ABS_NC
	movt	r0, #:upper16:ext_data		@ R_ARM_THM_MOVT_ABS
	movw	r1, #:lower16:ext_data - .	@ R_ARM_THM_MOVW_PREL_NC
	movt	r1, #:upper16:ext_data - .	@ R_ARM_THM_MOVT_PREL
	bx	lr

	.section .othertext, "ax"
	.arm
	.globl	other
other:
	bx	lr

	.data
	.word	ext_data			@ R_ARM_ABS32
	.word	ext_data - .			@ R_ARM_REL32
	.word	f + 8				@ R_ARM_ABS32 against .text
