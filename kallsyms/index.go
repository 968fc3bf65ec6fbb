package kallsyms

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Vmlinux is the name of the kernel image's object.
const Vmlinux = "vmlinux"

// Index is an immutable symbol index: one hash table per object. It is safe
// for concurrent use by any number of goroutines.
type Index struct {
	source string
	data   string // the input; names point into it
	syms   []sym  // grouped by object, each group in kallsyms order
	next   []uint32
	objs   []object // objs[0] is vmlinux
	byName map[string]int
	lto    bool

	addrOnce sync.Once
	byAddr   []uint32 // sym indexes sorted by address (built on first use)
}

// sym is one line of the input: 16 bytes, the name an offset into data.
type sym struct {
	addr uint64
	off  uint32
	nlen uint16
	typ  byte
	_    byte
}

type object struct {
	name       string
	start, end uint32 // syms[start:end]
	pseudo     bool
	lo, hi     uint64
	tab        table
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
	s := &ix.syms[i]
	return ix.data[s.off : s.off+uint32(s.nlen)]
}

func (ix *Index) symbol(i uint32, pos int) Symbol {
	s := &ix.syms[i]
	return Symbol{Name: ix.name(i), Object: ix.objs[ix.objectOf(i)].name, Address: s.addr, Type: s.typ, Pos: pos}
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
		s := &ix.syms[i]
		if !fn(Symbol{Name: ix.name(i), Object: o.name, Address: s.addr, Type: s.typ}) {
			return
		}
	}
}

// build merges parsed chunks into an index.
func build(source string, buf []byte, chunks []*chunk, total int, lto bool) (*Index, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%s: %w", source, ErrEmpty)
	}
	ix := &Index{
		source: source,
		data:   unsafe.String(unsafe.SliceData(buf), len(buf)),
		byName: map[string]int{Vmlinux: 0},
		lto:    lto,
	}
	// Objects in order of first appearance; vmlinux first.
	counts := []int{0}
	names := []string{Vmlinux}
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
				counts = append(counts, 0)
			}
			counts[id] += r.count
		}
	}
	if len(names) > 1<<16 {
		return nil, fmt.Errorf("%s: %w: %d objects", source, ErrMalformed, len(names))
	}
	ix.objs = make([]object, len(names))
	pos := make([]int, len(names))
	off := 0
	for i, n := range names {
		ix.objs[i] = object{name: n, start: uint32(off), end: uint32(off + counts[i]), pseudo: isPseudo(n)}
		pos[i] = off
		off += counts[i]
	}
	// Group the symbols by object, keeping input order within each. When
	// the chunks filled consecutive windows of one array and each object's
	// lines were already together (the normal case), adopt that array.
	if adopt(chunks, total) {
		ix.syms = chunks[0].whole
		hashes := chunks[0].wholeHashes
		ix.sortVmlinux(hashes)
		ix.buildTables(hashes)
		return ix, nil
	}
	ix.syms = make([]sym, total)
	hashes := make([]uint32, total)
	for _, c := range chunks {
		i := 0
		for _, r := range c.runs {
			name := r.obj
			if name == "" {
				name = Vmlinux
			}
			id := ix.byName[name]
			copy(ix.syms[pos[id]:], c.syms[i:i+r.count])
			copy(hashes[pos[id]:], c.hashes[i:i+r.count])
			pos[id] += r.count
			i += r.count
		}
	}
	ix.sortVmlinux(hashes)
	ix.buildTables(hashes)
	return ix, nil
}

// adopt reports whether the chunks' symbols can be used in place: they
// filled consecutive windows of one presized array with no hole (blank
// lines leave one), vmlinux came first and each object's lines were
// together.
func adopt(chunks []*chunk, total int) bool {
	seen := make(map[string]bool)
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
	return len(chunks) > 0 && cap(chunks[0].whole) == total
}

