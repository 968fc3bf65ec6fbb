# s390x relocations that take the module's GOT or PLT (apply_rela()):
# the test links this with modplt and checks what each one points at.
	.text
	.globl	g
g:
	lgrl	%r1, ext_data@GOTENT		# R_390_GOTENT
	larl	%r2, ext_data@GOTENT		# R_390_GOTENT, the same slot
	lg	%r3, ext_fn@GOT(%r12)		# R_390_GOT20
	l	%r4, other_data@GOT(%r12)	# R_390_GOT12
	brasl	%r14, ext_fn@PLT		# R_390_PLT32DBL, out of reach: the PLT
	brasl	%r14, near_fn@PLT		# R_390_PLT32DBL, in reach: direct
	brasl	%r14, ext_fn@PLT		# the same PLT entry
	larl	%r12, _GLOBAL_OFFSET_TABLE_	# R_390_GOTPCDBL
	br	%r14

	.data
	.quad	ext_fn@PLTOFF			# R_390_PLTOFF64
	.long	near_fn@PLTOFF			# R_390_PLTOFF32
	.long	0
	.quad	ext_data@GOTOFF			# R_390_GOTOFF64
	.quad	ext_fn@PLT			# R_390_PLT64
