package kallsyms

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only. Pages come straight
// from the page cache: nothing is copied, and no fresh memory is faulted
// in and zeroed, which is what reading a raw snapshot mostly cost.
func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(b []byte) { _ = unix.Munmap(b) }

// mapAnon maps size bytes of fresh zeroed memory outside the Go heap: the
// kernel faults in only the pages written, the runtime never clears it,
// and it does not count towards the heap that paces the collector.
func mapAnon(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}
