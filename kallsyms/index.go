// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/par"
)

// Vmlinux is the name of the kernel image's object.
const Vmlinux = "vmlinux"

// Index is an immutable symbol index: one hash table per object. It is safe
// for concurrent use by any number of goroutines.
type Index struct {
	source string
	data   string   // the input; names point into it
	syms   []sym    // grouped by object, each group in kallsyms order
	next   []uint32 // same-name chains: index+1 of the next symbol, 0 at the end
	slots  []slot   // every object's hash table, one after the other
	// packed: the tables of a compact snapshot, read in place, where
	// slots is nil (see Index.slot).
	packed *packedTables
	objs   []object // objs[0] is vmlinux
	byName map[string]int
	lto    bool
	// image: where an index read from a kernel image came from; nil
	// otherwise.
	image *ImageInfo
	// slide: what Options.Slide or SlideTo added to vmlinux's addresses.
	slide uint64
	// lazy: a compact snapshot's chunks, decoded when first needed (at);
	// nil for any other index.
	lazy *lazySnapshot
	// mapping: data (and a raw snapshot's arrays) are in this read-only
	// mapping of a raw snapshot or text file (Options.MapText), unmapped
	// by a cleanup once the Index is unreachable, so a name handed to a
	// caller is a copy (nameOut).
	mapping []byte
	// anon: syms or the tables (or both) are in this anonymous mapping (a
	// streamed or mapped text's, see newStream), unmapped by a cleanup
	// once the Index is unreachable. Nothing in it is ever handed out.
	anon []byte
	// arena: syms, next and data are in this Arena's memory (a compact
	// snapshot's lazy index, see lazyArrays), given back by Close or the
	// cleanup.
	arena *Arena
	// text: data is in this anonymous mapping, a large streamed input's
	// buffer (see readAndParse), unmapped with the others, so a name
	// handed to a caller is a copy (nameOut), as with mapping.
	text []byte
	// textBusy: closed once nothing else may touch text (see
	// parser.unmapBuffer); nil if nothing may.
	textBusy <-chan struct{}
	// unmap: the cleanup that unmaps mapping, anon and text (see Close); closed:
	// Close emptied the index.
	unmap  runtime.Cleanup
	closed bool

	// scratch: bytes held with the tables that no lookup uses (fillSplit's
	// scratch array, allocated with them; see buildTables).
	scratch int

	addrOnce sync.Once
	byAddr   []uint32 // sym indexes sorted by address (built on first use)
	// variants: the symbols whose names carry a compiler suffix, by base
	// name, each as index<<32 | object (built on the first miss, see
	// near).
	varOnce  sync.Once
	variants map[string][]uint64
	// keyObjects: each object's keys' hashes (its slots'), hash<<32 |
	// object, sorted (built with variants): which objects a missed name
	// is in, without a probe of every object's table.
	keyObjects []uint64
	keyStart   []uint32 // by the hash's top bits: where they start in keyObjects
	// exports: vmlinux's __ksymtab_ entries are listed (ListsExports);
	// [gplLo, gplHi): the GPL-only exports' table (GPLOnly).
	exportsOnce  sync.Once
	exports      bool
	gplLo, gplHi uint64
	// kernel: what the kernel's own kallsyms holds (KernelKallsyms).
	kernelOnce sync.Once
	kernel     KernelKallsyms
}

// sym is one line of the input: 16 bytes, the name an offset into data.
type sym struct {
	addr  uint64
	off   uint32
	nlen  uint16
	typ   byte
	flags byte // symHasNext; derived from next[], set when the tables are built or loaded
}

// symHasNext: the symbol's same-name chain goes on (next[i] != 0), so a
// lookup of a unique name never has to read next[].
const symHasNext = 1

type object struct {
	name       string
	start, end uint32 // syms[start:end]
	pseudo     bool
	lo, hi     uint64
	off, size  uint32 // its hash table: slots[off : off+size]
}

// slot maps a name hash to the first symbol of that name (index+1; 0 is
// an empty slot); further symbols of the same name follow next[].
type slot struct{ hash, idx uint32 }

// Symbol is one symbol of the index.
type Symbol struct {
	Name    string
	Object  string // "vmlinux" or the module name
	Address uint64
	Type    byte // the nm-style type letter
	Pos     int  // 1-based position among the same-named symbols of Object
}

