# x86_64 relocations that apply_relocate_add() handles, for the GNU ld
# comparison (testdata/modplt/link/Makefile links this with ld at the
# addresses in x86_64.syms, and the test links it with modplt).
	.text
	.globl	f
f:
	call	ext_fn			# R_X86_64_PLT32
	jmp	ext_fn			# R_X86_64_PLT32 (a jump)
	leaq	ext_data(%rip), %rax	# R_X86_64_PC32
	movq	$ext_data, %rax		# R_X86_64_32S
	movl	$low_abs, %eax		# R_X86_64_32
	movabsq	$ext_data, %rax		# R_X86_64_64
	movq	%rax, local_var(%rip)	# R_X86_64_PC32 against .data
	call	other			# R_X86_64_PLT32 into .othertext (another section)
	ret

	.section .othertext, "ax"
	.globl	other
other:
	leaq	f(%rip), %rax		# R_X86_64_PC32 back into .text
	ret

	.data
local_var:
	.quad	0
	.quad	ext_fn			# R_X86_64_64
	.quad	f + 16			# R_X86_64_64 against .text
	.long	ext_data - .		# R_X86_64_PC32
	.quad	ext_data - .		# R_X86_64_PC64
