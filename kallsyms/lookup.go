// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/klpresolve/klpresolve/internal/modname"
)

// find returns the first symbol (index+1) filed under name in o, or 0.
func (ix *Index) find(o *object, name string) uint32 {
	key := name
	if ix.lto && o == &ix.objs[0] { // see ltoSym
		key = stripLLVM(name)
	}
	return ix.findKey(o, key, hashKeyString(key, false))
}

// findKey is find of key, whose hash (hashKeyString) is h, as o files it
// (find says which key that is).
func (ix *Index) findKey(o *object, key string, h uint32) uint32 {
	// The probe trusts no slot: it gives up after o.size of them (a table
	// with no empty slot cannot make it loop), and takes an entry only if
	// it points into o (one cannot make it read another object's symbols,
	// or past them). Tables built here are right by construction; a raw
	// snapshot's are used as the file has them, checked here instead of
	// slot by slot when it is loaded.
	for p, left := home(h, o.size), o.size; left > 0; left-- {
		sl := ix.slot(o.off + p)
		if sl.idx == 0 {
			return 0
		}
		if sl.hash == h && sl.idx-1-o.start < o.end-o.start && ix.key(sl.idx-1) == key {
			return sl.idx
		}
		if p++; p == o.size {
			p = 0
		}
	}
	return 0
}

// matches reports whether sym i (filed under name's key) answers name: in
// LTO mode a name without the suffix matches vmlinux's suffixed symbols
// too, as the kernel's cleanup_symbol_name() comparison did; a suffixed
// name only matches itself (see ltoSym).
func (ix *Index) matches(i uint32, name string) bool {
	if !ix.ltoSym(i) {
		return true
	}
	n := ix.name(i)
	return n == name || stripLLVM(n) == name
}

func (ix *Index) objectIndex(object string) (int, objectMiss) {
	if ix.closed {
		return 0, missClosed
	}
	if object == "" || object == Vmlinux {
		return 0, objectOK // objs[0], never a pseudo-module: no map lookup
	}
	oi, ok := ix.byName[object]
	if !ok {
		return 0, missAbsent
	}
	if ix.objs[oi].pseudo {
		return 0, missPseudo
	}
	return oi, objectOK
}

// objectMiss is why objectIndex found no object; objectErr makes the
// error, which only the diagnosing lookups build (Find allocates nothing).
type objectMiss uint8

const (
	objectOK objectMiss = iota
	missAbsent
	missPseudo
	missClosed
)

func (ix *Index) objectErr(object string, why objectMiss) *LookupError {
	switch why {
	case missClosed:
		return ix.closedErr(object)
	case missPseudo:
		return &LookupError{Object: object, Kind: ErrNoObject,
			Note: "[" + object + "] is a pseudo-module, not a module: livepatch never resolves against it"}
	}
	note := "no such module in " + ix.source
	if m := ix.nearObject(object); m != "" {
		note += "; did you mean '" + m + "'?"
	}
	return &LookupError{Object: object, Kind: ErrNoObject, Note: note}
}

// absentNear adds to the error of an object that is not loaded where
// its symbol is all the same: the name in the objects that are (le.Near),
// and, when vmlinux has it, that the object may be built into this kernel
// (a built-in module's symbols are vmlinux's).
func (ix *Index) absentNear(le *LookupError, why objectMiss) {
	if why != missAbsent || le.Name == "" {
		return
	}
	var buf [maxNear]Symbol
	if near := ix.elsewhere(-1, le.Name, buf[:0]); len(near) > 0 {
		le.Near = slices.Clone(near)
		ix.ownNames(le.Near)
	}
	if slices.ContainsFunc(le.Near, func(s Symbol) bool { return s.Object == Vmlinux && s.Name == le.Name }) {
		le.Note += " (is " + le.Object + " built into this kernel? vmlinux has " + le.Name + ")"
	}
}

// nearObject is the object whose name object is, as people write module
// names: with dashes (the kernel's are KBUILD_MODNAME, where kbuild turns
// them into underscores), in kallsyms's brackets, with .ko, in another
// case. "" when none.
func (ix *Index) nearObject(object string) string {
	norm := func(s string) string {
		s = strings.TrimSuffix(strings.Trim(s, "[] "), ".ko")
		return strings.ToLower(modname.Of(s))
	}
	want := norm(object)
	for _, o := range ix.objs {
		if !o.pseudo && o.name != object && norm(o.name) == want {
			return o.name
		}
	}
	return ""
}

// closedErr is every lookup's error once the index is closed.
func (ix *Index) closedErr(object string) *LookupError {
	if object == "" {
		object = Vmlinux
	}
	return &LookupError{Object: object, Kind: ErrClosed, Note: "the index of " + ix.source + " was closed"}
}

