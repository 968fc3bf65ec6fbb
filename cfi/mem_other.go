// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package cfi

import "fmt"

// newSystemMapper is the mapper a Set uses. Where there is no memfd
// (memfd_create(2) is Linux's), shadows are ordinary Go memory: readers
// see the same bytes the writer wrote, nothing is mapped read-only, and a
// reclaimed shadow is left to the garbage collector, which frees it once
// no reader holds it. Lookups answer the same; what is lost is the
// hardware's guarantee that a published shadow is never written.
func newSystemMapper(slot, slots int, _ bool) (mapper, error) {
	return &heapMapper{slot: slot, slots: slots}, nil
}

// heapMapper hands out heap regions; it never holds more than slots of
// them at once in the Set's accounting, as the memfd mapper does.
type heapMapper struct{ slot, slots int }

func (m *heapMapper) alloc(n, k int) ([][]byte, error) {
	if n != m.slot {
		return nil, fmt.Errorf("cfi: region of %d bytes, slots are %d", n, m.slot)
	}
	out := make([][]byte, max(k, 1))
	for i := range out {
		out[i] = make([]byte, n)
	}
	return out, nil
}

func (m *heapMapper) writable(mem []byte) ([]byte, error) { return mem, nil }
func (m *heapMapper) free([]byte) error                   { return nil }
func (m *heapMapper) freeAll([][]byte) error              { return nil }
func (m *heapMapper) capacity() int                       { return m.slots }
func (m *heapMapper) close() error                        { return nil }