// ObjectInfo describes one object of the index.
type ObjectInfo struct {
	Name    string
	Symbols int
	// Low and High are the lowest and highest symbol address (absolute
	// 'A' symbols left out when the object has others).
	Low, High uint64
	// Pseudo marks the entries the kernel lists after the modules
	// ([__builtin__ftrace], [bpf], [__builtin__kprobes]): they are not
	// modules, and livepatch lookups never match them.
	Pseudo bool
}

func isPseudo(name string) bool {
	return name == "bpf" || strings.HasPrefix(name, "__builtin__")
}

func (ix *Index) name(i uint32) string {
	s := ix.at(i)
	return ix.data[s.off : s.off+uint32(s.nlen)]
}

// nameOut is sym i's name for a caller to keep: a copy where the names
// do not last (namesPass).
func (ix *Index) nameOut(i uint32) string {
	if ix.namesPass() {
		return strings.Clone(ix.name(i))
	}
	return ix.name(i)
}

// namesPass reports whether ix's names are in memory that goes away with
// the Index (a mapping) or that the next index overwrites (an Arena's):
// then a name handed to a caller is a copy (nameOut, ownNames).
func (ix *Index) namesPass() bool {
	return ix.mapping != nil || ix.text != nil || ix.anon != nil && ix.lazy != nil || ix.arena != nil
}

// ownNames makes the names of syms, which may be ix's, the caller's to
// keep (as nameOut does): where they do not last, all are copied, in one
// allocation.
func (ix *Index) ownNames(syms []Symbol) {
	if ix.namesPass() {
		ownStrings(syms, func(s *Symbol) *string { return &s.Name })
	}
}

