// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/par"
)

// lazySnapshot is what the Index of a compact snapshot (version 11) keeps
// to decode its chunks when they are first needed. Loading such a
// snapshot checks it whole (checksum, counts, the tables' bitmap, chains) but decodes
// only its table of contents: its records and names are zero until their
// chunk is decoded, by the first lookup that reaches one of its symbols
// (Index.at, Index.name) or by something that reads every symbol
// (Index.DecodeAll). Each chunk is decoded once, under its own lock; a
// chunk's done flag is set after its records and names are written, and
// read before them, so readers on any goroutine see them whole.
type lazySnapshot struct {
	name   string
	file   []byte // the snapshot: the frames are decoded from it
	names  []byte // ix.data's bytes
	chunks []snapChunk
	// first[i>>lazyBlockShift] is the chunk that holds the first symbol
	// of i's block: i's chunk is that one or one of the next.
	first []uint32
	done  []atomic.Bool
	mu    []sync.Mutex
	errs  []error // a chunk's, written before its done flag
	// left counts the chunks not yet decoded; all is set once none is
	// (after the last one's done flag), and spares a lookup the chunk
	// checks from then on.
	left atomic.Int64
	all  atomic.Bool
	// mapped: names is in ix's anonymous mapping (lazyArrays), whose
	// pages may be advised.
	mapped bool
	// spare holds the memory of chunks, first, done, mu, errs and the
	// packed tables' ranks: ix.arena's (see Arena.takeSpare) to have
	// back when ix gives the Arena back.
	spare *lazySpare
}

const lazyBlockShift = 6

// loadLazy makes ix, whose objects readTOC read, the index of the compact
// snapshot file with its chunks ch (nsym symbols, nname bytes of names):
// its tables t read in place (packedTables), its chains read from its
// links, and its chunks decoded when first needed.
func (ix *Index) loadLazy(name string, file []byte, t snapTables, ch []snapChunk, nsym int, nname uint32, sp *lazySpare) error {
	links := file[t.linksAt:t.end]
	// The chains: forward, inside the symbol's object (so that no walk
	// leaves it or loops), one link per symbol at most. A lookup checks
	// each slot it takes (find); nothing else needs checking.
	names := ix.lazyArrays(nsym, int(nname))
	sp.rank = reuse(sp.rank, packedRanks(t))
	ix.packed = newPackedTables(file, t, sp.rank)
	loaded := false
	defer func() {
		if loaded {
			return
		}
		// A forged file: nothing keeps the arrays.
		if ix.anon != nil {
			unmapFile(ix.anon)
		}
		if ix.arena != nil {
			ix.arena.give()
		}
		ix.anon, ix.arena, ix.syms, ix.next, ix.packed, ix.data = nil, nil, nil, nil, nil, ""
	}()
	o := 0
	prev := uint32(0)
	for k := range t.nlink {
		i, nx := uint32(unpackBits(links, 2*k, t.w)), uint32(unpackBits(links, 2*k+1, t.w))
		if uint64(i) >= uint64(nsym) || k > 0 && i <= prev {
			return snapErr(name, "chain link %d: symbol %d out of order", k, i)
		}
		for ix.objs[o].end <= i {
			o++
		}
		if !chainOK(i, nx, ix.objs[o].end) {
			return snapErr(name, "symbol %d: chain to %d leaves object %q", i, nx, ix.objs[o].name)
		}
		ix.next[i] = nx
		prev = i
	}
	sp.first = reuse(sp.first, (nsym+1<<lazyBlockShift-1)>>lazyBlockShift)
	sp.done, sp.mu, sp.errs = reuse(sp.done, len(ch)), reuse(sp.mu, len(ch)), reuse(sp.errs, len(ch))
	l := &lazySnapshot{name: name, file: file, names: names, chunks: ch, mapped: ix.anon != nil || ix.arena != nil,
		first: sp.first, done: sp.done, mu: sp.mu, errs: sp.errs, spare: sp}
	k := uint32(0)
	for b := range l.first {
		for ch[k].s1 <= uint32(b)<<lazyBlockShift {
			k++
		}
		l.first[b] = k
	}
	l.left.Store(int64(len(ch)))
	ix.lazy = l
	loaded = true
	ix.own(ix.mapping) // the cleanup unmaps ix.anon (open adds the file's mapping)
	return nil
}

