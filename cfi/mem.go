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

var errNoSpare = errors.New("no spare mapping")

// mapper provides shadow memory. A region is seen by readers only
// through a read-only mapping (alloc), and by the writer through a
// writable view of the same memory (writable), in which it builds the
// shadow; the read-only mapping is unmapped when the shadow is reclaimed
// (free). Tests substitute one that fails.
type mapper interface {
	alloc(n int) ([]byte, error)         // a read-only mapping of a fresh n-byte region
	writable(mem []byte) ([]byte, error) // the writer's view of the region mapped at mem
	free(mem []byte) error               // unmap it
	freeAll(mems [][]byte) error         // unmap them all
	close() error
}

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
	mu    sync.Mutex
	fd    int
	slot  int    // bytes per slot
	rw    []byte // the writer's mapping of the whole file
	free_ []int  // slots not mapped
	used  map[uintptr]int
}

func newMemfdMapper(slot, slots int) (*memfdMapper, error) {
	fd, err := unix.MemfdCreate("klpresolve-cfi-shadow", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	size := int64(slot) * int64(slots)
	if err := unix.Ftruncate(fd, size); err != nil {
		unix.Close(fd)
		return nil, err
	}
	rw, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	m := &memfdMapper{fd: fd, slot: slot, rw: rw, used: map[uintptr]int{}}
	for i := slots - 1; i >= 0; i-- {
		m.free_ = append(m.free_, i)
	}
	return m, nil
}

var errNoSlot = errors.New("cfi: every shadow slot is in use")

func (m *memfdMapper) alloc(n int) ([]byte, error) {
	if n != m.slot {
		return nil, fmt.Errorf("cfi: region of %d bytes, slots are %d", n, m.slot)
	}
	m.mu.Lock()
	k := len(m.free_)
	if k == 0 {
		m.mu.Unlock()
		return nil, errNoSlot
	}
	s := m.free_[k-1]
	m.free_ = m.free_[:k-1]
	m.mu.Unlock()
	off := int64(s) * int64(m.slot)
	// Allocate the slot's pages before mapping them, so that the
	// read-only mapping and the writer's view share them from the start.
	err := unix.Fallocate(m.fd, 0, off, int64(m.slot))
	var mem []byte
	if err == nil {
		// MmapPtr/MunmapPtr, not Mmap/Munmap: runs of adjacent mappings
		// are unmapped in one call (freeAll), which x/sys's per-slice
		// bookkeeping of Mmap would not follow.
		var p unsafe.Pointer
		p, err = unix.MmapPtr(m.fd, off, nil, uintptr(m.slot), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err == nil {
			mem = unsafe.Slice((*byte)(p), m.slot)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.free_ = append(m.free_, s)
		return nil, err
	}
	m.used[uintptr(unsafe.Pointer(&mem[0]))] = s
	return mem, nil
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
	p := uintptr(unsafe.Pointer(&mem[0]))
	err := unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(len(mem)))
	m.mu.Lock()
	if s, ok := m.used[p]; ok {
		delete(m.used, p)
		m.free_ = append(m.free_, s)
	}
	m.mu.Unlock()
	return err
}

// freeAll unmaps several regions, with one munmap per run of adjacent
// mappings: each munmap flushes the other processors' TLBs, and spares
// made one after the other usually sit side by side.
func (m *memfdMapper) freeAll(mems [][]byte) error {
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
	sorted := slices.Clone(mems)
	slices.SortFunc(sorted, func(a, b []byte) int { return cmp.Compare(addr(a), addr(b)) })
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
	m.mu.Lock()
	for _, b := range sorted {
		if s, ok := m.used[addr(b)]; ok {
			delete(m.used, addr(b))
			m.free_ = append(m.free_, s)
		}
	}
	m.mu.Unlock()
	return err
}

func (m *memfdMapper) close() error {
	err := unix.Munmap(m.rw)
	if e := unix.Close(m.fd); err == nil {
		err = e
	}
	return err
}

// spares keeps a few read-only mappings of fresh regions ready, made by a
// goroutine of its own, so that a writer building a shadow rarely maps
// one itself. A reclaimed shadow's mapping is never reused: it is
// unmapped, and a later spare is a new mapping.
type spares struct {
	m    mapper
	size int
	ch   chan []byte
	stop chan struct{}
	done chan struct{}
}

func newSpares(m mapper, size, n int) *spares {
	p := &spares{m: m, size: size, ch: make(chan []byte, n), stop: make(chan struct{}), done: make(chan struct{})}
	go p.fill()
	return p
}

func (p *spares) fill() {
	defer close(p.done)
	for {
		mem, err := p.m.alloc(p.size)
		if err != nil {
			// Out of memory: writers map (and fail) on their own.
			<-p.stop
			return
		}
		select {
		case p.ch <- mem:
		case <-p.stop:
			_ = p.m.free(mem)
			return
		}
	}
}

// get returns a spare, or errNoSpare when none is ready.
func (p *spares) get() ([]byte, error) {
	if p != nil {
		select {
		case mem := <-p.ch:
			return mem, nil
		default:
		}
	}
	return nil, errNoSpare
}

// close stops the filler and frees the spares.
func (p *spares) close() {
	close(p.stop)
	<-p.done
	for {
		select {
		case mem := <-p.ch:
			_ = p.m.free(mem)
		default:
			return
		}
	}
}