// Lookup resolves (object, name, sympos) with the rules of the kernel's
// klp_find_object_symbol() (kernel/livepatch/core.c):
//
//   - object "" or "vmlinux" is the kernel image, anything else a module;
//   - sympos 0 means name must be unique in the object, sympos N >= 1 means
//     the N-th occurrence in kallsyms order (vmlinux: address order; a
//     module: its symbol-table order); every symbol type counts;
//   - a match whose address is 0 is "not found", as in the kernel, which
//     cannot tell the two apart.
//
// The error is a *LookupError wrapping ErrNotFound, ErrAmbiguous,
// ErrNoSuchPosition or ErrNoObject. Lookup does not allocate on success.
func (ix *Index) Lookup(object, name string, sympos uint64) (s Symbol, err error) {
	// Lookup is the hot path: what only a miss needs is in calls, so
	// that its frame stays small.
	oi, miss := ix.objectIndex(object)
	if miss != objectOK {
		return Symbol{}, ix.objectMissErr(object, name, sympos, miss)
	}
	o := &ix.objs[oi]
	hit, head := ix.quick(o, name, sympos)
	if hit != 0 {
		ix.unique(&s, o, name, hit)
		return s, nil
	}
	return ix.lookupFrom(oi, head, name, sympos)
}

// objectMissErr is Lookup's error where objectIndex found no object.
func (ix *Index) objectMissErr(object, name string, sympos uint64, miss objectMiss) *LookupError {
	le := ix.objectErr(object, miss)
	le.Name, le.Pos = name, sympos
	ix.absentNear(le, miss)
	return le
}

// quick answers most lookups in one short loop: those of a name that only
// one symbol of its object has, at a nonzero address, with sympos 0 or 1,
// in an index matched exactly (not LTO). Such a lookup then costs about
// what the memory it reads does: a slot, a record, the name. The
// general path (find, search, found) runs about twice the instructions,
// and a loop of lookups then overlaps fewer of their cache misses
// (docs/benchmarks.md, "Where a lookup's time goes").
//
// hit is the symbol (index+1) that answers, or 0; then head is find's
// answer, the first symbol filed under name (0: none), for search.
func (ix *Index) quick(o *object, name string, sympos uint64) (hit, head uint32) {
	if ix.lto {
		return 0, ix.find(o, name)
	}
	// findKey's probe and checks, then search's for a unique name.
	h := hashKeyString(name, false)
	for p, left := home(h, o.size), o.size; left > 0; left-- {
		sl := ix.slot(o.off + p)
		if sl.idx == 0 {
			return 0, 0
		}
		if sl.hash == h && sl.idx-1-o.start < o.end-o.start {
			y := ix.at(sl.idx - 1)
			switch {
			case ix.data[y.off:y.off+uint32(y.nlen)] != name:
				// another name with the same hash: probe on
			case y.flags&symHasNext != 0 || y.addr == 0 || sympos > 1:
				return 0, sl.idx // search decides
			default:
				return sl.idx, sl.idx
			}
		}
		if p++; p == o.size {
			p = 0
		}
	}
	return 0, 0
}

// unique sets s to quick's hit i (index+1) in o: the only symbol named
// name there, so at position 1. It sets s field by field, in the caller's
// result: a Symbol (five fields) built whole is copied through the stack
// in 16-byte moves, which the processor cannot forward to the 8-byte
// loads of the result; that cost a module's lookup a quarter of its time.
func (ix *Index) unique(s *Symbol, o *object, name string, i uint32) {
	y := &ix.syms[i-1]
	s.Name, s.Object, s.Address, s.Type, s.Pos = name, o.name, y.addr, y.typ, 1
}

// lookupFrom is Lookup in objs[oi], whose first symbol filed under name
// (find) is head (LookupListed has found it already).
func (ix *Index) lookupFrom(oi int, head uint32, name string, sympos uint64) (Symbol, error) {
	last, count, addr := ix.search(head, name, sympos)
	if missed(sympos, count, addr) {
		return Symbol{}, ix.missErr(oi, name, sympos, count, addr)
	}
	return ix.found(&ix.objs[oi], name, last, count, addr), nil
}

// missed is klp_find_object_symbol()'s test of the walk's result: no
// address (not found, or found at 0), a name not unique for sympos 0, or
// fewer occurrences than sympos.
func missed(sympos, count, addr uint64) bool {
	return addr == 0 || (count > 1 && sympos == 0) || (sympos > 0 && sympos != count)
}

