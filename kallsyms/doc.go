// SPDX-License-Identifier: GPL-2.0-only

// Package kallsyms reads a kernel's symbol list (/proc/kallsyms, System.map
// or a snapshot written by this package) into an immutable index with one
// hash table per object (vmlinux and each module), so that livepatch's
// question — "which address has the sympos-th symbol called name in object
// obj?" — is answered in O(1) instead of the kernel's linear walk.
//
// # Kernel code mirrored
//
//   - kernel/livepatch/core.c: klp_find_object_symbol() and
//     klp_find_callback() give the lookup rules that Index.Lookup
//     implements: sympos 0 means the name must be unique in its object,
//     sympos N >= 1 means the N-th occurrence, every symbol type counts, and
//     a match whose address is 0 is "not found".
//   - kernel/kallsyms.c: s_show() gives the line format ("%px %c %s" and
//     "%px %c %s\t[%s]" for modules); the vmlinux table is in address order,
//     which is the order sympos counts in.
//   - kernel/module/kallsyms.c: module_kallsyms_on_each_symbol() walks a
//     module's symbols in symbol-table order, which is the order of that
//     module's lines in /proc/kallsyms; module_kallsyms_lookup_name() gives
//     the "module:symbol" spec; kallsyms_lookup() the reverse lookup,
//     which finds nothing outside the kernel image and the modules' memory:
//     Index.Addr takes an object to end on the page of its highest symbol
//     (kallsyms does not list where objects end).
//   - The architecture's entry code: Index.Arch names the architecture a
//     kernel was built for from symbols only one of them defines
//     (x86_64_start_kernel, primary_entry, vector_swi, startup_continue,
//     start_here_multiplatform).
//
// # Input
//
// Inputs are untrusted. A malformed line is an error naming the file and
// the line; a name longer than KSYM_NAME_LEN-1 (511) bytes is an error; a
// file whose addresses are all zero (kptr_restrict hid them) is
// ErrRestricted, never a flood of "not found"; the one-line placeholder
// that Debian's kernel packages install as /boot's System.map is
// ErrPlaceholder, which says where the real one is. gzip, zstd, xz and bzip2
// inputs are detected by their magic bytes. Names are not copied: they point into the
// one buffer that holds the input. A raw snapshot file is that buffer
// without being read: Open maps it read-only, and the mapping is released
// once the Index is unreachable (names handed to callers are then copies).
// Such a file must not be truncated or rewritten in place while its Index
// is in use (replace it by renaming, as the snapshot writers do), or
// Options.NoMap reads it. A compact snapshot file is mapped too, and kept
// by its Index: loading checks it whole but decodes only its table of
// contents, and each chunk of its names and records is decoded the first
// time a lookup needs it (DecodeAll decodes the rest at once, and reports a
// chunk that does not decode). Texts are read by default (into huge pages
// where the kernel allows): in a mapped text, every lookup takes a TLB
// miss on the file's 4 KiB pages (85 -> 125 ns). Options.MapText maps them
// anyway, for a short-lived process such as klpresolve's commands: the
// file is parsed in place, as a stream is (below), which saves faulting
// in a buffer of its size and a pass over it, a quarter of a fresh
// process's index build.
//
// A stream of unknown size, /proc/kallsyms above all (the kernel formats it
// 4 KiB per read), is parsed while it arrives: its symbol records and
// tables go to an anonymous mapping outside the Go heap, which the Index
// keeps and a cleanup unmaps once the Index is unreachable; nothing in it
// is ever handed to a caller.
//
// Index.Close releases those mappings at once, for a program that opens
// index after index (a mapping is not Go heap, and the collector does not
// run sooner for it).
//
// An Index is immutable once built and safe for concurrent use; Close,
// which empties it, must not run while it is in use.
package kallsyms