// ownStrings copies the strings field picks in xs, which may point into
// memory that does not last, into one allocation of their own.
func ownStrings[T any](xs []T, field func(*T) *string) {
	n := 0
	for i := range xs {
		n += len(*field(&xs[i]))
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for i := range xs {
		b.WriteString(*field(&xs[i]))
	}
	all := b.String()
	for i := range xs {
		p := field(&xs[i])
		*p, all = all[:len(*p)], all[len(*p):]
	}
}

func (ix *Index) symbol(i uint32, pos int) Symbol {
	s := ix.symbolIn(i, ix.objectOf(i), pos)
	s.Name = ix.nameOut(i)
	return s
}

// symbolIn is sym i of object j, its name ix's (see ownNames).
func (ix *Index) symbolIn(i uint32, j int, pos int) Symbol {
	s := ix.at(i)
	return Symbol{Name: ix.name(i), Object: ix.objs[j].name, Address: s.addr, Type: s.typ, Pos: pos}
}

// own makes mapping (a file's, see Index.mapping; nil for none) ix's,
// beside the anonymous mappings it may have been handed (Index.anon by
// keepStream, Index.text by stream): one cleanup unmaps them all once ix
// is unreachable, unless Close did first.
func (ix *Index) own(mapping []byte) {
	ix.mapping = mapping
	ix.unmap.Stop() // (one cleanup, for every mapping: own may run twice)
	if ix.mapping != nil || ix.anon != nil || ix.text != nil || ix.arena != nil {
		m := mappings{file: ix.mapping, anon: ix.anon, text: ix.text, textBusy: ix.textBusy, arena: ix.arena}
		if ix.arena != nil && ix.lazy != nil {
			m.spare = ix.lazy.spare
		}
		ix.unmap = runtime.AddCleanup(ix, unmapAll, m)
	}
}

// mappings are what an Index's cleanup unmaps, and the Arena it gives
// back.
type mappings struct {
	file, anon, text []byte
	textBusy         <-chan struct{}
	arena            *Arena
	spare            *lazySpare // given back to arena
}

func unmapAll(m mappings) {
	if m.textBusy != nil && m.text != nil {
		<-m.textBusy
	}
	for _, b := range [][]byte{m.file, m.anon, m.text} {
		if b != nil {
			unmapFile(b)
		}
	}
	if m.arena != nil {
		m.arena.putSpare(m.spare)
		m.arena.give()
	}
}

// objectOf returns the object holding sym i.
func (ix *Index) objectOf(i uint32) int {
	o, _ := slices.BinarySearchFunc(ix.objs, i, func(o object, i uint32) int {
		switch {
		case o.end <= i:
			return -1
		case o.start > i:
			return 1
		}
		return 0
	})
	return o
}

// Close releases at once the memory the Index maps (a raw snapshot file,
// the arrays of an input read as a stream or of a large compact snapshot)
// instead of when the Index
// is collected, and empties the Index: afterwards it has no objects and
// no symbols, a lookup fails with an error that wraps ErrClosed, and
// writing a snapshot of it is ErrClosed. What the Index returned before
// stays valid (names and objects handed out are never in a mapping).
//
// A mapping is not Go heap: the collector does not run sooner for it, so a
// program that opens index after index (klpresolve check, on a folder of
// snapshots) holds every mapping until the next collection: 6.4 GB
// for a thousand 6.5 MB snapshots. Close must not be called while other
// goroutines use the Index; calling it again does nothing. An Index read
// into memory needs no Close (the collector frees it), but may be closed.
func (ix *Index) Close() error {
	if ix.closed {
		return nil
	}
	ix.unmap.Stop()
	if ix.arena != nil && ix.lazy != nil {
		ix.arena.putSpare(ix.lazy.spare)
	}
	ix.closeLazy()
	if ix.mapping != nil {
		unmapFile(ix.mapping)
	}
	if ix.anon != nil {
		unmapFile(ix.anon)
	}
	if ix.arena != nil {
		ix.arena.give()
		ix.arena = nil
	}
	if ix.text != nil {
		if ix.textBusy != nil {
			<-ix.textBusy
		}
		unmapFile(ix.text)
	}
	ix.data, ix.syms, ix.next, ix.slots, ix.packed, ix.objs = "", nil, nil, nil, nil, nil
	ix.byName, ix.mapping, ix.anon, ix.text, ix.textBusy, ix.byAddr = map[string]int{}, nil, nil, nil, nil, nil
	ix.scratch, ix.closed = 0, true
	ix.addrOnce.Do(func() {}) // Addr finds nothing
	ix.varOnce.Do(func() {})
	ix.variants, ix.keyObjects, ix.keyStart = nil, nil, nil
	return nil
}

// Source names the input the index was built from.
func (ix *Index) Source() string { return ix.source }

// Len is the number of symbols.
func (ix *Index) Len() int { return len(ix.syms) }

// LTO reports whether the index matches names with ".llvm.<digits>"
// suffixes stripped.
func (ix *Index) LTO() bool { return ix.lto }

// HasObject reports whether object (a module name, or "vmlinux") is in the
// index as a real object (not a pseudo-module).
func (ix *Index) HasObject(object string) bool {
	i, ok := ix.byName[object]
	return ok && !ix.objs[i].pseudo
}

// ListsData reports whether the input lists vmlinux's data symbols (types
// d, D, b, B, r, R make up at least 1% of its symbols). A System.map and
// a CONFIG_KALLSYMS_ALL kallsyms do (about half their symbols); a
// kallsyms built without it lists code only (1 data symbol in 50,336 on
// Debian's arm64 6.1, 74 in 122,152 on the corpus's 6.18 host), so data
// a module uses cannot resolve against it. O(1) where vmlinux lists
// jiffies, the data every kernel has; O(vmlinux's symbols) otherwise.
func (ix *Index) ListsData() bool {
	if len(ix.objs) == 0 {
		return false
	}
	if _, ok := ix.Find(Vmlinux, "jiffies", 1); ok {
		return true
	}
	_ = ix.DecodeAll() // a chunk that does not decode has no data symbols
	o := &ix.objs[0]
	data := 0
	for _, s := range ix.syms[o.start:o.end] {
		switch s.typ | 0x20 {
		case 'd', 'b', 'r':
			data++
		}
	}
	return data > 0 && data*100 >= int(o.end-o.start)
}

// Arch names the architecture the kernel was built for ("x86_64",
// "arm64", "arm", "s390", "ppc64"), from symbols only that architecture's entry code
// defines (the first found is evidence), or "" when vmlinux lists none of
// them (another architecture, or a list without vmlinux). Code symbols
// only: a kallsyms without CONFIG_KALLSYMS_ALL has them too.
//
// The symbols are the one table of architecture facts' (each
// architecture's head.S and entry code).
func (ix *Index) Arch() (arch, evidence string) {
	elfobj.EntrySymbols(func(a string, names []string) bool {
		for _, n := range names {
			if _, ok := ix.Find(Vmlinux, n, 1); ok {
				arch, evidence = a, n
				return false
			}
		}
		return true
	})
	return arch, evidence
}

// Objects lists the objects: vmlinux first, then the modules in input
// order (newest loaded first in /proc/kallsyms), then the pseudo-modules.
func (ix *Index) Objects() []ObjectInfo {
	out := make([]ObjectInfo, len(ix.objs))
	for i, o := range ix.objs {
		out[i] = ObjectInfo{Name: o.name, Symbols: int(o.end - o.start), Low: o.lo, High: o.hi, Pseudo: o.pseudo}
	}
	return out
}

// Symbols calls fn for each symbol of object in kallsyms order, with its
// 1-based position among the same-named symbols left as 0 (use Lookup for
// positions). It stops when fn returns false.
func (ix *Index) Symbols(object string, fn func(Symbol) bool) {
	oi, ok := ix.byName[object]
	if !ok {
		return
	}
	o := &ix.objs[oi]
	for i := o.start; i < o.end; i++ {
		s := ix.at(i)
		if !fn(Symbol{Name: ix.nameOut(i), Object: o.name, Address: s.addr, Type: s.typ}) {
			return
		}
	}
}

// build merges parsed chunks into an index.
//
// block, when not nil, is zeroed memory to lay the tables out in (see
// buildTables), used if it is large enough.
func build(source string, buf []byte, chunks []*chunk, total int, lto bool, block []slot) (*Index, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%s: %w", source, ErrEmpty)
	}
	// Objects in order of first appearance; vmlinux first. There are at
	// most as many as runs of lines, besides vmlinux.
	most := runCount(chunks) + 1
	ix := &Index{
		source: source,
		data:   unsafe.String(unsafe.SliceData(buf), len(buf)),
		byName: make(map[string]int, most),
		lto:    lto,
	}
	ix.byName[Vmlinux] = 0
	names := append(make([]string, 0, most), Vmlinux)
	ranges := append(make([]run, 0, most), newRun())
	for _, c := range chunks {
		for _, r := range c.runs {
			name := r.obj
			if name == "" {
				name = Vmlinux
			}
			id, ok := ix.byName[name]
			if !ok {
				id = len(names)
				ix.byName[name] = id
				names = append(names, name)
				ranges = append(ranges, newRun())
			}
			ranges[id].merge(r)
		}
	}
	if len(names) > maxObjects {
		return nil, fmt.Errorf("%s: %w: %d objects", source, ErrMalformed, len(names))
	}
	ix.objs = make([]object, len(names))
	pos := make([]int, len(names))
	off := 0
	for i, n := range names {
		ix.objs[i] = object{name: n, start: uint32(off), end: uint32(off + ranges[i].count), pseudo: isPseudo(n)}
		ix.objs[i].setRange(ranges[i])
		pos[i] = off
		off += ranges[i].count
	}
	// Group the symbols by object, keeping input order within each. When
	// the chunks filled consecutive windows of one array and each object's
	// lines were already together (the normal case), adopt that array.
	if adopt(chunks, total) {
		ix.syms = chunks[0].whole[:total:total]
		hashes := chunks[0].wholeHashes[:total:total]
		sorted := vmSorted(chunks)
		ix.sortVmlinux(hashes, sorted)
		var runs []sortedRun
		if sorted {
			runs = vmlinuxRuns(chunks, ix.objs[0])
		}
		ix.buildTables(hashes, block, runs)
		return ix, nil
	}
	// Otherwise (a streamed input, blank lines, objects interleaved) copy
	// each run of lines to its object's place; chunks are copied in
	// parallel, as their destinations never overlap.
	ix.syms = make([]sym, total)
	hashes := make([]uint32, total)
	hugepage.Advise(ix.syms)
	hugepage.Advise(hashes)
	dst := make([][]int, len(chunks)) // where each run of each chunk goes
	for k, c := range chunks {
		for _, r := range c.runs {
			name := r.obj
			if name == "" {
				name = Vmlinux
			}
			id := ix.byName[name]
			dst[k] = append(dst[k], pos[id])
			pos[id] += r.count
		}
	}
	par.For(runtime.GOMAXPROCS(0), len(chunks), func(k int) {
		c, i := chunks[k], 0
		for j, r := range c.runs {
			copy(ix.syms[dst[k][j]:], c.syms[i:i+r.count])
			copy(hashes[dst[k][j]:], c.hashes[i:i+r.count])
			i += r.count
		}
	})
	ix.sortVmlinux(hashes, vmSorted(chunks))
	ix.buildTables(hashes, block, nil)
	return ix, nil
}