// missErr is the LookupError for a walk of objs[oi] that missed.
func (ix *Index) missErr(oi int, name string, sympos, count, addr uint64) *LookupError {
	o := &ix.objs[oi]
	switch {
	case addr == 0:
		e := &LookupError{Object: o.name, Name: name, Pos: sympos, Kind: ErrNotFound}
		if count > 0 {
			e.Count = ix.count(o, name)
			e.Note = "the symbol is listed at address 0, which the kernel treats as not found"
		} else {
			e.Near, e.Note = ix.near(oi, name), localNote(name)
		}
		if err := ix.decodeErr(); err != nil { // a forged snapshot's chunk
			if e.Note != "" {
				e.Note += "; "
			}
			e.Note += err.Error()
		}
		return e
	case count > 1 && sympos == 0:
		c, n := ix.appendCandidates(nil, o, name, MaxCandidates)
		ix.ownNames(c)
		return &LookupError{Object: o.name, Name: name, Kind: ErrAmbiguous, Count: n, Candidates: c}
	}
	c, n := ix.appendCandidates(nil, o, name, MaxCandidates)
	ix.ownNames(c)
	return &LookupError{Object: o.name, Name: name, Pos: sympos, Kind: ErrNoSuchPosition, Count: n, Candidates: c}
}

// search is klp_find_callback()'s walk from head, the first symbol
// filed under name in its object (find): it counts the symbols answering
// name, remembering the last one and its address, and stops at the
// wanted position or, for sympos 0, at the second match.
func (ix *Index) search(head uint32, name string, sympos uint64) (last uint32, count, addr uint64) {
	for i := head; i != 0; i = ix.next[i-1] {
		s := ix.at(i - 1)
		if ix.matches(i-1, name) {
			count++
			addr, last = s.addr, i-1
			if (sympos != 0 && count == sympos) || (sympos == 0 && count > 1) {
				break
			}
		}
		if s.flags&symHasNext == 0 {
			break // the chain ends here: next[] is not read (a cache miss)
		}
	}
	return last, count, addr
}

// found is the symbol search found, named with the caller's string when
// it is the same (no copy of a mapped name). Outside LTO matching it is:
// the symbols search walks are filed under name itself, which findKey
// compared (so the bytes are not compared again).
func (ix *Index) found(o *object, name string, last uint32, count, addr uint64) Symbol {
	n := name
	if ix.ltoSym(last) {
		if n = ix.name(last); n != name {
			n = ix.nameOut(last) // the symbol has the suffix
		} else {
			n = name
		}
	}
	return Symbol{Name: n, Object: o.name, Address: addr, Type: ix.at(last).typ, Pos: int(count)}
}

// Find is Lookup without the diagnostics: ok is false where Lookup would
// fail, and no error (candidates, nearest names) is built. It never
// allocates, and a miss costs no more than a hit: for loaders that
// resolve many names and report what is missing their own way.
func (ix *Index) Find(object, name string, sympos uint64) (s Symbol, ok bool) {
	oi, miss := ix.objectIndex(object)
	if miss != objectOK {
		return Symbol{}, false
	}
	o := &ix.objs[oi]
	hit, head := ix.quick(o, name, sympos)
	if hit != 0 {
		ix.unique(&s, o, name, hit)
		return s, true
	}
	last, count, addr := ix.search(head, name, sympos)
	if missed(sympos, count, addr) {
		return Symbol{}, false
	}
	return ix.found(o, name, last, count, addr), true
}

// count is how many symbols answer name in o.
func (ix *Index) count(o *object, name string) int {
	n := 0
	for i := ix.find(o, name); i != 0; i = ix.next[i-1] {
		if ix.matches(i-1, name) {
			n++
		}
	}
	return n
}

// candidates lists every symbol answering name in o, in sympos order.
func (ix *Index) candidates(o *object, name string) []Symbol {
	out, _ := ix.appendCandidates(nil, o, name, -1)
	ix.ownNames(out)
	return out
}

// appendCandidates appends candidates to out, the first limit of them
// (all: limit < 0), and says how many there are. Their names are ix's
// (see ownNames).
func (ix *Index) appendCandidates(out []Symbol, o *object, name string, limit int) ([]Symbol, int) {
	n, from := 0, len(out)
	for i := ix.find(o, name); i != 0; i = ix.next[i-1] {
		if ix.matches(i-1, name) {
			n++
			if limit >= 0 && len(out)-from >= limit {
				continue
			}
			s := ix.at(i - 1)
			out = append(out, Symbol{Name: ix.name(i - 1), Object: o.name, Address: s.addr, Type: s.typ, Pos: n})
		}
	}
	return out, n
}

// Candidates lists every occurrence of name in object, in sympos order
// (position 1 first). It is empty when there is none.
func (ix *Index) Candidates(object, name string) []Symbol {
	oi, miss := ix.objectIndex(object)
	if miss != objectOK {
		return nil
	}
	return ix.candidates(&ix.objs[oi], name)
}

// compilerSuffixes are the suffixes gcc and clang append to local clones
// and promoted statics.
var compilerSuffixes = []string{".isra.", ".constprop.", ".part.", ".cold", ".llvm.", ".localalias"}

