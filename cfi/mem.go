// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"errors"
	"time"
)

var errNoSpare = errors.New("no spare mapping")

// errNoSlot: a mapper with a fixed number of regions has none free. It
// passes: regions come back as shadows are reclaimed.
var errNoSlot = errors.New("cfi: every shadow slot is in use")

// spareRetry is how long the filler first waits before mapping again
// after errNoSlot; the wait doubles up to spareRetryMax while slots stay
// taken (readers may hold old shadows for long), so that an idle Set is
// not woken a thousand times a second.
const (
	spareRetry    = time.Millisecond
	spareRetryMax = 64 * time.Millisecond
)

// mapper provides shadow memory. A region is seen by readers only
// through a read-only mapping (alloc), and by the writer through a
// writable view of the same memory (writable), in which it builds the
// shadow; the read-only mapping is unmapped when the shadow is reclaimed
// (free). Tests substitute one that fails.
type mapper interface {
	alloc(n, k int) ([][]byte, error)    // read-only mappings of up to k fresh n-byte regions
	writable(mem []byte) ([]byte, error) // the writer's view of the region mapped at mem
	free(mem []byte) error               // unmap it
	freeAll(mems [][]byte) error         // unmap them all
	capacity() int                       // regions it can hold at once
	close() error
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

// spareBatch regions are mapped by one mmap.
const spareBatch = 8

func (p *spares) fill() {
	defer close(p.done)
	wait := spareRetry
	for {
		mems, err := p.m.alloc(p.size, spareBatch)
		if errors.Is(err, errNoSlot) {
			// Writers that found no spare mapped batches of their own
			// and hold every slot for now: wait for reclaim, rather
			// than leave every later update to map on the writer's path.
			select {
			case <-time.After(wait):
				wait = min(2*wait, spareRetryMax)
				continue
			case <-p.stop:
				return
			}
		}
		wait = spareRetry
		if err != nil {
			// Out of memory: writers map (and fail) on their own.
			<-p.stop
			return
		}
		for i, mem := range mems {
			select {
			case p.ch <- mem:
			case <-p.stop:
				_ = p.m.freeAll(mems[i:])
				return
			}
		}
	}
}

// put offers regions a writer mapped beyond its need; they are freed
// when no spare has room.
func (p *spares) put(mems [][]byte) {
	for i, mem := range mems {
		select {
		case p.ch <- mem:
		default:
			_ = p.m.freeAll(mems[i:])
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