// vmSorted reports whether the chunks' vmlinux lines, in order, have
// addresses that never decrease.
func vmSorted(chunks []*chunk) bool {
	var last uint64
	for _, c := range chunks {
		if !c.hasVm {
			continue
		}
		if !c.vmSorted || c.vmFirst < last {
			return false
		}
		last = c.vmLast
	}
	return true
}

// vmlinuxRuns returns the chunks' runs of vmlinux symbols sorted by
// bucket (chunk.sortVmlinux), or nil unless they cover vmlinux (o).
func vmlinuxRuns(chunks []*chunk, o object) []sortedRun {
	var runs []sortedRun
	n := 0
	for _, c := range chunks {
		if c.hasVm && c.vmRun.start == nil {
			return nil
		}
		if len(c.vmRun.pairs) > 0 {
			runs = append(runs, c.vmRun)
			n += len(c.vmRun.pairs)
		}
	}
	if n != int(o.end-o.start) {
		return nil
	}
	return runs
}

// runCount is the number of runs of lines the chunks have.
func runCount(chunks []*chunk) int {
	n := 0
	for _, c := range chunks {
		n += len(c.runs)
	}
	return n
}

// adopt reports whether the chunks' symbols can be used in place: they
// filled consecutive windows of one presized array with no hole (blank
// lines leave one), vmlinux came first and each object's lines were
// together.
func adopt(chunks []*chunk, total int) bool {
	seen := make(map[string]bool, runCount(chunks))
	prev := "\x00"
	for i, c := range chunks {
		if !c.window || len(c.syms) != cap(c.syms) {
			return false
		}
		for j, r := range c.runs {
			if i == 0 && j == 0 && r.obj != "" {
				seen[""] = true // no vmlinux line before the modules
			}
			if r.obj != prev {
				if seen[r.obj] {
					return false
				}
				seen[r.obj] = true
				prev = r.obj
			}
		}
	}
	return len(chunks) > 0 && len(chunks[0].whole) >= total
}

