# s390x relocations that apply_rela() handles without the module's GOT
# or PLT, for the GNU ld comparison (testdata/modplt/link/Makefile links
# this with ld at the addresses in s390x.syms, and the test links it with
# modplt).
	.text
	.globl	f
f:
	larl	%r1, ext_data		# R_390_PC32DBL
	brasl	%r14, other		# R_390_PC32DBL into .othertext
	j	1f			# (resolved by the assembler)
1:	bras	%r14, near		# R_390_PC16DBL
	la	%r1, small		# R_390_12
	lay	%r1, mid20		# R_390_20
	lay	%r2, neg20		# R_390_20, negative
	br	%r14

	.section .othertext, "ax"
	.globl	other
other:
	larl	%r2, f			# R_390_PC32DBL back into .text
	br	%r14

	.data
local_var:
	.quad	0
	.quad	ext_fn			# R_390_64
	.quad	f + 16			# R_390_64 against .text
	.long	low_abs			# R_390_32
	.short	small16			# R_390_16
	.byte	tiny			# R_390_8
	.byte	0
	.long	ext_data - .		# R_390_PC32
	.short	0			# (as cannot emit R_390_PC16 from data)
	.short	0
	.quad	ext_data - .		# R_390_PC64
