@ Thumb functions for cfix-thumb.o to call, so that GNU ld keeps its BLs
@ (a --defsym symbol has no type, and ld would make them BLX).
	.syntax unified
	.section .exttext, "ax"
	.thumb
	.globl	ext_notify, ext_compute
	.type	ext_notify, %function
	.type	ext_compute, %function
	.thumb_func
ext_notify:
	bx	lr
	.thumb_func
ext_compute:
	bx	lr