// sortVmlinux puts vmlinux in address order if the input was not: the
// kernel's table (scripts/kallsyms) is sorted by address, equal addresses
// keeping their original order, and sympos counts in that order.
func (ix *Index) sortVmlinux(hashes []uint32, sorted bool) {
	if sorted {
		return
	}
	v := ix.objs[0]
	s := ix.syms[v.start:v.end]
	type pair struct {
		s sym
		h uint32
	}
	p := make([]pair, len(s))
	for i := range s {
		p[i] = pair{s[i], hashes[int(v.start)+i]}
	}
	slices.SortStableFunc(p, func(a, b pair) int { return cmp.Compare(a.s.addr, b.s.addr) })
	for i := range p {
		s[i], hashes[int(v.start)+i] = p[i].s, p[i].h
	}
}

// buildTables fills each object's hash table and the same-name chains.
// Each table is an open-addressing array of exactly the size its object
// needs (load factor 2/3), indexed with Lemire's multiply-shift reduction
// instead of a power-of-two mask. A large object's table (vmlinux) is
// filled by all workers at once, each sweeping its own part of the table
// in order (fillSplit); the small ones are shared out whole.
//
// block, when it is large enough, is zeroed memory to lay them out in (a
// streamed input's, faulted in while it was read); otherwise they get an
// allocation of their own. vmRuns, when not nil, are vmlinux's symbols
// already sorted by bucket (a streamed input's chunks sorted theirs while
// the rest was read): its table is filled from them.
func (ix *Index) buildTables(hashes []uint32, block []slot, vmRuns []sortedRun) {
	total := 0
	for i := range ix.objs {
		o := &ix.objs[i]
		n := o.end - o.start
		o.off, o.size = uint32(total), tableSize(n)
		total += int(o.size)
	}
	workers := runtime.GOMAXPROCS(0)
	// The tables, the chains and fillSplit's scratch array are one
	// allocation: 3-4 MB holds a huge page or two where three arrays of
	// under 2 MB each hold none, and a one-shot run took a page fault
	// per 4 KiB of them (about 900 of its 2,500).
	scratch := 0
	split := func(i int) bool { return splitTable(ix.objs[i].end - ix.objs[i].start) }
	presorted := vmRuns != nil && split(0)
	for i := range ix.objs {
		if o := &ix.objs[i]; split(i) && (i > 0 || !presorted) {
			scratch = max(scratch, int(o.end-o.start))
		}
	}
	nextSlots := (len(ix.syms) + 1) / 2 // next[] in slot-sized words
	need := total + nextSlots + scratch
	fresh := len(block) < need
	if fresh {
		block = make([]slot, need)
		hugepage.Advise(block)
	}
	block = block[:need:need]
	ix.slots = block[:total:total]
	ix.next = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(block[total:]))), len(ix.syms))
	order := block[total+nextSlots:]
	ix.scratch = len(order) * int(unsafe.Sizeof(slot{}))
	// Write the fresh tables before any probe reads them. A first read
	// maps the shared zero page, and the write after it is then a
	// copy-on-write fault that must flush the other cores' TLBs (an IPI
	// per page: 16% of a one-shot run's time went there). A first write
	// is a plain fault, and the workers take theirs in parallel: each
	// clears the part of a fresh table it is about to fill, which is then
	// in its cache, instead of a pass of its own before the fill.
	// (Pieces, here and in fillSplit, are several per worker: a worker
	// that starts late then finds fewer left, see par.For.)
	pieces := 4 * workers
	small := make([]int, 0, len(ix.objs))
	for i := range ix.objs {
		if o := &ix.objs[i]; i == 0 && presorted {
			ix.fillRuns(o, vmRuns, pieces, workers, fresh)
		} else if split(i) {
			ix.fillSplit(o, hashes, pieces, workers, order, fresh)
		} else {
			small = append(small, i)
		}
	}
	par.For(workers, len(small), func(k int) {
		o := &ix.objs[small[k]]
		if fresh {
			clear(ix.slots[o.off : o.off+o.size])
		}
		ix.fill(o, hashes, o.end, o.start)
	})
	// (A streamed input's sorted runs go back to the kernel once the
	// index is built: parser.keepStream. fillSplit's scratch in a heap
	// block is not released: the runtime would fault the pages back in
	// when it reuses the block, and Open in a loop took 25% longer.)
}

