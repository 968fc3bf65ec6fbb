// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"fmt"
	"unsafe"
)

// slid is ix with Options.Slide or SlideTo applied (see Options), or
// err.
func (o *Options) slid(ix *Index, err error) (*Index, error) {
	if err != nil || o == nil || o.Slide == 0 && o.SlideTo == 0 {
		return ix, err
	}
	if o.Slide != 0 && o.SlideTo != 0 {
		return nil, fmt.Errorf("%s: %w: give a slide or the running kernel's _text, not both", ix.source, ErrSlide)
	}
	if ix.lazy != nil || ix.inMapping() {
		return nil, fmt.Errorf("%s: %w: a snapshot keeps the addresses it was written with (write it again from the System.map or image with them moved)", ix.source, ErrSlide)
	}
	d := o.Slide
	if o.SlideTo != 0 {
		text, ok := ix.Find(Vmlinux, "_text", 1)
		if !ok {
			text, ok = ix.Find(Vmlinux, "_stext", 1)
		}
		if !ok {
			return nil, fmt.Errorf("%s: %w: it lists no _text nor _stext to measure the running kernel's offset from", ix.source, ErrSlide)
		}
		d = o.SlideTo - text.Address
	}
	ix.slideVmlinux(d)
	return ix, nil
}

// inMapping: the symbols are a raw snapshot's, used in place in its
// read-only mapping.
func (ix *Index) inMapping() bool {
	if len(ix.syms) == 0 || len(ix.mapping) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&ix.syms[0])), uintptr(unsafe.Pointer(&ix.mapping[0]))
	return p >= lo && p < lo+uintptr(len(ix.mapping))
}

// slideVmlinux adds d to vmlinux's addresses but for its absolute
// symbols, before the index is handed out (the order of the others is
// kept: they all move alike).
func (ix *Index) slideVmlinux(d uint64) {
	o := &ix.objs[0]
	lo, hi := ^uint64(0), uint64(0)
	for i := o.start; i < o.end; i++ {
		s := &ix.syms[i]
		if s.typ != 'A' && s.typ != 'a' {
			s.addr += d
			lo, hi = min(lo, s.addr), max(hi, s.addr)
		}
	}
	if lo <= hi {
		o.lo, o.hi = lo, hi
	}
	ix.slide = d
}

// Slide is the offset Options.Slide or SlideTo moved vmlinux's addresses
// by (0: as the input had them).
func (ix *Index) Slide() uint64 { return ix.slide }
