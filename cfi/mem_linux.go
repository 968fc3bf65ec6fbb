// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memfdMapper backs shadows with the slots of one memfd (shared memory):
// readers map a slot read-only; the writer writes it through one writable
// mapping of the whole file, made once. Building and publishing a shadow
// therefore changes no mapping: no mprotect and no TLB shootdown on the
// writer's path, which on a small virtual machine cost tens of
// microseconds per update. Read-only mappings are made (alloc, by the
// spare-mapping goroutine) and removed (free, by the reclaimer)
// elsewhere. The file has a fixed number of slots, enough for every
// shadow a Set can hold at once (the backlog bound, the spares, the
// current one and the one being built).
type memfdMapper struct {
	mu     sync.Mutex
	fd     int
	slot   int    // bytes per slot
	rw     []byte // the writer's mapping of the whole file
	isFree []bool // slots not mapped
	used   map[uintptr]int
}

// newSystemMapper is the mapper a Set uses: slots regions of slot bytes
// each, populated ahead with populate.
func newSystemMapper(slot, slots int, populate bool) (mapper, error) {
	return newMemfdMapper(slot, slots, populate)
}

func newMemfdMapper(slot, slots int, populate bool) (*memfdMapper, error) {
	fd, err := unix.MemfdCreate("klpresolve-cfi-shadow", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	size := int64(slot) * int64(slots)
	if err := unix.Ftruncate(fd, size); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// With populate (MAP_POPULATE), every page of the file is allocated
	// and mapped in the writer's view now, once, rather than faulted in
	// (16 faults per shadow) in the middle of updates.
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	rw, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	m := &memfdMapper{fd: fd, slot: slot, rw: rw, isFree: make([]bool, slots), used: map[uintptr]int{}}
	for i := range m.isFree {
		m.isFree[i] = true
	}
	return m, nil
}

// takeRun claims the first run of k free slots, or else the longest run
// there is (mu held).
func (m *memfdMapper) takeRun(k int) (start, n int) {
	bestStart, best := 0, 0
	for i := 0; i < len(m.isFree); {
		if !m.isFree[i] {
			i++
			continue
		}
		j := i
		for j < len(m.isFree) && m.isFree[j] && j-i < k {
			j++
		}
		if j-i > best {
			bestStart, best = i, j-i
		}
		if best == k {
			break
		}
		i = j
	}
	for i := bestStart; i < bestStart+best; i++ {
		m.isFree[i] = false
	}
	return bestStart, best
}

// alloc maps up to k fresh regions with one mmap of adjacent slots: a
// mapping per shadow is the price of unmapping each on reclaim, and one
// system call for several keeps it off most updates.
func (m *memfdMapper) alloc(n, k int) ([][]byte, error) {
	if n != m.slot {
		return nil, fmt.Errorf("cfi: region of %d bytes, slots are %d", n, m.slot)
	}
	m.mu.Lock()
	start, cnt := m.takeRun(max(k, 1))
	m.mu.Unlock()
	if cnt == 0 {
		return nil, errNoSlot
	}
	off, size := int64(start)*int64(m.slot), cnt*m.slot
	// Allocate the slots' pages before mapping them, so that the
	// read-only mapping and the writer's view share them from the start.
	err := unix.Fallocate(m.fd, 0, off, int64(size))
	var p unsafe.Pointer
	if err == nil {
		// MmapPtr/MunmapPtr, not Mmap/Munmap: one mapping is cut into
		// regions unmapped one by one, or adjacent ones together
		// (freeAll), which x/sys's per-slice bookkeeping of Mmap would
		// not follow.
		p, err = unix.MmapPtr(m.fd, off, nil, uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		for i := start; i < start+cnt; i++ {
			m.isFree[i] = true
		}
		return nil, err
	}
	all := unsafe.Slice((*byte)(p), size)
	out := make([][]byte, cnt)
	for i := range out {
		out[i] = all[i*m.slot : (i+1)*m.slot : (i+1)*m.slot]
		m.used[uintptr(unsafe.Pointer(&out[i][0]))] = start + i
	}
	return out, nil
}

func (m *memfdMapper) writable(mem []byte) ([]byte, error) {
	m.mu.Lock()
	s, ok := m.used[uintptr(unsafe.Pointer(&mem[0]))]
	m.mu.Unlock()
	if !ok {
		return nil, errors.New("cfi: unknown shadow region")
	}
	return m.rw[s*m.slot : (s+1)*m.slot : (s+1)*m.slot], nil
}

func (m *memfdMapper) free(mem []byte) error {
	return m.freeAll([][]byte{mem})
}

// freeAll unmaps several regions, with one munmap per run of adjacent
// mappings: each munmap flushes the other processors' TLBs, and spares
// made one after the other usually sit side by side.
//
// The regions' addresses are forgotten before they are unmapped: once
// unmapped, the spare-mapping goroutine's next mmap may return the same
// address for a new region, whose entry must not be the one deleted.
func (m *memfdMapper) freeAll(mems [][]byte) error {
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
	sorted := slices.Clone(mems)
	slices.SortFunc(sorted, func(a, b []byte) int { return cmp.Compare(addr(a), addr(b)) })
	slots := make([]int, 0, len(sorted))
	m.mu.Lock()
	for _, b := range sorted {
		if s, ok := m.used[addr(b)]; ok {
			delete(m.used, addr(b))
			slots = append(slots, s)
		}
	}
	m.mu.Unlock()
	var err error
	for i := 0; i < len(sorted); {
		j, size := i+1, len(sorted[i])
		for j < len(sorted) && addr(sorted[j]) == addr(sorted[j-1])+uintptr(len(sorted[j-1])) {
			size += len(sorted[j])
			j++
		}
		// The run is one stretch of address space (adjacent mappings).
		if e := unix.MunmapPtr(unsafe.Pointer(&sorted[i][0]), uintptr(size)); e != nil && err == nil {
			err = e
		}
		i = j
	}
	// The slots are offered again only once nothing maps them.
	m.mu.Lock()
	for _, s := range slots {
		m.isFree[s] = true
	}
	m.mu.Unlock()
	return err
}

func (m *memfdMapper) capacity() int { return len(m.isFree) }

func (m *memfdMapper) close() error {
	err := unix.Munmap(m.rw)
	if e := unix.Close(m.fd); err == nil {
		err = e
	}
	return err
}