// tableSize is the slot count of the table of an object of n symbols.
func tableSize(n uint32) uint32 { return max(4, n+n/2+1) }

// tableSlots bounds buildTables' block for n symbols: the tables (less
// tableSize's minimum and rounding, at most 5 slots per object), the
// chains and the scratch, in that order from the block's start.
func tableSlots(n int) int { return touchSlots(n) + n }

// touchSlots is the part of tableSlots that a streamed input's chunks
// fault in ahead (chunk.touch): the tables and the chains, the scratch
// being needed only when vmlinux's symbols were not sorted as they came.
func touchSlots(n int) int { return n + n/2 + (n+1)/2 }

// maxObjects bounds the objects of one index (a module index is 16 bits
// in snapshots).
const maxObjects = 1 << 16

// splitFill is the symbol count from which an object's table is filled by
// all workers together.
const splitFill = 1 << 14

// splitTable reports whether the table of an object of n symbols is filled
// by all workers together (buildTables), from runs sorted by bucket: only
// then are the runs worth sorting while the input is parsed
// (chunk.sortVmlinux).
func splitTable(n uint32) bool { return runtime.GOMAXPROCS(0) > 1 && n >= splitFill }

// home is the first slot of a table of n slots to probe for hash h.
func home(h, n uint32) uint32 { return uint32(uint64(h) * uint64(n) >> 32) }

// fill inserts every symbol of o into its table, from hi-1 down to lo.
//
// Symbols are inserted last to first and each is pushed on the front of
// its name's chain, so that each chain ends up in kallsyms order.
// Linear probing without deletion gives a valid table whatever the order
// of insertion of different names, so parts of a table can be filled
// separately (fillPairs).
func (ix *Index) fill(o *object, hashes []uint32, hi, lo uint32) {
	slots := ix.slots[o.off : o.off+o.size]
	for i := hi; i > lo; {
		i--
		ix.insert(slots, hashes[i], i)
	}
}