// lazyArrays makes ix's records (ix.syms), chains (ix.next) and names
// (ix.data, returned) for a lazy index of nsym symbols and nname bytes of
// names, in one anonymous mapping where the system has one: ix.arena's
// memory if it is free (ix.arena is nil otherwise), else a fresh mapping
// (ix.anon). A lookup then faults in only the pages of the chunks it
// decodes, and Close (or the cleanup, see own) returns them at once. A
// fleet opens a thousand snapshots: 6 MB of heap each, allocated and
// zeroed whole, was most of its time and memory.
//
// The chains are zero. The records and names are not, in an Arena's
// memory: a chunk's are written whole (decodeColumns) before anything
// reads them (at).
func (ix *Index) lazyArrays(nsym, nname int) []byte {
	nextAt := nsym * int(unsafe.Sizeof(sym{}))
	namesAt := nextAt + 4*nsym
	size := max(namesAt+nname, 1) + 2*hugepage.Size
	var m []byte
	if ix.arena != nil {
		if m = ix.arena.take(size); m == nil {
			ix.arena = nil // in use, or not mappable here
		}
	}
	if m == nil {
		if a, err := mapAnon(size); err == nil {
			ix.anon, m = a, a
		}
	}
	if m != nil {
		// On huge pages from a huge page boundary: a fault here costs
		// microseconds under virtualization, and a patch's symbols are
		// spread over every page of the arrays (checking 300 snapshots
		// took 3.2 s on 4 KiB pages, 1.8 s on huge ones, for a
		// 20,000-relocation patch; 1.0 and 0.8 s for a small one). The
		// names follow when many lookups are to come (Expect).
		base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		m = m[int((base+hugepage.Size-1)&^(hugepage.Size-1)-base):]
		hugepage.AdviseWithin(m[:namesAt]) // the names when many lookups are to come (Expect)
		ix.syms = unsafe.Slice((*sym)(unsafe.Pointer(unsafe.SliceData(m))), nsym)
		ix.next = unsafe.Slice((*uint32)(unsafe.Pointer(&m[nextAt])), nsym)
		if ix.arena != nil {
			clear(ix.next) // (fresh mappings are zero)
		}
		// (The names' capacity runs to the mapping's end, past the huge
		// page they end in: Expect advises that page too.)
		names := m[namesAt : namesAt+nname]
		ix.data = unsafe.String(unsafe.SliceData(names), nname)
		return names
	}
	ix.syms, ix.next = make([]sym, nsym), make([]uint32, nsym)
	names := make([]byte, nname)
	ix.data = unsafe.String(unsafe.SliceData(names), nname)
	return names
}

// ensure decodes the chunk holding symbol i unless it is decoded.
func (l *lazySnapshot) ensure(ix *Index, i uint32) {
	k := l.first[i>>lazyBlockShift]
	for l.chunks[k].s1 <= i {
		k++
	}
	if !l.done[k].Load() {
		l.decode(ix, k)
	}
}

// decode decodes chunk k into ix's records and names, once. A chunk that
// does not decode (a forged file: the checksum held) keeps zero records,
// which no lookup matches, and its error (err).
func (l *lazySnapshot) decode(ix *Index, k uint32) {
	l.mu[k].Lock()
	defer l.mu[k].Unlock()
	if l.done[k].Load() {
		return
	}
	c := &l.chunks[k]
	syms := ix.syms[c.s0:c.s1]
	if err := l.fill(c, syms); err != nil {
		clear(syms)
		l.errs[k] = err
	} else {
		// symHasNext, from the chains (see sym).
		for j := range syms {
			if ix.next[c.s0+uint32(j)] != 0 {
				syms[j].flags = symHasNext
			}
		}
	}
	l.done[k].Store(true)
	left := l.left.Add(-1)
	if left == 0 {
		l.all.Store(true)
	}
}

