# ppc64le relocations that apply_relocate_add() handles without a stub or
# the module's TOC, for the GNU ld comparison (testdata/modplt/link/Makefile
# links this with ld at the addresses in ppc64le.syms, and the test links
# it with modplt).
	.abiversion 2
	.section .stubs,"ax",@nobits	# as asm/module.h declares it
	.align 3

	.text
	.globl	f
	.type	f, @function
f:
0:	addis	3, 12, ext_data - 0b@ha	# R_PPC64_REL16_HA
	addi	3, 3, ext_data - 0b@l	# R_PPC64_REL16_LO
	bl	other			# R_PPC64_REL24 into .othertext: other's local entry
	bl	plain			# R_PPC64_REL24, no local entry
	b	other			# R_PPC64_REL24, a sibling call
	blr

	.section .othertext, "ax"
	.globl	other
	.type	other, @function
other:
	nop				# (a global entry's TOC setup would be here)
	nop
	.localentry other, . - other
	bl	f			# R_PPC64_REL24 back into .text
	nop
	blr
	.globl	plain
	.type	plain, @function
plain:
	blr

	.data
	.quad	0
	.quad	ext_fn			# R_PPC64_ADDR64
	.quad	f + 16			# R_PPC64_ADDR64 against .text
	.long	low_abs			# R_PPC64_ADDR32
	.long	ext_data - .		# R_PPC64_REL32
	.quad	ext_data - .		# R_PPC64_REL64