// fillPairs inserts the symbols listed by pairs (hash, symbol index), in
// that order, probing only the slots [from, to) of o's table unless the
// range is the whole table. A symbol whose probe would leave the range is
// returned, in the order met, for the caller to insert later.
func (ix *Index) fillPairs(o *object, pairs []slot, from, to uint32) (deferred []slot) {
	slots := ix.slots[o.off : o.off+o.size]
	if from == 0 && to == o.size {
		for _, pr := range pairs {
			ix.insert(slots, pr.hash, pr.idx)
		}
		return nil
	}
	for k := range pairs {
		h, i := pairs[k].hash, pairs[k].idx
		// The usual case, inline: the first slot probed that is free or
		// has this hash is free. (A call per symbol cost a tenth.)
		p := probe(slots, h, home(h, o.size), to)
		if p < to && slots[p].idx == 0 {
			slots[p].hash, slots[p].idx = h, i+1
			continue
		}
		if ix.file(slots, h, i, p, to) == to {
			deferred = append(deferred, pairs[k])
		}
	}
	return deferred
}

// insert files symbol i (name hash h) in a whole table, probing from its
// home and wrapping around (a table always has a free slot).
func (ix *Index) insert(slots []slot, h, i uint32) {
	n := uint32(len(slots))
	if ix.file(slots, h, i, probe(slots, h, home(h, n), n), n) == n {
		ix.file(slots, h, i, probe(slots, h, 0, n), n)
	}
}

// probe returns the index of the first of slots[p:to] that is free or
// holds hash h, or to if there is none.
func probe(slots []slot, h, p, to uint32) uint32 {
	for ; p < to; p++ {
		if s := &slots[p]; s.idx == 0 || s.hash == h {
			return p
		}
	}
	return to
}

// file files symbol i (name hash h) from slot p on, p being where probe
// stopped: in that free slot, or on the front of the chain of the name
// that holds it; a slot of another name with the same hash is passed
// over. It returns the slot's index, or to if the probe ran out of
// slots[:to] (in a part of a table: a symbol whose home is at or past the
// part's end, where two parts meet, or whose probe would leave it).
func (ix *Index) file(slots []slot, h, i, p, to uint32) uint32 {
	for ; p < to; p = probe(slots, h, p+1, to) {
		sl := &slots[p]
		if sl.idx == 0 {
			sl.hash, sl.idx = h, i+1
			return p
		}
		if ix.key(sl.idx-1) == ix.key(i) {
			ix.next[i] = sl.idx
			ix.syms[i].flags |= symHasNext
			sl.idx = i + 1
			return p
		}
	}
	return to
}

// fillSplit fills a large object's table in w pieces on workers
// goroutines: each piece of its symbols is sorted by bucket into its own
// part of order (sortRun), and the table is filled from those runs
// (fillRuns, given writeFirst). It returns the number of probes finished
// late.
func (ix *Index) fillSplit(o *object, hashes []uint32, w, workers int, order []slot, writeFirst bool) (late int) {
	n := o.end - o.start
	if len(order) < int(n) {
		order = make([]slot, n)
	}
	runs := make([]sortedRun, w)
	par.For(workers, w, func(g int) {
		lo, hi := uint32(uint64(n)*uint64(g)/uint64(w)), uint32(uint64(n)*uint64(g+1)/uint64(w))
		out := order[lo:hi]
		runs[g] = sortedRun{out, sortRun(hashes[o.start+lo:o.start+hi], o.start+lo, out)}
	})
	return ix.fillRuns(o, runs, w, workers, writeFirst)
}

// bucketBits: the symbols of a large object are sorted by the top
// bucketBits bits of their hash before they are inserted (fillRuns).
const (
	bucketBits = 10
	buckets    = 1 << bucketBits
)

// sortedRun is a run of symbols sorted by bucket, last to first within
// each: pairs[start[b]:start[b+1]] are bucket b's (hash, symbol index).
type sortedRun struct {
	pairs []slot
	start *[buckets + 1]uint32
}