// localNote explains a missing name that ends in a number the compiler
// numbered a static local with ("" for any other name).
func localNote(name string) string {
	if strings.IndexByte(name, '.') < 0 {
		return "" // no number, no suffix: both follow a dot
	}
	for _, s := range compilerSuffixes {
		if strings.Contains(name, s) {
			return "" // a clone's number: near's variants tell it
		}
	}
	if baseName(name) == name {
		return ""
	}
	return fmt.Sprintf("%s is a name the compiler numbered (a static local variable's, most often) in the build the patch was made for; the numbers differ between builds: build the patch against this kernel's own build", name)
}

// baseName strips compiler clone suffixes: "foo.isra.0" -> "foo"; and
// the number the compiler gives a static local variable (or a string, a
// jump table) to make its name unique in the object: "count.3" ->
// "count". That number depends on the build, so a patch built for
// another build of the kernel names a local that is count.1 here.
func baseName(name string) string {
	dot := strings.IndexByte(name, '.')
	if dot < 0 {
		return name // most names: every suffix starts with a dot
	}
	cut := len(name)
	for _, s := range compilerSuffixes {
		// Each suffix's first place (as strings.Index finds it) is at or
		// after the first dot: look from there.
		if i := strings.Index(name[dot:], s); i >= 0 && dot+i > 0 && dot+i < cut {
			cut = dot + i
		}
	}
	for {
		i := strings.LastIndexByte(name[:cut], '.')
		if i <= 0 || i == cut-1 || strings.Trim(name[i+1:cut], "0123456789") != "" {
			return name[:cut]
		}
		cut = i
	}
}

// indexVariants builds what a miss's suggestions (near) search, once, on
// the first miss: every symbol whose name carries a compiler suffix filed
// under its base name, in symbol order, and which objects file each hash
// (keyObjects, keyStart: 8 bytes a table slot in use), pseudo-modules left
// out of both. A raw snapshot's slots are taken as stored: one forged
// there can only hide a suggestion (find checks every slot it takes).
func (ix *Index) indexVariants() {
	_ = ix.DecodeAll() // every name, on every core
	ix.variants = map[string][]uint64{}
	n := 0
	for j := range ix.objs {
		if !ix.objs[j].pseudo {
			n += int(ix.objs[j].size)
		}
	}
	ix.keyObjects = make([]uint64, 0, n)
	for j := range ix.objs {
		o := &ix.objs[j]
		if o.pseudo {
			continue
		}
		for p := o.off; p < o.off+o.size; p++ {
			if sl := ix.slot(p); sl.idx != 0 {
				ix.keyObjects = append(ix.keyObjects, uint64(sl.hash)<<32|uint64(j))
			}
		}
	}
	slices.Sort(ix.keyObjects)
	// keyStart[b] is where the hashes whose top bits are b begin: a
	// search reads two words and the few entries of its bucket, not a
	// binary search's dozen cache lines.
	ix.keyStart = make([]uint32, keyBuckets+1)
	b := 0
	for i, k := range ix.keyObjects {
		for ; b <= int(k>>(64-keyBucketBits)); b++ {
			ix.keyStart[b] = uint32(i)
		}
	}
	for ; b <= keyBuckets; b++ {
		ix.keyStart[b] = uint32(len(ix.keyObjects))
	}
	for j := range ix.objs {
		o := &ix.objs[j]
		if o.pseudo {
			continue
		}
		for i := o.start; i < o.end; i++ {
			n := ix.name(i)
			if strings.IndexByte(n, '.') < 0 {
				continue
			}
			if b := baseName(n); b != n {
				ix.variants[b] = append(ix.variants[b], uint64(i)<<32|uint64(j))
			}
		}
	}
}

// keyBucketBits are the hash bits keyStart buckets keyObjects by.
const (
	keyBucketBits = 16
	keyBuckets    = 1 << keyBucketBits
)

// objectsWith calls fn, in object order, with each object (not a
// pseudo-module) whose table may file key: those with a slot of its hash
// (a prefilter; find decides), until fn returns false. In LTO mode
// vmlinux files names without their .llvm suffix. indexVariants must
// have built keyObjects (varOnce).
//
// A name every module has (init_module, __this_module) is in thousands
// of objects when every module is loaded: the callers stop at their
// first few, so nothing is collected or sorted here. keyObjects has each
// hash's objects in order already; only LTO's two keys are merged.
func (ix *Index) objectsWith(key string, fn func(j int) bool) {
	a, b := ix.keyRange(key), []uint64(nil)
	if ix.lto {
		if s := stripLLVM(key); s != key {
			b = ix.keyRange(s)
		}
	}
	last := -1
	for len(a) > 0 || len(b) > 0 {
		var j int
		if len(b) == 0 || len(a) > 0 && uint32(a[0]) <= uint32(b[0]) {
			j, a = int(uint32(a[0])), a[1:]
		} else {
			j, b = int(uint32(b[0])), b[1:]
		}
		if j == last {
			continue // two keys of one hash in an object, or both keys
		}
		last = j
		if !fn(j) {
			return
		}
	}
}

