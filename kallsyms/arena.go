// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Arena is memory that the index of a compact snapshot decodes into (its
// records, chains and names) and gives back when it is closed, for a
// loop that opens many kernels' snapshots one after another, such as a
// fleet check: the memory is mapped once, and its pages, faulted in and
// zeroed by the system for the first index, are reused as they are by
// the next ones. Set it in Options.Arena.
//
// One index at a time uses an Arena: an Open while another index holds
// it maps fresh memory, as without one, and so does an Open on a system
// without anonymous mappings. An index gives the Arena back at Close, or
// once it is unreachable. Indexes of other inputs (a text, a raw
// snapshot) do not use it.
//
// The zero Arena is ready to use. Its memory is unmapped by Close, or
// once the Arena is unreachable. It is safe for concurrent use.
type Arena struct {
	mu  sync.Mutex
	mem *arenaMem
	// spare: the bookkeeping of the last index that gave the Arena
	// back, Go memory the next one reuses (nil while an index has it).
	spare  *lazySpare
	busy   bool
	closed bool
}

// arenaMem is an Arena's mapping, apart from the Arena so that its
// cleanup can hold it without holding the Arena.
type arenaMem struct {
	b       []byte
	cleanup runtime.Cleanup
}

// arenaSlack is how much more than asked an Arena maps when it grows, so
// that a fleet of kernels of slightly different sizes maps once or twice.
const arenaSlack = 8 // an eighth

// take returns the Arena's memory, at least n bytes, marked in use; nil
// when another index uses it, it is closed, or it cannot be mapped.
func (a *Arena) take(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy || a.closed {
		return nil
	}
	if a.mem == nil || len(a.mem.b) < n {
		a.release()
		b, err := mapAnon(n + n/arenaSlack)
		if err != nil {
			return nil
		}
		m := &arenaMem{b: b}
		m.cleanup = runtime.AddCleanup(a, unmapFile, b)
		a.mem = m
	}
	a.busy = true
	return a.mem.b
}

// takeSpare returns the Arena's spare bookkeeping memory, or fresh
// memory if it has none (another index has it, or a is nil).
func (a *Arena) takeSpare() *lazySpare {
	if a == nil {
		return new(lazySpare)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.spare
	a.spare = nil
	if s == nil {
		s = new(lazySpare)
	}
	return s
}

// putSpare gives s back to a (nothing for a nil a), for the next index:
// what s held is no longer used.
func (a *Arena) putSpare(s *lazySpare) {
	if a == nil || s == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.spare = s
}

// lazySpare is the Go memory of a lazy index's bookkeeping (a few
// hundred bytes a chunk): kept by an Arena with its mapping, so that a
// fleet of snapshots does not allocate it, and collect it, for each.
type lazySpare struct {
	frames []snapFrame
	chunks []snapChunk
	rank   []uint32
	first  []uint32
	done   []atomic.Bool
	mu     []sync.Mutex
	errs   []error
}

// reuse returns s's memory as n zero elements, or fresh memory if it
// has too little.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// give marks the Arena's memory free again (Close unmaps it then, if it
// was closed meanwhile).
func (a *Arena) give() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.busy = false
	if a.closed {
		a.release()
	}
}

// release unmaps the Arena's memory (a.mu held, nothing using it).
func (a *Arena) release() {
	if a.mem != nil {
		a.mem.cleanup.Stop()
		unmapFile(a.mem.b)
		a.mem = nil
	}
}

// Close unmaps the Arena's memory, or, while an index uses it, has that
// index's Close unmap it. An Open with a closed Arena maps fresh memory.
func (a *Arena) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if !a.busy {
		a.release()
	}
	return nil
}
