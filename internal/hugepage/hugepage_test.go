// SPDX-License-Identifier: GPL-2.0-only

package hugepage

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Advice never changes a byte and accepts any slice, aligned or not.
func TestAdviseKeepsContents(t *testing.T) {
	b := make([]uint32, 3<<20) // 12 MiB: holds at least 4 whole huge pages
	for i := range b {
		b[i] = uint32(i) * 2654435761
	}
	Advise(b)
	Advise(b[1:])
	Advise(b[:0])
	Advise([]byte(nil))
	Advise(make([]byte, Size-1))
	for i := range b {
		if b[i] != uint32(i)*2654435761 {
			t.Fatalf("word %d changed", i)
		}
	}
	type rec struct{ a, b uint64 }
	r := make([]rec, Size/16*3)
	Advise(r)
	r[len(r)-1] = rec{7, 8}
	require.Equal(t, rec{7, 8}, r[len(r)-1])
}

// Release zeroes the whole pages inside the slice and leaves the bytes
// around them alone.
func TestReleaseZeroesWholePages(t *testing.T) {
	b := make([]byte, 6*4096)
	for i := range b {
		b[i] = 0xa5
	}
	start := 4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096) // b[start] begins a page
	if start < 100 {
		start += 4096
	}
	Release(b[start-100 : start+2*4096+100]) // two whole pages inside
	for i := range b {
		want := byte(0xa5)
		if runtime.GOOS == "linux" && i >= start && i < start+2*4096 {
			want = 0
		}
		if b[i] != want {
			t.Fatalf("byte %d: %#x, want %#x", i, b[i], want)
		}
	}
	Release([]uint64(nil))
}

// Populate faults pages in without changing a byte: on a fresh mapping,
// every whole page of the range is resident afterwards and reads as zero,
// the pages around it are not; on a written buffer, every byte stays.
func TestPopulate(t *testing.T) {
	require.True(t, Populate([]byte(nil)))
	b := make([]uint32, 1<<20)
	for i := range b {
		b[i] = uint32(i) * 2654435761
	}
	if !Populate(b[1:]) {
		t.Skip("the kernel cannot populate (MADV_POPULATE_WRITE is Linux 5.14)")
	}
	for i := range b {
		if b[i] != uint32(i)*2654435761 {
			t.Fatalf("word %d changed", i)
		}
	}
	populateFresh(t)
}