// keyRange is the entries of keyObjects of key's hash, in object order.
func (ix *Index) keyRange(key string) []uint64 {
	h := uint64(hashKeyString(key, false)) << 32
	b := h >> (64 - keyBucketBits)
	bucket := ix.keyObjects[ix.keyStart[b]:ix.keyStart[b+1]]
	lo := 0 // (a bucket holds a few entries: a scan beats a search)
	for lo < len(bucket) && bucket[lo] < h {
		lo++
	}
	hi := lo
	for hi < len(bucket) && bucket[hi]&^math.MaxUint32 == h {
		hi++
	}
	return bucket[lo:hi]
}

// maxNear bounds the nearest names reported for a missing symbol.
const maxNear = 8

// near lists symbols that a user who asked for name in object oi probably
// meant: the same name in another object, then clone variants of it.
func (ix *Index) near(oi int, name string) []Symbol {
	var outBuf [maxNear]Symbol
	out := ix.elsewhere(oi, name, outBuf[:0])
	// Then the variants: every symbol whose base name (baseName) is
	// name's, in symbol order, pseudo-modules left out. Those with a
	// suffix come from an index built on the first miss (a scan of every
	// name per miss took 0.9 ms, and a patch resolved against the wrong
	// kernel misses a thousand names); a plain base name from the tables.
	//
	// Only the first need of them are reported, the smallest symbol
	// indexes: the variants are in symbol order, and the objects in it
	// too (an object's symbols come before the next object's), so the
	// walks stop once they have need.
	need := maxNear - len(out)
	base := baseName(name)
	ix.varOnce.Do(ix.indexVariants)
	var buf [2 * maxNear]uint64
	vs := buf[:0] // index<<32 | object, as variants has them
	for _, v := range ix.variants[base] {
		if len(vs) == need {
			break
		}
		if ix.name(uint32(v>>32)) != name {
			vs = append(vs, v)
		}
	}
	if base != name && need > 0 {
		plain := 0
		hb := hashKeyString(base, false)
		ix.objectsWith(base, func(j int) bool {
			o := &ix.objs[j]
			head := uint32(0)
			if ix.lto && j == 0 {
				head = ix.find(o, base)
			} else {
				head = ix.findKey(o, base, hb)
			}
			for i := head; i != 0; i = ix.next[i-1] {
				if ix.name(i-1) == base {
					vs = append(vs, uint64(i-1)<<32|uint64(j))
					plain++
				}
			}
			return plain < need
		})
		slices.Sort(vs)
	}
	for _, v := range vs {
		if len(out) == maxNear {
			break
		}
		out = append(out, ix.symbolIn(uint32(v>>32), int(uint32(v)), 0))
	}
	if len(out) == 0 {
		return nil
	}
	ix.objectFirst(oi, out)
	kept := slices.Clone(out) // (one allocation, and one for the names)
	ix.ownNames(kept)
	return kept
}

// elsewhere lists, at most maxNear, the first of near's suggestions: name
// as it may have been mistyped (respellings) in any object, then name in
// the objects other than oi, then the kernel's wrappers of name in oi;
// pseudo-modules left out. oi is -1 when the object asked is not loaded.
// They are appended to out, their names ix's (see ownNames).
func (ix *Index) elsewhere(oi int, name string, out []Symbol) []Symbol {
	add := func(j int, n string) {
		if o := &ix.objs[j]; !o.pseudo && len(out) < maxNear {
			out, _ = ix.appendCandidates(out, o, n, maxNear-len(out))
		}
	}
	// Only the objects whose tables may file the name are probed
	// (objectsWith): a miss is asked of every loaded module.
	ix.varOnce.Do(ix.indexVariants)
	var names [8]string // (wrappers has at most 7, respellings 2)
	for _, n := range respellings(name, names[:0]) {
		ix.objectsWith(n, func(j int) bool {
			add(j, n)
			return len(out) < maxNear
		})
	}
	ix.objectsWith(name, func(j int) bool {
		if j != oi {
			add(j, name)
		}
		return len(out) < maxNear
	})
	if oi >= 0 {
		for _, n := range wrappers(name, names[:0]) {
			add(oi, n)
		}
	}
	return out
}

// syscallPrefixes are what SYSCALL_DEFINE puts before a system call's
// sys_NAME (or COMPAT_SYSCALL_DEFINE before compat_sys_NAME) on the
// architectures with syscall wrappers: x86's entry points, arm64's, and
// the sign-extending wrapper and the body (static: in kallsyms when not
// inlined). 32-bit arm has none, and keeps sys_NAME.
var syscallPrefixes = []string{"__x64_", "__ia32_", "__arm64_", "__se_", "__do_"}

