// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"encoding/binary"
	"os"
	"unsafe"
)

// invalid marks a slot no module owns (SHADOW_INVALID).
const invalid = 0xFFFF

// headerBytes is the mapping's header: the base page index, a uint64,
// as struct cfi_shadow's unsigned long base.
const headerBytes = 8

// shadow is one immutable snapshot: base is the page index of slot 0 and
// slots[i] the page index, relative to base, of the check function that
// guards page base+i. slots points into mem, a mapping of its own that is
// read-only once published. The Go struct itself (and so the reclamation
// bookkeeping) is ordinary memory.
type shadow struct {
	mem   []byte
	base  uint64
	slots []uint16
}

// mapBytes is the size of one shadow's mapping: the header and the slots,
// rounded up to whole OS pages. With the defaults (32,764 slots) it is
// exactly 64 KiB, as the kernel's SHADOW_SIZE.
func mapBytes(slots int) int {
	ps := os.Getpagesize()
	return (headerBytes + 2*slots + ps - 1) / ps * ps
}

// newShadow builds a shadow at base in mem (the writer's view of a
// region of mapBytes(slots) bytes), filled from prev as
// prepare_next_shadow() does (all invalid when prev is nil). retarget
// then points it at the region's read-only mapping.
func newShadow(mem []byte, slots int, base uint64, prev *shadow) *shadow {
	binary.NativeEndian.PutUint64(mem, base)
	s := &shadow{mem: mem, base: base, slots: unsafe.Slice((*uint16)(unsafe.Pointer(&mem[headerBytes])), slots)}
	if prev != nil && prev.base == base && len(prev.slots) == slots {
		copy(s.slots, prev.slots) // the same base: a plain copy
		return s
	}
	for i := range s.slots {
		s.slots[i] = invalid
	}
	if prev != nil {
		s.rebase(prev)
	}
	return s
}

// retarget points s at ro, the read-only mapping of the bytes it was
// built in.
func (s *shadow) retarget(ro []byte) {
	s.mem = ro
	s.slots = unsafe.Slice((*uint16)(unsafe.Pointer(&ro[headerBytes])), len(s.slots))
}

// index is ptr_to_shadow(): the slot of page, or -1 when the page is
// below the base or past the last slot.
func (s *shadow) index(page uint64) int {
	if page < s.base || page-s.base >= uint64(len(s.slots)) {
		return -1
	}
	return int(page - s.base)
}

// lookup is shadow_to_check_fn(ptr_to_shadow()): the check function of
// the page holding addr, or false.
func (s *shadow) lookup(addr uint64, shift uint) (uint64, bool) {
	i := s.index(addr >> shift)
	if i < 0 {
		return 0, false
	}
	v := s.slots[i]
	if v == invalid {
		return 0, false
	}
	// "__cfi_check is always page aligned".
	return (s.base + uint64(v)) << shift, true
}

// rebase is prepare_next_shadow() for a different base: every valid slot
// is re-based (the page and its check function both move relative to the
// new base), and the entries that no longer fit are dropped, which the
// slow path then finds.
func (s *shadow) rebase(prev *shadow) {
	for i, v := range prev.slots {
		if v == invalid {
			continue
		}
		page := prev.base + uint64(i)
		check := prev.base + uint64(v)
		ni, ci := s.index(page), s.index(check)
		if ni < 0 || ci < 0 {
			continue
		}
		s.slots[ni] = uint16(ci)
	}
}

// set is add_module_to_shadow() (check >= 0) and
// remove_module_from_shadow() (check < 0) for the pages [first, last]:
// pages outside the shadow are skipped. It returns how many pages it set.
func (s *shadow) set(first, last uint64, check int) int {
	v := uint16(invalid)
	if check >= 0 {
		v = uint16(check)
	}
	// Clip [first, last] to the slots; no loop over pages outside.
	if last < s.base || first > s.base+uint64(len(s.slots))-1 {
		return 0
	}
	lo := max(first, s.base) - s.base
	hi := min(last, s.base+uint64(len(s.slots))-1) - s.base
	for i := lo; i <= hi; i++ {
		s.slots[i] = v
	}
	return int(hi - lo + 1)
}
