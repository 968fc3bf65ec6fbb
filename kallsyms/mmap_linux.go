// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/klpresolve/klpresolve/internal/hugepage"
)

// mapFile maps the first size bytes of f read-only. Pages come straight
// from the page cache: nothing is copied, and no fresh memory is faulted
// in and zeroed, which is what reading a raw snapshot mostly cost.
//
// A mapping of 2 MiB or more is advised for huge pages (MADV_HUGEPAGE,
// ignored where unsupported) before it is first touched: where the file is
// not in the page cache, readahead then reads it into 2 MiB folios, which
// this and every later mapping map whole. Read with the default readahead
// (folios of 16-128 KiB), touching a mapped raw snapshot costs about ten
// times as much, on every load after (docs/benchmarks.md).
func mapFile(f *os.File, size int) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err == nil && size >= hugepage.Size {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	return b, err
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(b []byte) { _ = unix.Munmap(b) }

// mapAnon maps size bytes of fresh zeroed memory outside the Go heap: the
// kernel faults in only the pages written, the runtime never clears it,
// and it does not count towards the heap that paces the collector.
func mapAnon(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}