// wrappers are the names the kernel gives the code a user may mean by
// name, looked for in the object asked (only: a few lookups a miss): the
// name with more or fewer leading underscores (6.1's printk is a macro
// for _printk, ext4_iget one for __ext4_iget), and for sys_NAME or
// compat_sys_NAME the functions SYSCALL_DEFINE makes (__x64_sys_NAME,
// __arm64_sys_NAME, __do_sys_NAME, ...).
//
// A clone's name (a compiler suffix: baseName) has none: it is copied
// from a symbol table, not written from the source. The names are
// appended to out (a miss passes an array of its own: nothing else is
// allocated but the names name does not hold).
func wrappers(name string, out []string) []string {
	bare := strings.TrimLeft(name, "_")
	if bare == "" || baseName(name) != name {
		return out
	}
	// "__" + bare holds the other two: the name's own when it has two
	// leading underscores or more.
	var two string
	if under := len(name) - len(bare); under >= 2 {
		two = name[under-2:]
	} else {
		two = "__" + bare
	}
	for _, n := range [...]string{two[2:], two[1:], two} {
		if n != name {
			out = append(out, n)
		}
	}
	call, ok := strings.CutPrefix(bare, "sys_")
	if !ok {
		call, ok = strings.CutPrefix(bare, "compat_sys_")
	}
	if ok && call != "" {
		for _, p := range syscallPrefixes {
			out = append(out, p+bare)
		}
	}
	return out
}

// respellings are the names a user may have meant by name: without the
// blanks around it (a spec pasted with them), in lower case (kernel
// symbols are, nearly all).
func respellings(name string, out []string) []string {
	t := strings.TrimSpace(name)
	if t != name && t != "" {
		out = append(out, t)
	}
	if l := strings.ToLower(t); l != t {
		out = append(out, l)
	}
	return out
}

// objectFirst moves the symbols of object oi to the front of near's
// suggestions, keeping their order otherwise.
func (ix *Index) objectFirst(oi int, out []Symbol) {
	slices.SortStableFunc(out, func(a, b Symbol) int {
		ao, bo := a.Object != ix.objs[oi].name, b.Object != ix.objs[oi].name
		switch {
		case ao == bo:
			return 0
		case !ao:
			return -1
		}
		return 1
	})
}

// LookupName resolves "name" or "module:name" like the kernel's
// kallsyms_lookup_name() and module_kallsyms_lookup_name(): with a module,
// the first symbol of that name in the module; without, the first in
// vmlinux, else the first in any module (newest loaded first).
func (ix *Index) LookupName(spec string) (Symbol, error) {
	obj, name := splitName(spec)
	if ix.closed {
		le := ix.closedErr(obj)
		le.Name = name
		return Symbol{}, le
	}
	i, oi, ok, miss := ix.searchName(obj, name)
	switch {
	case miss != objectOK:
		le := ix.objectErr(obj, miss)
		le.Name = name
		ix.absentNear(le, miss)
		return Symbol{}, le
	case ok:
		return ix.symbol(i, 1), nil
	}
	return Symbol{}, &LookupError{Object: ix.objs[oi].name, Name: name, Kind: ErrNotFound, Near: ix.near(oi, name), Note: localNote(name)}
}

// FindName is LookupName without the diagnostics, as Find is Lookup's.
func (ix *Index) FindName(spec string) (Symbol, bool) {
	if ix.closed {
		return Symbol{}, false
	}
	i, _, ok, miss := ix.searchName(splitName(spec))
	if miss != objectOK || !ok {
		return Symbol{}, false
	}
	return ix.symbol(i, 1), true
}

// splitName splits "module:name" ("" for no module).
func splitName(spec string) (obj, name string) {
	if obj, name, ok := strings.Cut(spec, ":"); ok {
		return obj, name
	}
	return "", spec
}

// searchName is LookupName's search: the first symbol named name in obj,
// or without one in vmlinux, then each module (firstAny). oi is the
// object a miss is reported against; miss is objectIndex's.
func (ix *Index) searchName(obj, name string) (i uint32, oi int, ok bool, miss objectMiss) {
	if obj == "" {
		i, ok = ix.firstAny(name)
		return i, 0, ok, objectOK
	}
	if oi, miss = ix.objectIndex(obj); miss != objectOK {
		return 0, 0, false, miss
	}
	i, ok = ix.first(oi, name)
	return i, oi, ok, objectOK
}

// ListsExports reports whether the index lists which symbols vmlinux
// exports to modules: its __ksymtab_<name> entries (and the tables'
// __start___ksymtab/__stop___ksymtab bounds), which a System.map and the
// /proc/kallsyms of a CONFIG_KALLSYMS_ALL kernel have (they are data
// symbols: a kernel built without it lists none).
func (ix *Index) ListsExports() bool {
	ix.exportsOnce.Do(ix.findExports)
	return ix.exports
}

