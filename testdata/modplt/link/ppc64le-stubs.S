# ppc64le relocations that go through the module's stubs or its TOC (r2),
# which GNU ld makes its own way: the test links this with modplt and
# checks what each instruction reaches (testdata/modplt/link/Makefile).
	.abiversion 2
	.section .stubs,"ax",@nobits	# as asm/module.h declares it
	.align 3

	.text
	.globl	g
	.type	g, @function
g:
	addis	2, 12, .TOC. - g@ha	# R_PPC64_REL16_HA against .TOC.: r2 = my_r2()
	addi	2, 2, .TOC. - g@l	# R_PPC64_REL16_LO
	.localentry g, . - g
	mflr	0
	bl	_mcount			# +0x0c mprofile: a kernel-TOC stub, no nop after
	bl	ext_fn			# +0x10 external: a stub, and the nop restores r2
	nop
	bl	ext_fn			# +0x18 the same stub
	nop
	bl	ext_fn + 8		# +0x20 another target, another stub
	nop
	addis	9, 2, .LC0@toc@ha	# +0x28 R_PPC64_TOC16_HA
	ld	9, .LC0@toc@l(9)	# +0x2c R_PPC64_TOC16_LO_DS
	addi	9, 2, .LC1@toc@l	# +0x30 R_PPC64_TOC16_LO
	ld	9, .LC0@toc(2)		# +0x34 R_PPC64_TOC16_DS
	addi	9, 2, .LC1@toc		# +0x38 R_PPC64_TOC16
	.reloc	., R_PPC64_TOCSAVE, 0	# +0x3c a marker: nothing
	nop
	b	ext_other		# +0x40 a sibling call: a stub, no r2 restore
	blr

	.globl	big
	.type	big, @function
big:					# the large code model's prologue
	.reloc	., R_PPC64_ENTRY, 0	# +0x48
	ld	2, -8(12)
	add	2, 2, 12
	blr

	.section .toc, "aw"
.LC0:	.quad	ext_data		# R_PPC64_ADDR64: what TOC16_DS loads
.LC1:	.quad	0

	.data
	.quad	.TOC.@tocbase		# R_PPC64_TOC: the module's r2