// sortRun sorts the symbols base, base+1, ... (their hashes given) into
// out by bucket, last to first within each.
func sortRun(hashes []uint32, base uint32, out []slot) *[buckets + 1]uint32 {
	var next [buckets]uint32
	for _, h := range hashes {
		next[h>>(32-bucketBits)]++
	}
	start := new([buckets + 1]uint32)
	at := uint32(0)
	for b := range buckets {
		start[b] = at
		at, next[b] = at+next[b], at
	}
	start[buckets] = at
	for i := len(hashes); i > 0; {
		i--
		h := hashes[i]
		b := h >> (32 - bucketBits)
		pr := &out[next[b]]
		pr.hash, pr.idx = h, base+uint32(i)
		next[b]++
	}
	return start
}

// fillRuns fills o's table from runs of its symbols sorted by bucket
// (runs in symbol order, covering the object), in w pieces on workers
// goroutines: each piece inserts the buckets of its w-th of the hash
// space, which land in its own part of the table (home() is monotonic in
// the hash), sweeping that part in order and so keeping it in cache; the
// runs are taken last to first, so that each name's symbols are inserted
// last to first (see fill). Probes that would leave a part are finished
// afterwards by one goroutine; fillRuns returns their number. With
// writeFirst, each piece clears its part of the table before it probes it
// (see buildTables).
func (ix *Index) fillRuns(o *object, runs []sortedRun, w, workers int, writeFirst bool) (late int) {
	deferred := make([][]slot, w)
	par.For(workers, w, func(g int) {
		b0, b1 := g*buckets/w, (g+1)*buckets/w
		from := home(uint32(b0)<<(32-bucketBits), o.size)
		to := o.size
		if b1 < buckets {
			to = home(uint32(b1)<<(32-bucketBits), o.size)
		}
		if writeFirst {
			clear(ix.slots[o.off+from : o.off+to])
		}
		for k := len(runs) - 1; k >= 0; k-- {
			r := &runs[k]
			d := ix.fillPairs(o, r.pairs[r.start[b0]:r.start[b1]], from, to)
			deferred[g] = append(deferred[g], d...)
		}
	})
	for _, d := range deferred {
		if len(d) > 0 {
			ix.fillPairs(o, d, 0, o.size)
		}
		late += len(d)
	}
	return late
}

// setRange sets the object's address range from the ranges of its lines,
// leaving out absolute ('A') symbols unless they are all it has.
func (o *object) setRange(r run) {
	lo, hi := r.lo, r.hi
	if lo > hi {
		lo, hi = r.alo, r.ahi
	}
	if lo > hi {
		lo, hi = 0, 0
	}
	o.lo, o.hi = lo, hi
}

// ltoSym reports whether symbol i matches without its ".llvm.<digits>"
// suffix: in LTO mode, vmlinux's do, as klp_find_object_symbol() looked
// them up with kallsyms_on_each_match_symbol() (6.2-6.10), which compares
// cleaned names; modules' never did: module_kallsyms_on_each_symbol() and
// klp_find_callback() compare them exactly. vmlinux is objs[0], and its
// symbols come first.
func (ix *Index) ltoSym(i uint32) bool { return ix.lto && i < ix.objs[0].end }

// key is the name sym i is filed under.
func (ix *Index) key(i uint32) string {
	n := ix.name(i)
	if ix.ltoSym(i) {
		return stripLLVM(n)
	}
	return n
}

// MemSize estimates the bytes the index holds: the input buffer, the
// symbol records, the chains and the hash tables. What is built on first
// use (the address order of Addr, 4 bytes a symbol; the variants a miss
// looks up) is not counted: reading it here could race with its build.
func (ix *Index) MemSize() int {
	n := len(ix.data) + len(ix.syms)*int(unsafe.Sizeof(sym{})) + len(ix.next)*4
	n += len(ix.slots)*int(unsafe.Sizeof(slot{})) + ix.scratch
	if ix.packed != nil {
		n += 4 * len(ix.packed.rank) // (the tables are in the file)
	}
	if ix.lazy != nil {
		n += len(ix.lazy.file) // the frames its chunks are decoded from
	}
	return n
}

// ListsModules reports whether the index lists any module (a pseudo-module
// such as [bpf] is none): a /proc/kallsyms does where modules are loaded; a
// System.map or a kernel image never does, so that a module's absence from
// them says nothing of whether it is loaded.
func (ix *Index) ListsModules() bool {
	if len(ix.objs) < 2 {
		return false
	}
	for _, o := range ix.objs[1:] {
		if !o.pseudo {
			return true
		}
	}
	return false
}