// findExports finds the bounds of vmlinux's export tables: the index
// lists the exports when it lists a table that is not empty (the bounds
// and the __ksymtab_ entries are data symbols, listed together).
func (ix *Index) findExports() {
	if ix.closed || len(ix.objs) == 0 {
		return
	}
	bounds := func(table string) (lo, hi uint64) {
		s, ok1 := ix.Find(Vmlinux, "__start_"+table, 0)
		e, ok2 := ix.Find(Vmlinux, "__stop_"+table, 0)
		if ok1 && ok2 && s.Address < e.Address {
			return s.Address, e.Address
		}
		return 0, 0
	}
	lo, hi := bounds("__ksymtab")
	ix.gplLo, ix.gplHi = bounds("__ksymtab_gpl")
	ix.exports = lo < hi || ix.gplLo < ix.gplHi
}

// ksymtabPrefix names the kernel_symbol entry EXPORT_SYMBOL(name) makes.
const ksymtabPrefix = "__ksymtab_"

// FindExport is the module loader's find_symbol(): name as exported by
// vmlinux, else by a module (in /proc/kallsyms order: newest loaded
// first). vmlinux exports name when the index lists __ksymtab_<name>; a
// module exports it when its line's type letter is upper case
// (module_get_kallsym() upper-cases the symbols of its EXPORT_SYMBOL
// table) or, GPL-only, when the module also lists __ksymtab_<name> (an
// EXPORT_SYMBOL_GPL symbol stays lower case: Debian's 6.1 kernel lists
// xfrm_algo's xfrm_aalg_get_byid as "t"). Where the index does not list
// vmlinux's exports (ListsExports is false), any vmlinux symbol of that
// name is taken: the index cannot tell. Pseudo-modules never match. Like
// Find, it builds no diagnostics.
//
// gplOK is find_symbol()'s gplok: without it (a module whose license is
// not GPL-compatible), GPL-only exports are skipped: vmlinux's (GPLOnly)
// and the lower-case ones of modules.
func (ix *Index) FindExport(name string, gplOK bool) (Symbol, bool) {
	if ix.closed {
		return Symbol{}, false
	}
	if i, ok := ix.first(0, name); ok {
		if !ix.ListsExports() {
			return ix.symbol(i, 1), true
		}
		if k, ok := ix.first(0, ksymtabPrefix+name); ok && (gplOK || !ix.inGPLTable(k)) {
			return ix.symbol(i, 1), true
		}
	}
	for oi := 1; oi < len(ix.objs); oi++ {
		o := &ix.objs[oi]
		if o.pseudo {
			continue
		}
		for i := ix.find(o, name); i != 0; i = ix.next[i-1] {
			if !ix.matches(i-1, name) {
				continue
			}
			// module_get_kallsym()'s is_exported() looks in the module's
			// EXPORT_SYMBOL table only: those are upper case. An
			// EXPORT_SYMBOL_GPL one is lower case, but its
			// __ksymtab_<name> entry is listed too (CONFIG_KALLSYMS_ALL).
			if isUpper(ix.at(i - 1).typ) {
				return ix.symbol(i-1, 1), true
			}
			if gplOK {
				if _, listed := ix.first(oi, ksymtabPrefix+name); listed {
					return ix.symbol(i-1, 1), true
				}
			}
		}
	}
	return Symbol{}, false
}

// GPLOnly reports whether vmlinux exports name to GPL-compatible modules
// only (EXPORT_SYMBOL_GPL): its __ksymtab_ entry lies between
// __start___ksymtab_gpl and __stop___ksymtab_gpl. It is false when the
// index does not list them.
func (ix *Index) GPLOnly(name string) bool {
	if ix.closed || !ix.ListsExports() {
		return false
	}
	k, ok := ix.first(0, ksymtabPrefix+name)
	return ok && ix.inGPLTable(k)
}

