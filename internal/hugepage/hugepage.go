// SPDX-License-Identifier: GPL-2.0-only

// Package hugepage asks the kernel to back large, freshly allocated
// buffers with transparent huge pages, to take back the pages of a
// scratch array, and to fault a buffer in ahead of the thread that will
// write it.
//
// A one-shot klpresolve run touches 10-20 MB of new memory for one index;
// on the VMs it runs on, each 4 KiB first-touch fault costs 1.5-6 us, so
// the faults cost more than the parse itself. Where transparent huge
// pages are enabled in "madvise" mode (the usual default), a buffer that
// is advised before it is first written is faulted in 2 MiB at a time.
//
// Advice is only advice: on other systems, for buffers smaller than a huge
// page, or when the kernel refuses, nothing happens and nothing fails. It
// changes no byte of the buffer and is safe on Go heap memory (the runtime
// does the same for its own structures, see sysHugePage).
package hugepage

import "unsafe"

// Size is the huge page size advised for (x86_64 and arm64 with 4 KiB base
// pages).
const Size = 2 << 20

// Advise marks the huge-page-aligned interior of b for huge pages. Call it
// before the buffer is first written.
func Advise[T any](b []T) {
	AdviseWithin(b[:len(b):len(b)])
}

// minPart is the least part of a huge page that AdviseWithin advises a
// whole huge page for: an eighth (256 KiB, 64 pages). On bare metal a
// fresh 4 KiB page costs about 0.7 us to fault in and a huge page 80 us:
// an eighth breaks even there; under virtualization a huge page is the
// cheaper sooner (docs/benchmarks.md).
const minPart = Size / 8

// AdviseWithin marks for huge pages each huge page that b's elements
// cover at least an eighth of and that lies wholly inside b's capacity:
// the memory up to cap(b) is the caller's (a mapping it reserved), so an
// array that ends part way into a huge page gets that page whole when it
// covers enough of it (Advise leaves it out). Call it before the buffer
// is first written.
func AdviseWithin[T any](b []T) {
	var t T
	sz := unsafe.Sizeof(t)
	if cap(b) == 0 || sz == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	end, limit := start+uintptr(len(b))*sz, start+uintptr(cap(b))*sz
	lo := start &^ (Size - 1)
	if lo < start {
		lo += Size // the huge page b starts in is not wholly b's
	}
	var from, to uintptr
	for p := lo; p+Size <= limit; p += Size {
		if min(end, p+Size) < p+minPart {
			break
		}
		if to == 0 {
			from = p
		}
		to = p + Size
	}
	if to > from {
		advise(from, to-from)
	}
}

// Release gives the whole pages of b back to the kernel (MADV_DONTNEED):
// a scratch array that is done with stops counting towards the resident
// set, while the allocation that holds it lives on. b then reads as
// zeros. Other systems do nothing.
func Release[T any](b []T) {
	if lo, n := wholePages(b); n > 0 {
		release(lo, n)
	}
}

// wholePages is the start and length of the 4 KiB pages that lie wholly
// inside b (n is 0 if there is none).
func wholePages[T any](b []T) (lo, n uintptr) {
	if len(b) == 0 {
		return 0, 0
	}
	var t T
	const page = 4096
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo = (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))*unsafe.Sizeof(t)) &^ (page - 1)
	if hi <= lo {
		return 0, 0
	}
	return lo, hi - lo
}

// Populate faults in the whole pages of b for writing, as a write to each
// would, but without writing (MADV_POPULATE_WRITE, Linux 5.14): no byte
// of b changes, so it is safe while another thread writes to b. It lets
// a spare core take the page faults a buffer's writer would otherwise
// take on its own path. It reports false when the kernel cannot do it
// (an older kernel, another system), and the caller should stop trying.
func Populate[T any](b []T) bool {
	lo, n := wholePages(b)
	return n == 0 || populate(lo, n)
}
