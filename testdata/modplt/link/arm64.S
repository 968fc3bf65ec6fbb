// arm64 relocations that apply_relocate_add() handles, for the GNU ld
// comparison (see Makefile; addresses in arm64.syms).
	.text
	.globl	f
f:
	bl	ext_fn				// CALL26
	b	ext_fn				// JUMP26
	adrp	x0, ext_data			// ADR_PREL_PG_HI21
	add	x0, x0, :lo12:ext_data		// ADD_ABS_LO12_NC
	ldrb	w1, [x0, :lo12:ext_data]	// LDST8_ABS_LO12_NC
	ldrh	w1, [x0, :lo12:ext_data]	// LDST16_ABS_LO12_NC
	ldr	w1, [x0, :lo12:ext_data]	// LDST32_ABS_LO12_NC
	ldr	x1, [x0, :lo12:ext_data]	// LDST64_ABS_LO12_NC
	ldr	q1, [x0, :lo12:ext_data]	// LDST128_ABS_LO12_NC
	movz	x2, #:abs_g3:ext_data		// MOVW_UABS_G3
	movk	x2, #:abs_g2_nc:ext_data	// MOVW_UABS_G2_NC
	movk	x2, #:abs_g1_nc:ext_data	// MOVW_UABS_G1_NC
	movk	x2, #:abs_g0_nc:ext_data	// MOVW_UABS_G0_NC
	movz	x3, #:abs_g0:small		// MOVW_UABS_G0
	movz	x3, #:abs_g1:small		// MOVW_UABS_G1
	movz	x3, #:abs_g2:mid		// MOVW_UABS_G2
	movz	x4, #:abs_g0_s:neg		// MOVW_SABS_G0: negative, becomes MOVN
	movz	x4, #:abs_g1_s:neg		// MOVW_SABS_G1
	movz	x4, #:abs_g2_s:small		// MOVW_SABS_G2
	movz	x5, #:prel_g0:near		// MOVW_PREL_G0
	movk	x5, #:prel_g0_nc:ext_data	// MOVW_PREL_G0_NC
	movz	x5, #:prel_g1:ext_fn		// MOVW_PREL_G1
	movk	x5, #:prel_g1_nc:ext_data	// MOVW_PREL_G1_NC
	movz	x5, #:prel_g2:ext_fn		// MOVW_PREL_G2
	movk	x5, #:prel_g2_nc:ext_data	// MOVW_PREL_G2_NC
	movz	x5, #:prel_g3:ext_data		// MOVW_PREL_G3
	ldr	x6, near			// LD_PREL_LO19
	adr	x7, near			// ADR_PREL_LO21
	tbz	x0, #3, near			// TSTBR14
	b.eq	near				// CONDBR19
	cbz	x0, near			// CONDBR19
	bl	other				// CALL26 into .othertext
	ret

	.section .othertext, "ax"
	.globl	other
other:
	adrp	x0, f				// ADR_PREL_PG_HI21 back into .text
	ret

	.data
	.balign	8
	.quad	ext_data			// ABS64
	.word	low_abs				// ABS32
	.hword	small				// ABS16
	.hword	0
	.quad	ext_data - .			// PREL64
	.word	ext_fn - .			// PREL32
	.hword	data_near - .			// PREL16