// inGPLTable: sym k (a __ksymtab_ entry) is in the GPL-only table.
func (ix *Index) inGPLTable(k uint32) bool {
	a := ix.at(k).addr
	return a >= ix.gplLo && a < ix.gplHi
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// first finds the first symbol answering name in object oi.
func (ix *Index) first(oi int, name string) (uint32, bool) {
	for i := ix.find(&ix.objs[oi], name); i != 0; i = ix.next[i-1] {
		if ix.matches(i-1, name) {
			return i - 1, true
		}
	}
	return 0, false
}

// firstAny is kallsyms_lookup_name()'s search: vmlinux, then each module
// in order (pseudo-modules never).
func (ix *Index) firstAny(name string) (uint32, bool) {
	for oi := range ix.objs {
		if ix.objs[oi].pseudo {
			continue
		}
		if i, ok := ix.first(oi, name); ok {
			return i, true
		}
	}
	return 0, false
}

// Spec is a parsed "[object:]name[,sympos]" symbol specification.
type Spec struct {
	Object string // "vmlinux" when none was given
	Name   string
	Pos    uint64
}

func (s Spec) String() string {
	return fmt.Sprintf("%s:%s,%d", s.Object, s.Name, s.Pos)
}

// ParseSpec parses "[object:]name[,sympos]": no object (or "vmlinux")
// means vmlinux, no sympos means 0.
func ParseSpec(spec string) (Spec, error) {
	s := Spec{Object: Vmlinux}
	bad := func(format string, args ...any) (Spec, error) {
		return s, &SpecError{Spec: spec, Msg: fmt.Sprintf(format, args...)}
	}
	rest := spec
	if obj, name, ok := strings.Cut(rest, ":"); ok {
		if obj == "" {
			return bad("empty object name")
		}
		s.Object, rest = obj, name
	}
	if name, pos, ok := strings.Cut(rest, ","); ok {
		p, err := strconv.ParseUint(pos, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			// sympos is an unsigned long in the kernel.
			return bad("sympos %s is out of range (at most %d)", pos, uint64(math.MaxUint64))
		}
		if err != nil && strings.HasPrefix(pos, "-") {
			// klp_func's old_sympos is unsigned: no position before the first.
			return bad("sympos %s is negative: positions count from 1 (0: the name is unique in its object)", pos)
		}
		if err != nil {
			return bad("sympos %q is not a number", pos)
		}
		s.Pos, rest = p, name
	}
	if rest == "" {
		return bad("empty symbol name")
	}
	if len(rest) >= KSYMNameLen {
		return bad("name longer than %d bytes", KSYMNameLen-1)
	}
	s.Name = rest
	return s, nil
}

// AddrInfo is the answer of a reverse lookup.
type AddrInfo struct {
	Symbol
	Offset uint64 // address - Symbol.Address
	// Size is the distance to the next higher symbol of the object; 0 if
	// unknown: past the object's last symbol (kallsyms does not give
	// where an object ends), or no next one nearby in address order.
	Size uint64
	// Past: the address is beyond the page of the object's highest
	// symbol, so in no object as far as kallsyms tells (Addr's ok is
	// false); Symbol is the nearest one below it, for context.
	Past bool
}

// extentPage is the granule an object's extent is rounded up to: the
// kernel image ends at _end, which kallsyms lists (or a marker past it),
// and module memory is allocated in pages.
const extentPage = 4096

// String is the kernel's %pS form, name+0xoffset/0xsize [module], with
// "?" for a size that is not known.
func (a AddrInfo) String() string {
	size := "?"
	if a.Size != 0 {
		size = fmt.Sprintf("%#x", a.Size)
	}
	s := fmt.Sprintf("%s+%#x/%s", a.Name, a.Offset, size)
	if a.Object != Vmlinux {
		s += " [" + a.Object + "]"
	}
	return s
}

// Addr finds the symbol that contains address, like the kernel's
// kallsyms_lookup(): the highest symbol at or below it (the first of
// several aliases), with the offset into it and its size up to the next
// higher address in the same object. As kallsyms_lookup() finds nothing
// outside the kernel image and the modules' memory, an address past the
// page of its object's highest symbol is not found (AddrInfo.Past). O(log
// n); the address order is built on first use.
func (ix *Index) Addr(address uint64) (AddrInfo, bool) {
	ix.addrOnce.Do(ix.sortByAddr)
	b := ix.byAddr
	// First entry with addr > address.
	k, _ := slices.BinarySearchFunc(b, address, func(i uint32, a uint64) int {
		if ix.syms[i].addr <= a {
			return -1
		}
		return 1
	})
	if k == 0 {
		return AddrInfo{}, false
	}
	at := ix.syms[b[k-1]].addr
	// The first alias at that address.
	j := k - 1
	for j > 0 && ix.syms[b[j-1]].addr == at {
		j--
	}
	i := b[j]
	oi := ix.objectOf(i)
	info := AddrInfo{Symbol: ix.symbol(i, 0), Offset: address - at}
	// Usually the very next entry; give up (size unknown) after a few.
	for m := k; m < len(b) && m < k+64; m++ {
		if ix.objectOf(b[m]) == oi {
			info.Size = ix.syms[b[m]].addr - at
			break
		}
	}
	if info.Size != 0 && info.Offset >= info.Size {
		info.Size = 0
	}
	// (Absolute symbols, which are values, are not in the address order:
	// o.hi leaves them out too. A raw snapshot's o.hi is the file's word,
	// not checked on load; the symbol's own address bounds it from below.)
	if o := &ix.objs[oi]; address > max(o.hi, at)|(extentPage-1) {
		info.Past = true
		return info, false
	}
	return info, true
}

func (ix *Index) sortByAddr() {
	_ = ix.DecodeAll() // a chunk that does not decode has no addresses
	b := make([]uint32, 0, len(ix.syms))
	for i := range ix.syms {
		if t := ix.syms[i].typ; t == 'A' || t == 'a' {
			continue // absolute values are not addresses of code or data
		}
		b = append(b, uint32(i))
	}
	slices.SortStableFunc(b, func(x, y uint32) int { return cmp.Compare(ix.syms[x].addr, ix.syms[y].addr) })
	ix.byAddr = b
}
