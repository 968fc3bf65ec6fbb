// SPDX-License-Identifier: GPL-2.0-only

// Package ftrace reads where a kernel has ftrace call sites: the
// locations livepatch needs to redirect a function, so that a patched
// function without one is found before the patch is loaded.
//
// # Kernel code mirrored
//
//   - kernel/livepatch/patch.c: klp_patch_func() asks ftrace_location() for
//     the function's address and fails the patch ("failed to find location
//     for function '%s'") when it answers 0.
//   - kernel/trace/ftrace.c: ftrace_location() answers with a call-site
//     record at the address itself or, for a symbol's start, anywhere up to
//     the next symbol (kallsyms_lookup_size_offset()): Sites.Function asks
//     the same of the kernel's symbols (kallsyms.Index.Addr). The records
//     are made at boot from vmlinux's __mcount_loc table
//     (ftrace_process_locs(), between __start_mcount_loc and
//     __stop_mcount_loc: include/asm-generic/vmlinux.lds.h's MCOUNT_REC()),
//     which NewImage reads (ftrace_call_adjust() moves each record to the
//     instruction it patches: arm64's CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS
//     records the NOPs before each function, which NewImage moves into it;
//     arm64's from the R_AARCH64_RELATIVE relocations
//     that __relocate_kernel applies at boot: its vmlinux is linked with
//     --no-apply-dynamic-relocs); t_show() and print_rec() print them as tracefs's
//     available_filter_functions ("name" or "name [module]", a disabled
//     record "__ftrace_invalid_address___<offset>") and, from Linux 6.5,
//     available_filter_functions_addrs (each line led by the address),
//     which ParseTracefs reads.
//
// # Input
//
// x86's compressed kernel (bzImage, /boot/vmlinuz) carries vmlinux without
// its symbols as its payload (arch/x86/boot/header.S's payload_offset and
// payload_length), xz-compressed with the x86 BCJ filter by Debian's build
// (scripts/xz_wrap.sh; klpresolve decodes it itself), or zstd or gzip. arm64's
// (its Image: arch/arm64/boot's objcopy -O binary of vmlinux, with the
// header of Documentation/arm64/booting.rst) is vmlinux's loaded bytes from
// _text, without symbols, so the kernel's System.map finds the table and
// .rela.dyn (__rela_start, __rela_end: arch/arm64/kernel/vmlinux.lds.S),
// whose R_AARCH64_RELATIVE relocations __relocate_kernel (head.S) applies at
// boot; their link-time offsets say a running kernel's KASLR offset.
//
// Inputs are untrusted: a kernel image's table must lie within the bytes its
// program headers give the file, a text line must be one of tracefs's forms
// (an error names the file and the line), and nothing is allocated beyond
// what the input holds. Call sites are kept in the address space of the
// kernel's symbols they were read against: an image's link-time addresses
// move by the running kernel's KASLR offset (its _text's address against the
// image's), and a sample of them must fall at the start of functions of those
// symbols, or the image is another kernel's (ErrMismatch).
package ftrace