// sortVmlinux puts vmlinux in address order if the input was not: the
// kernel's table (scripts/kallsyms) is sorted by address, equal addresses
// keeping their original order, and sympos counts in that order.
func (ix *Index) sortVmlinux(hashes []uint32) {
	v := ix.objs[0]
	s := ix.syms[v.start:v.end]
	if slices.IsSortedFunc(s, func(a, b sym) int { return cmpU64(a.addr, b.addr) }) {
		return
	}
	type pair struct {
		s sym
		h uint32
	}
	p := make([]pair, len(s))
	for i := range s {
		p[i] = pair{s[i], hashes[int(v.start)+i]}
	}
	slices.SortStableFunc(p, func(a, b pair) int { return cmpU64(a.s.addr, b.s.addr) })
	for i := range p {
		s[i], hashes[int(v.start)+i] = p[i].s, p[i].h
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// A table is an object's hash table, split into 1 to maxParts partitions
// by the top bits of the hash so that a large object (vmlinux) is filled on
// several cores at once. Each partition is an open-addressing array of
// exactly the size its population needs (load factor 2/3), indexed with
// Lemire's multiply-shift reduction instead of a power-of-two mask.
type table struct {
	slots []slot
	parts []part
	shift uint32 // partition = hash >> shift (shift 32: one partition)
	rot   uint32 // log2(len(parts))
}

type part struct{ off, n uint32 }

const (
	maxParts     = 1
	partitionMin = 16384 // objects smaller than this get one partition
)

func (t *table) partOf(h uint32) uint32 { return uint32(uint64(h) >> t.shift) }

// home is the first slot to probe for h, relative to its partition.
func (t *table) home(h uint32, n uint32) uint32 {
	r := h<<t.rot | uint32(uint64(h)>>(32-t.rot))
	return uint32(uint64(r) * uint64(n) >> 32)
}

// buildTables fills each object's hash table and the same-name chains,
// on all cores: the work is cut into (object, partition) jobs.
func (ix *Index) buildTables(hashes []uint32) {
	workers := runtime.GOMAXPROCS(0)
	parts := 1
	for parts*2 <= min(workers, maxParts) {
		parts *= 2
	}
	type job struct {
		o *object
		q uint32
	}
	var jobs []job
	total := 0
	counts := make([]uint32, maxParts)
	for i := range ix.objs {
		o := &ix.objs[i]
		n := int(o.end - o.start)
		p := 1
		if n >= partitionMin {
			p = parts
		}
		rot := uint32(bits.TrailingZeros(uint(p)))
		o.tab = table{parts: make([]part, p), shift: 32 - rot, rot: rot}
		clear(counts)
		if p > 1 {
			for _, h := range hashes[o.start:o.end] {
				counts[o.tab.partOf(h)]++
			}
		} else {
			counts[0] = uint32(n)
		}
		for q := range p {
			size := max(4, counts[q]+counts[q]/2+1)
			o.tab.parts[q] = part{off: uint32(total), n: size}
			total += int(size)
			jobs = append(jobs, job{o, uint32(q)})
		}
	}
	all := make([]slot, total)
	for i := range ix.objs {
		ix.objs[i].tab.slots = all
	}
	ix.next = make([]uint32, len(ix.syms))
	var nextJob atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(nextJob.Add(1) - 1)
				if j >= len(jobs) {
					return
				}
				ix.fill(jobs[j].o, jobs[j].q, hashes)
			}
		}()
	}
	wg.Wait()
	for i := range ix.objs {
		ix.objs[i].setRange(ix.syms)
	}
}

// fill inserts the symbols of o that hash into partition q. Random writes
// into a table larger than the cache cost a miss each, so the symbols are
// first bucketed by home slot (a counting sort, stable) and inserted bucket
// by bucket, which keeps the writes within a few KiB at a time. Symbols are
// taken from the back of the object and pushed on the front of their
// name's chain, so that each chain ends up in kallsyms order; all symbols of
// a name share a home slot, hence a bucket, so the bucketing keeps that.
func (ix *Index) fill(o *object, q uint32, hashes []uint32) {
	t := &o.tab
	pt := t.parts[q]
	slots := t.slots[pt.off : pt.off+pt.n]
	const buckets = 512
	var count [buckets + 1]uint32
	bucketOf := func(h uint32) uint32 { return uint32(uint64(t.home(h, pt.n)) * buckets / uint64(pt.n)) }
	for i := o.start; i < o.end; i++ {
		if h := hashes[i]; t.partOf(h) == q {
			count[bucketOf(h)+1]++
		}
	}
	for b := 1; b <= buckets; b++ {
		count[b] += count[b-1]
	}
	order := make([]uint32, count[buckets])
	for i := o.end; i > o.start; {
		i--
		if h := hashes[i]; t.partOf(h) == q {
			b := bucketOf(h)
			order[count[b]] = i
			count[b]++
		}
	}
	for _, i := range order {
		h := hashes[i]
		key := ix.key(i)
		for p := t.home(h, pt.n); ; {
			sl := &slots[p]
			if sl.idx == 0 {
				*sl = slot{hash: h, idx: i + 1}
				break
			}
			if sl.hash == h && ix.key(sl.idx-1) == key {
				ix.next[i] = sl.idx
				sl.idx = i + 1
				break
			}
			if p++; p == pt.n {
				p = 0
			}
		}
	}
}

// setRange computes the object's address range, leaving out absolute
// ('A') symbols unless they are all it has.
func (o *object) setRange(syms []sym) {
	lo, hi := ^uint64(0), uint64(0)
	alo, ahi := ^uint64(0), uint64(0)
	for i := o.start; i < o.end; i++ {
		s := &syms[i]
		if s.typ == 'A' || s.typ == 'a' {
			alo, ahi = min(alo, s.addr), max(ahi, s.addr)
		} else {
			lo, hi = min(lo, s.addr), max(hi, s.addr)
		}
	}
	if lo > hi {
		lo, hi = alo, ahi
	}
	if lo > hi {
		lo, hi = 0, 0
	}
	o.lo, o.hi = lo, hi
}

// key is the name sym i is filed under.
func (ix *Index) key(i uint32) string {
	n := ix.name(i)
	if ix.lto {
		return stripLLVM(n)
	}
	return n
}

// MemSize estimates the bytes the index holds: the input buffer, the
// symbol records, the chains and the hash tables.
func (ix *Index) MemSize() int {
	n := len(ix.data) + len(ix.syms)*int(unsafe.Sizeof(sym{})) + len(ix.next)*4
	if len(ix.objs) > 0 {
		n += len(ix.objs[0].tab.slots) * int(unsafe.Sizeof(slot{}))
	}
	n += len(ix.byAddr) * 4
	return n
}