// hugeNamesShare: a lazy index told to expect at least one lookup per
// this many chunks (Expect) puts its names on huge pages. A small
// patch's lookups touch a few dozen chunks, two pages of names each: on huge
// pages they would hold 2 MiB each; a large patch's touch most chunks,
// and 4 KiB faults then cost more than the memory.
const hugeNamesShare = 8

// Expect tells the index that about n lookups follow (a patch's
// relocations and functions, which klp.Module.Resolve gives it). The
// index of a compact snapshot readies itself for many: its names go on
// huge pages before lookups fault them in page by page. Other indexes
// ignore it. It must be called before the lookups, not during them.
func (ix *Index) Expect(n int) {
	if l := ix.lazy; l != nil && l.mapped && !l.all.Load() && n >= len(l.chunks)/hugeNamesShare {
		hugepage.AdviseWithin(l.names)
	}
}

// fill decodes chunk c's names and columns, and its records into syms.
func (l *lazySnapshot) fill(c *snapChunk, syms []sym) error {
	// A chunk's columns are decoded on the stack. A chunk of 8 KiB of
	// names has 2.6 to 3.9 KB of them in the corpus's kernels; a larger
	// buffer would cost its zeroing on every chunk, and the rare chunk of
	// shorter names goes to the heap.
	var buf [4096]byte
	var cols []byte
	if c.cols.n <= uint64(len(buf)) {
		cols = buf[:c.cols.n]
	} else {
		cols = make([]byte, c.cols.n)
	}
	if err := decodeFrame(l.file, c.cols, cols); err != nil {
		return snapErr(l.name, "chunk %d's columns: %v", c.k, err)
	}
	if err := decodeFrame(l.file, c.names, l.names[c.n0:c.n1]); err != nil {
		return snapErr(l.name, "chunk %d's names: %v", c.k, err)
	}
	_, err := decodeColumns(l.name, c, cols, syms)
	return err
}

// err is the first error of the chunks decoded so far.
func (l *lazySnapshot) err() error {
	for k := range l.errs {
		if l.done[k].Load() && l.errs[k] != nil {
			return l.errs[k]
		}
	}
	return nil
}

// at is symbol i's record, its chunk decoded first where it has not been.
func (ix *Index) at(i uint32) *sym {
	if l := ix.lazy; l != nil && !l.all.Load() {
		l.ensure(ix, i)
	}
	return &ix.syms[i]
}

// DecodeAll decodes now, on every core, whatever of the index is still
// to be decoded, and returns the first error of a part that does not
// decode (one that wraps ErrMalformed: a snapshot forged with a right
// checksum). Only the index of a compact snapshot has such parts: loading
// one checks it whole but decodes its symbols' records and names, chunk
// by chunk, when a lookup first reaches them. DecodeAll does the rest at
// once, as everything that reads every symbol does first (Symbols, Addr,
// the nearest names of a miss, writing a snapshot). For other indexes it
// does nothing and returns nil.
func (ix *Index) DecodeAll() error {
	l := ix.lazy
	if l == nil {
		return nil
	}
	if l.mapped && !l.all.Load() {
		hugepage.AdviseWithin(l.names) // every chunk's (see lazyArrays)
	}
	par.For(runtime.GOMAXPROCS(0), len(l.chunks), func(k int) {
		if !l.done[k].Load() {
			l.decode(ix, uint32(k))
		}
	})
	return l.err()
}

// decodeErr is the first error of a chunk decoded so far, or nil.
func (ix *Index) decodeErr() error {
	if ix.lazy == nil {
		return nil
	}
	return ix.lazy.err()
}

// closeLazy releases what the lazy decoding kept.
func (ix *Index) closeLazy() {
	ix.lazy = nil
}
