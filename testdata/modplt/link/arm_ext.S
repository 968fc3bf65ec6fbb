@ A Thumb function for arm.S to call, so that GNU ld knows its target is
@ Thumb (a --defsym symbol has no type, and ld would turn the BL into BLX).
	.syntax unified
	.section .exttext, "ax"
	.thumb
	.globl	ext_tfn
	.type	ext_tfn, %function
	.thumb_func
ext_tfn:
	bx	lr
