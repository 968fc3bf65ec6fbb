/*
 * arm64's Image header (Documentation/arm64/booting.rst, head.S's
 * __HEAD), at _text: what objcopy -O binary keeps of vmlinux starts with it,
 * and ftrace's tests read that Image (/boot/vmlinuz on Debian's arm64) as
 * they read vmlinux.
 */
	.section ".head.text", "ax"
	b	start_kernel		/* code0 */
	.long	0			/* code1 */
	.quad	0			/* text_offset */
	.long	_kernel_size_lo32, 0	/* image_size: _end - _text (arm64.lds) */
	.quad	0xa			/* flags: little-endian, 4K pages, anywhere */
	.quad	0, 0, 0			/* res2, res3, res4 */
	.ascii	"ARM\x64"		/* magic */
	.long	0			/* res5 */
