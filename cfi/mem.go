package cfi

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoSpare = errors.New("no spare mapping")

// mapper allocates, write-protects and frees shadow memory. The real one
// maps anonymous pages; tests substitute one that fails.
type mapper interface {
	mapRW(n int) ([]byte, error)
	protectRO(b []byte) error
	unmap(b []byte) error
}

type mmapper struct{}

func (mmapper) mapRW(n int) ([]byte, error) {
	// MAP_POPULATE: the whole shadow is written at once, so one call that
	// faults every page in beats a fault per page.
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_POPULATE)
}

func (mmapper) protectRO(b []byte) error { return unix.Mprotect(b, unix.PROT_READ) }

func (mmapper) unmap(b []byte) error { return unix.Munmap(b) }

// spares keeps a few writable mappings ready, made by a goroutine of its
// own, so that a writer building a shadow rarely makes the mmap call (and
// its page faults) itself. Spares are fresh mappings, never recycled
// shadows: a reclaimed shadow is always unmapped.
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
		mem, err := p.m.mapRW(p.size)
		if err != nil {
			// Out of memory: writers map (and fail) on their own; try
			// again when one takes a spare... or stop.
			<-p.stop
			return
		}
		select {
		case p.ch <- mem:
		case <-p.stop:
			_ = p.m.unmap(mem)
			return
		}
	}
}

// get returns a spare, or maps one now when none is ready.
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

// close stops the filler and unmaps the spares.
func (p *spares) close() {
	close(p.stop)
	<-p.done
	for {
		select {
		case mem := <-p.ch:
			_ = p.m.unmap(mem)
		default:
			return
		}
	}
}
