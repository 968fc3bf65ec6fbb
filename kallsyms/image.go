// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/klpresolve/klpresolve/internal/kimage"
)

// A kernel image carries the very table /proc/kallsyms prints: with
// CONFIG_KALLSYMS, scripts/kallsyms.c writes vmlinux's symbols into
// .rodata as compressed names, a token table and their addresses, and
// kernel/kallsyms.c reads them back. This file finds those tables in an
// image that has no symbols of its own and decodes them as the kernel
// does. Three layouts are known (each label .balign 8 on 64-bit, 4 in
// 7.x):
//
//	layout     order in .rodata                                  address of symbol i
//	6.1        offsets relative_base num_syms names markers      relative_base + (u32)offsets[i]
//	           [seqs_of_names] token_table token_index
//	6.12       num_syms names markers token_table token_index    the same
//	           offsets relative_base seqs_of_names
//	7.2        num_syms names markers token_table token_index    &offsets[i] + (s32)offsets[i]
//	           offsets seqs_of_names
//
// With CONFIG_KALLSYMS_ABSOLUTE_PERCPU (x86_64 before 6.15), an offset
// that is not negative is the address itself (a per-cpu symbol's), and a
// negative one is relative_base - 1 - offset. The table is found by its
// token table, which holds the single-character tokens "0" to "9" at
// their own byte values, and checked whole: the token index, the markers
// against the names, seqs_of_names a permutation, addresses in order.

// Image layouts of the kallsyms tables, named after the first kernel
// generation that klpresolve knows to write them.
const (
	LayoutBaseRelative = "6.1"  // offsets first, relative_base; seqs_of_names from 6.2 (and 6.1 stable)
	LayoutTablesLast   = "6.12" // offsets and relative_base after the token index
	LayoutPCRelative   = "7.2"  // offsets relative to their own place; no relative_base
)

var (
	// ErrNoKallsyms: a kernel image in which no kallsyms tables are
	// found: built without CONFIG_KALLSYMS, or not a Linux kernel.
	ErrNoKallsyms = errors.New("no kallsyms tables in the kernel image")
	// ErrImage: a kernel image whose kallsyms tables are found but do
	// not decode, or an image this package does not read.
	ErrImage = errors.New("kernel image not readable")
)

// ImageError is a kernel image whose symbols cannot be read. It matches
// ErrNoKallsyms or ErrImage with errors.Is.
type ImageError struct {
	File string
	Err  error // ErrNoKallsyms or ErrImage
	Msg  string
}

func (e *ImageError) Error() string { return fmt.Sprintf("%s: %v: %s", e.File, e.Err, e.Msg) }

// Unwrap makes errors.Is(err, ErrImage) (etc.) true.
func (e *ImageError) Unwrap() error { return e.Err }

// ImageInfo says where an index read from a kernel image came from.
type ImageInfo struct {
	Kind    string // "bzImage", "arm64 Image", "EFI zboot" or "vmlinux"
	Layout  string // the tables' layout: LayoutBaseRelative, LayoutTablesLast or LayoutPCRelative
	Release string // the kernel release, from its banner ("6.12.117+deb13-amd64"); "" if none
	Banner  string // the banner, "Linux version ..." up to its line end
	Symbols int    // vmlinux's symbols in the table (kallsyms_num_syms)
	// AbsolutePercpu: the table stores per-cpu symbols' addresses
	// absolutely (CONFIG_KALLSYMS_ABSOLUTE_PERCPU, x86_64 SMP).
	AbsolutePercpu bool
	// Text is where the image starts (_text), link-time: an arm64 Image
	// says it only through its relocations.
	Text uint64
}

// maxImageSyms bounds num_syms: seqs_of_names stores indexes in 3 bytes.
const maxImageSyms = 1 << 24

// maxRecord is the longest name record: a two-byte length, then at most
// KSYM_NAME_LEN tokens (a name is at most KSYMNameLen-1 bytes, its type
// one more).
const maxRecord = 2 + KSYMNameLen

// vmImage is the vmlinux bytes of an image and how to read them.
type vmImage struct {
	name  string
	b     []byte
	order binary.ByteOrder
	// va maps an offset in b to its link-time virtual address.
	va func(off uint64) (uint64, bool)
	// rels: R_AARCH64_RELATIVE relocations by place (arm64 leaves the
	// words they fill zero in the image: --no-apply-dynamic-relocs).
	rels []relative
	// raw: an Image, whose first byte is _text's.
	raw bool
	// rodata: where the tables and the banner are (.rodata, where the
	// ELF file says); searchArea gives all of b where it does not.
	rodata [2]int
}

// searchArea is where the tables and the banner may be.
func (im *vmImage) searchArea() (lo, hi int) {
	if im.rodata[1] == 0 {
		return 0, len(im.b)
	}
	return im.rodata[0], im.rodata[1]
}

// relative is one relative relocation: the word at link-time address off
// becomes addend (plus the KASLR offset at boot).
type relative struct{ off, addend uint64 }

func (im *vmImage) errf(err error, format string, args ...any) error {
	return &ImageError{File: im.name, Err: err, Msg: fmt.Sprintf(format, args...)}
}

func (im *vmImage) u32(off int) uint32 { return im.order.Uint32(im.b[off:]) }

// word is the 8-byte word at off as the running kernel sees it: arm64's
// zero words take their relocation's addend.
func (im *vmImage) word(off int) uint64 {
	w := im.order.Uint64(im.b[off:])
	if w != 0 || im.rels == nil || im.va == nil {
		return w
	}
	if va, ok := im.va(uint64(off)); ok {
		i, found := slices.BinarySearchFunc(im.rels, va, func(r relative, v uint64) int { return cmp.Compare(r.off, v) })
		if found {
			return im.rels[i].addend
		}
	}
	return 0
}

// decodeImage decodes the kallsyms tables of a kernel image, data (a file
// Detect recognises), into a kallsyms text: "ADDRESS TYPE NAME" lines,
// in the kernel's order, with link-time addresses.
func decodeImage(name string, data []byte) ([]byte, *ImageInfo, error) {
	kind, b, err := kimage.Vmlinux(name, data)
	if err != nil {
		var e *kimage.Error
		if errors.As(err, &e) {
			return nil, nil, &ImageError{File: name, Err: ErrImage, Msg: e.Msg}
		}
		return nil, nil, err
	}
	im := &vmImage{name: name, b: b}
	switch {
	case kimage.IsARM64Image(b):
		err = im.arm64()
	default:
		err = im.elf()
	}
	if err != nil {
		return nil, nil, err
	}
	t, err := im.find()
	if err != nil {
		return nil, nil, err
	}
	text, info, err := im.decode(t)
	if err != nil {
		return nil, nil, err
	}
	info.Kind = string(kind)
	if im.raw && im.va != nil {
		info.Text, _ = im.va(0) // an Image starts at _text
	}
	lo, hi := im.searchArea()
	info.Banner, info.Release = banner(b[lo:hi])
	return text, info, nil
}

// elf reads vmlinux's program headers (a bzImage's payload keeps them,
// and its sections, without symbols): they map file offsets to addresses.
func (im *vmImage) elf() error {
	f, err := elf.NewFile(bytes.NewReader(im.b))
	if err != nil {
		return im.errf(ErrImage, "not a kernel image: %v", err)
	}
	if f.Class != elf.ELFCLASS64 {
		return im.errf(ErrImage, "a 32-bit kernel (%s): klpresolve reads the kallsyms tables of 64-bit kernels", f.Machine)
	}
	im.order = f.ByteOrder
	var loads []elf.ProgHeader
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			loads = append(loads, p.ProgHeader)
		}
	}
	if len(loads) == 0 {
		return im.errf(ErrImage, "an ELF file with no loadable segment, not a kernel image")
	}
	im.va = func(off uint64) (uint64, bool) {
		for _, p := range loads {
			if off >= p.Off && off-p.Off < p.Filesz {
				return p.Vaddr + off - p.Off, true
			}
		}
		return 0, false
	}
	// kallsyms' tables and the banner are in .rodata (scripts/kallsyms.c,
	// init/version-timestamp.c).
	if r := f.Section(".rodata"); r != nil && r.Type == elf.SHT_PROGBITS && r.Offset+r.Size <= uint64(len(im.b)) {
		im.rodata = [2]int{int(r.Offset), int(r.Offset + r.Size)}
	}
	// arm64's vmlinux keeps its words zero too; .rela.dyn says what they
	// become.
	if s := f.Section(".rela.dyn"); s != nil && f.Machine == elf.EM_AARCH64 && s.Type == elf.SHT_RELA && s.Offset+s.Size <= uint64(len(im.b)) {
		im.rels = relatives(im.b[s.Offset:s.Offset+s.Size], im.order)
	}
	return nil
}

// arm64 reads an arm64 Image: vmlinux's bytes from _text, with no
// program headers to say where _text was linked. Its .rela.dyn does: the
// relocations' places are link-time addresses of the Image's zero words.
func (im *vmImage) arm64() error {
	im.raw = true
	im.order = binary.ByteOrder(binary.LittleEndian)
	if kimage.ARM64BigEndian(im.b) {
		im.order = binary.BigEndian
	}
	im.rels = findRelatives(im.b, im.order)
	if len(im.rels) == 0 {
		// Packed relocations (CONFIG_RELR, Debian's 6.12 and later):
		// the words hold their values, and where _text was linked is
		// worked out from them if the tables need it (pcBase).
		im.rels = nil
		return nil
	}
	text, err := im.linkedAt()
	if err != nil {
		return err
	}
	n := uint64(len(im.b))
	im.va = func(off uint64) (uint64, bool) { return text + off, off < n }
	return nil
}

// relEntSize is an Elf64_Rela's size; rRelative is R_AARCH64_RELATIVE.
const (
	relEntSize = 24
	rRelative  = uint64(elf.R_AARCH64_RELATIVE)
	// minRelatives: a shorter run of relocation-like entries is not
	// .rela.dyn (Debian's arm64 kernels have 150,000 and more).
	minRelatives = 64
)

// relatives reads the relative relocations of a .rela.dyn, sorted by
// place.
func relatives(b []byte, order binary.ByteOrder) []relative {
	var rs []relative
	for i := 0; i+relEntSize <= len(b); i += relEntSize {
		if order.Uint64(b[i+8:]) == rRelative {
			rs = append(rs, relative{order.Uint64(b[i:]), order.Uint64(b[i+16:])})
		}
	}
	slices.SortFunc(rs, func(a, b relative) int { return cmp.Compare(a.off, b.off) })
	return rs
}

// findRelatives finds .rela.dyn in an image without section headers: the
// longest run of 8-aligned Elf64_Rela entries of type RELATIVE (read a
// word at a time: their r_info is such a word).
func findRelatives(b []byte, order binary.ByteOrder) []relative {
	isRel := func(at int) bool {
		return at >= 0 && at+relEntSize <= len(b) && order.Uint64(b[at+8:]) == rRelative
	}
	best, bestLen := 0, 0
	for at := 8; at+relEntSize <= len(b)+8; at += 8 {
		if order.Uint64(b[at:]) != rRelative {
			continue
		}
		start := at - 8
		for isRel(start - relEntSize) {
			start -= relEntSize
		}
		end := start
		for isRel(end) {
			end += relEntSize
		}
		if n := (end - start) / relEntSize; n > bestLen {
			best, bestLen = start, n
		}
		at = max(at, end)
	}
	if bestLen < minRelatives {
		return nil
	}
	return relatives(b[best:best+bestLen*relEntSize], order)
}

// imageAlign divides the address an arm64 Image is linked at
// (KIMAGE_VADDR: MODULES_END, a multiple of 2 GiB since 6.5 and of 128
// MiB before): 64 KiB, the Image's own alignment (SEGMENT_ALIGN), is
// asked for, which is less.
const imageAlign = 64 << 10

// linkedAt is where an arm64 Image's first byte (_text) was linked:
// every relative relocation places a word inside the Image, and the
// linker left each such word zero (or, rarely, its value). Of the aligned bases that put every
// place inside the Image, the one where every placed word is zero; a
// tie, or none, is an error.
func (im *vmImage) linkedAt() (uint64, error) {
	rs, n := im.rels, uint64(len(im.b))
	lo, hi := rs[0].off, rs[len(rs)-1].off
	if hi-lo > n-8 {
		return 0, im.errf(ErrImage, "its relocations span %#x bytes, more than the Image's %d", hi-lo, n)
	}
	// The word is zero, or (a few, in Debian's 6.1) already its value.
	zeroAt := func(base uint64, r relative) bool {
		off := r.off - base
		if r.off < base || off > n-8 {
			return false
		}
		w := im.order.Uint64(im.b[off:])
		return w == 0 || w == r.addend
	}
	// A sample first (most bases fail at once), then every relocation.
	step := max(1, len(rs)/512)
	var found []uint64
	for base := (hi + 8 - n + imageAlign - 1) &^ (imageAlign - 1); base <= lo; base += imageAlign {
		ok := true
		for i := 0; i < len(rs) && ok; i += step {
			ok = zeroAt(base, rs[i])
		}
		for i := 0; i < len(rs) && ok; i++ {
			ok = zeroAt(base, rs[i])
		}
		if ok {
			found = append(found, base)
		}
		if base+imageAlign < base {
			break // the top of the address space
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, im.errf(ErrImage, "no address puts its %d relocations on zero words: not an Image as the kernel's build leaves it", len(rs))
	default:
		return 0, im.errf(ErrImage, "its relocations fit as well at %#x as at %#x: where it was linked is not known", found[0], found[1])
	}
}

// pcBase is where an arm64 Image without relocation records was linked
// (its _text), for tables whose addresses are relative to _text:
// KIMAGE_VADDR, which is MODULES_END (arch/arm64/include/asm/memory.h:
// _PAGE_END(VA_BITS_MIN) + MODULES_VSIZE), for the VA_BITS_MIN and
// MODULES_VSIZE (128 MiB before 6.5, 2 GiB since) the kernel may have
// been built with. Its words hold their values, and the right base is
// the one at which many of them point exactly at a symbol.
func (im *vmImage) pcBase(t tables) (uint64, error) {
	// The symbols' places from _text, in the table's (address) order.
	rel := make([]uint64, t.n)
	for i := range t.n {
		at := t.offsets + 4*i
		rel[i] = uint64(at) + uint64(int64(int32(im.u32(at))))
	}
	if !slices.IsSorted(rel) {
		slices.Sort(rel)
	}
	n := uint64(len(im.b))
	var bases []uint64
	for _, vaBits := range []uint{48, 47, 42, 39, 36} {
		for _, vsize := range []uint64{2 << 30, 128 << 20} {
			bases = append(bases, -(uint64(1)<<(vaBits-1))+vsize)
		}
	}
	// One word in pointerStride is enough: they are many.
	const pointerStride = 8
	hits := make([]int, len(bases))
	for off := 0; off+8 <= len(im.b); off += 8 * pointerStride {
		w := im.order.Uint64(im.b[off:])
		for k, base := range bases {
			if w-base < n {
				if _, ok := slices.BinarySearch(rel, w-base); ok {
					hits[k]++
				}
			}
		}
	}
	best, bestN, second := uint64(0), 0, 0
	for k, h := range hits {
		switch {
		case h > bestN:
			best, bestN, second = bases[k], h, bestN
		case h > second:
			second = h
		}
	}
	// minPointers: Debian's arm64 Images hold some 100,000 pointers to
	// their symbols, a word in pointerStride of them sampled.
	const minPointers = 100
	if bestN < minPointers || second*10 > bestN {
		return 0, im.errf(ErrImage, "where the Image was linked is not known: no base address of an arm64 kernel has its words point at its symbols (best %#x: %d words, next %d)", best, bestN, second)
	}
	return best, nil
}

// tables is where find found the kallsyms tables, as offsets in the
// image's bytes.
type tables struct {
	layout       string
	algn         int // each label's alignment
	numSyms      int // kallsyms_num_syms
	n            int // its value
	names        int
	markers, m   int // kallsyms_markers and its count
	tokenTable   int
	tokenIndex   int
	offsets      int
	relativeBase int // -1 for none
	seqs         int // -1 for none
	tokens       [256][]byte
}

// digitTokens: every kernel's symbols use the ten digits, and a byte
// value the names use stays a token of itself (scripts/kallsyms.c's
// build_initial_token_table()): tokens 0x30 to 0x39 are "0" to "9".
var digitTokens = []byte("0\x001\x002\x003\x004\x005\x006\x007\x008\x009\x00")

// find finds the tables: first the token table and its index, then the
// markers and names before them, then offsets where the layout puts
// them.
func (im *vmImage) find() (tables, error) {
	var lastErr error
	from, hi := im.searchArea()
	for {
		h := bytes.Index(im.b[from:hi], digitTokens)
		if h < 0 {
			break
		}
		p := from + h
		from = p + 1
		t, ok := im.tokenTables(p)
		if !ok {
			continue
		}
		if err := im.namesBefore(&t); err != nil {
			lastErr = err
			continue
		}
		return t, nil
	}
	if lastErr != nil {
		return tables{}, lastErr
	}
	return tables{}, im.errf(ErrNoKallsyms, "no kallsyms token table (a kernel built without CONFIG_KALLSYMS has none; the kernel's System.map or /proc/kallsyms lists its symbols)")
}

// tokenTables finds kallsyms_token_table, whose token "0" is at p, by the
// kallsyms_token_index after it: 256 offsets into the table, token 0x30's
// being p's.
func (im *vmImage) tokenTables(p int) (tables, bool) {
	const span = 256 * (KSYMNameLen + 1) // the table's most
	for x := (p + 1 + 3) &^ 3; x+512 <= len(im.b) && x-p < span; x += 4 {
		d := int(im.order.Uint16(im.b[x+2*0x30:]))
		if im.order.Uint16(im.b[x:]) != 0 || d > p {
			continue
		}
		tt := p - d
		if tt%4 != 0 {
			continue
		}
		var t tables
		t.tokenTable, t.tokenIndex = tt, x
		if im.tokenList(&t) {
			return t, true
		}
	}
	return tables{}, false
}

// tokenList checks and reads the token table at t.tokenTable by its index
// at t.tokenIndex: 256 NUL-terminated tokens one after the other, the
// index ending the table's alignment after the last.
func (im *vmImage) tokenList(t *tables) bool {
	at := t.tokenTable
	for i := range 256 {
		if int(im.order.Uint16(im.b[t.tokenIndex+2*i:])) != at-t.tokenTable {
			return false
		}
		if at >= t.tokenIndex {
			return false
		}
		end := bytes.IndexByte(im.b[at:t.tokenIndex], 0)
		if end < 0 {
			return false
		}
		t.tokens[i] = im.b[at : at+end]
		at += end + 1
	}
	for i := 0x30; i <= 0x39; i++ {
		if len(t.tokens[i]) != 1 || t.tokens[i][0] != byte(i) {
			return false
		}
	}
	return t.tokenIndex-at < 8 && allZero(im.b[at:t.tokenIndex])
}

// namesBefore finds the markers and names (and the rest, by the layout)
// of the token table t.
func (im *vmImage) namesBefore(t *tables) error {
	tt := t.tokenTable
	// 6.12 and 7.2: the markers end at the token table (or 4 bytes
	// before it: .balign 8).
	for _, end := range []int{tt, tt - 4} {
		ms, m, ok := im.markersEndingAt(end)
		if !ok {
			continue
		}
		for _, algn := range []int{8, 4} {
			if ms%algn != 0 || (tt-(ms+4*m)) >= algn {
				continue
			}
			if im.namesFor(t, ms, m, algn, 0) && im.afterIndex(t) {
				return nil
			}
		}
	}
	// 6.1: seqs_of_names (3 bytes a symbol) between the markers and the
	// token table, each label .balign 8.
	for q := (tt - 3) &^ 7; q >= 0 && tt-q <= 3*maxImageSyms+8; q -= 8 {
		for n := (tt - q - 7 + 2) / 3; 3*n <= tt-q; n++ {
			if n < 1 || q+3*n > tt || (q+3*n+7)&^7 != tt {
				continue
			}
			m := (n + 255) / 256
			for _, end := range []int{q, q - 4} {
				ms := end - 4*m
				if ms < 0 || ms%8 != 0 || im.u32(ms) != 0 || !im.markersAt(ms, m) {
					continue
				}
				if im.namesFor(t, ms, m, 8, n) && im.permutation(q, n) && im.beforeNames(t) {
					t.seqs = q
					return nil
				}
			}
		}
	}
	return im.errf(ErrImage, "a kallsyms token table at %#x, but no names and markers before it that decode", tt)
}

// markersEndingAt reads kallsyms_markers backwards from end: offsets of
// every 256th name record, from 0, each 512 to 256*maxRecord bytes past
// the one before.
func (im *vmImage) markersEndingAt(end int) (start, m int, ok bool) {
	if end < 4 || end%4 != 0 {
		return 0, 0, false
	}
	at := end - 4
	for im.u32(at) != 0 {
		if at < 4 {
			return 0, 0, false
		}
		d := int64(im.u32(at)) - int64(im.u32(at-4))
		if d < 2*256 || d > 256*maxRecord {
			return 0, 0, false
		}
		at -= 4
	}
	return at, (end - at) / 4, true
}

// markersAt: m markers at ms, as markersEndingAt reads them.
func (im *vmImage) markersAt(ms, m int) bool {
	s, n, ok := im.markersEndingAt(ms + 4*m)
	return ok && s == ms && n == m
}

// namesFor finds kallsyms_num_syms and kallsyms_names before the m markers
// at ms, labels aligned to algn: num_syms holds n (when n is not 0) or a
// count the markers allow, and the names decode to records the markers
// find, ending where the markers start.
func (im *vmImage) namesFor(t *tables, ms, m, algn, n int) bool {
	last := int(im.u32(ms + 4*(m-1)))
	// names starts at most 256 records of maxRecord bytes before the
	// last marker's record.
	top := ms - last - algn
	for ns := top &^ (algn - 1); ns >= 0 && top-ns <= 256*maxRecord+algn; ns -= algn {
		v := int(im.u32(ns))
		if v == 0 || (n != 0 && v != n) || (v+255)/256 != m {
			continue
		}
		names := ns + max(4, algn)
		if names+last > ms {
			continue
		}
		if end, ok := im.records(names, v, ms, m); ok && ms-end < algn && allZero(im.b[end:ms]) {
			t.algn, t.numSyms, t.n, t.names, t.markers, t.m = algn, ns, v, names, ms, m
			return true
		}
	}
	return false
}

// records walks n name records from names, checking each 256th against
// the markers at ms, and returns where they end.
func (im *vmImage) records(names, n, ms, m int) (int, bool) {
	at := names
	for i := range n {
		if i%256 == 0 && int(im.u32(ms+4*(i/256))) != at-names {
			return 0, false
		}
		if at >= ms {
			return 0, false
		}
		l := int(im.b[at])
		at++
		if l&0x80 != 0 {
			if at >= ms {
				return 0, false
			}
			l = l&0x7f | int(im.b[at])<<7
			at++
		}
		if l == 0 || l > KSYMNameLen {
			return 0, false
		}
		at += l
	}
	return at, at <= ms
}

// afterIndex places the offsets (and relative_base and seqs_of_names)
// after the token index, as 6.12 and 7.2 do; or before num_syms, as 6.1
// (without seqs_of_names: before 6.2) did.
func (im *vmImage) afterIndex(t *tables) bool {
	n, b := t.n, len(im.b)
	align := func(x, a int) int { return (x + a - 1) &^ (a - 1) }
	t.relativeBase, t.seqs = -1, -1
	if t.algn == 4 { // 7.2
		off := t.tokenIndex + 512
		if seqs := off + 4*n; seqs+3*n <= b && im.permutation(seqs, n) {
			t.layout, t.offsets, t.seqs = LayoutPCRelative, off, seqs
			return true
		}
		return false
	}
	off := align(t.tokenIndex+512, 8)
	rb := align(off+4*n, 8)
	if seqs := rb + 8; seqs+3*n <= b && im.permutation(seqs, n) {
		t.layout, t.offsets, t.relativeBase, t.seqs = LayoutTablesLast, off, rb, seqs
		return true
	}
	return im.beforeNames(t)
}

// beforeNames places 6.1's offsets and relative_base before num_syms.
func (im *vmImage) beforeNames(t *tables) bool {
	if t.algn != 8 {
		return false
	}
	rb := t.numSyms - 8
	off := rb - (4*t.n+7)&^7
	if off < 0 {
		return false
	}
	t.layout, t.offsets, t.relativeBase = LayoutBaseRelative, off, rb
	return true
}

// permutation: n 3-byte big-endian indexes at at, each of 0..n-1 once
// (kallsyms_seqs_of_names).
func (im *vmImage) permutation(at, n int) bool {
	if at < 0 || at+3*n > len(im.b) {
		return false
	}
	seen := make([]uint64, (n+63)/64)
	for i := range n {
		p := im.b[at+3*i:]
		v := int(p[0])<<16 | int(p[1])<<8 | int(p[2])
		if v >= n || seen[v/64]&(1<<(v%64)) != 0 {
			return false
		}
		seen[v/64] |= 1 << (v % 64)
	}
	return true
}

// decode expands every name and computes every address
// (kallsyms_expand_symbol(), kallsyms_sym_address()), and writes them as
// a kallsyms text.
func (im *vmImage) decode(t tables) ([]byte, *ImageInfo, error) {
	info := &ImageInfo{Layout: t.layout, Symbols: t.n}
	addrs := make([]uint64, t.n)
	switch t.layout {
	case LayoutPCRelative:
		va := im.va
		if va == nil {
			text, err := im.pcBase(t)
			if err != nil {
				return nil, nil, err
			}
			va = func(off uint64) (uint64, bool) { return text + off, true }
			im.va = va
		}
		for i := range addrs {
			at := t.offsets + 4*i
			a, ok := va(uint64(at))
			if !ok {
				return nil, nil, im.errf(ErrImage, "kallsyms_offsets at %#x is outside the image's loaded segments", at)
			}
			addrs[i] = a + uint64(int64(int32(im.u32(at))))
		}
	default:
		base := im.word(t.relativeBase)
		if base == 0 {
			return nil, nil, im.errf(ErrImage, "kallsyms_relative_base at %#x is zero, and no relocation fills it", t.relativeBase)
		}
		// Absolute per-cpu symbols: offsets of the others are negative
		// (relative_base - 1 - address), which plain offsets never are.
		for i := range t.n {
			if int32(im.u32(t.offsets+4*i)) < 0 {
				info.AbsolutePercpu = true
				break
			}
		}
		for i := range addrs {
			o := im.u32(t.offsets + 4*i)
			switch {
			case !info.AbsolutePercpu:
				addrs[i] = base + uint64(o)
			case int32(o) >= 0:
				addrs[i] = uint64(o)
			default:
				addrs[i] = base - 1 - uint64(int64(int32(o)))
			}
		}
	}
	// A name holds no blank or NUL where none of its tokens does.
	var badToken [256]bool
	for i, tok := range t.tokens {
		badToken[i] = bytes.ContainsAny(tok, " \t\n\r\x00")
	}
	out := make([]byte, 0, t.n*48)
	var name []byte
	at := t.names
	for i := range t.n {
		l := int(im.b[at])
		at++
		if l&0x80 != 0 {
			l = l&0x7f | int(im.b[at])<<7
			at++
		}
		name = name[:0]
		bad := false
		for _, tok := range im.b[at : at+l] {
			name = append(name, t.tokens[tok]...)
			bad = bad || badToken[tok]
		}
		at += l
		if len(name) < 2 {
			return nil, nil, im.errf(ErrImage, "kallsyms symbol %d decodes to %q, no type and name", i, name)
		}
		if len(name)-1 >= KSYMNameLen {
			return nil, nil, im.errf(ErrImage, "kallsyms symbol %d decodes to a name of %d bytes, longer than the kernel's KSYM_NAME_LEN-1 (%d)", i, len(name)-1, KSYMNameLen-1)
		}
		if bad {
			return nil, nil, im.errf(ErrImage, "kallsyms symbol %d decodes to %q, which holds a blank or a NUL", i, name)
		}
		if i > 0 && addrs[i] < addrs[i-1] {
			return nil, nil, im.errf(ErrImage, "kallsyms symbol %d (%s) at %#x is below the one before it (%#x): the table is in address order", i, name[1:], addrs[i], addrs[i-1])
		}
		var hexAddr [16]byte
		for k, a := 15, addrs[i]; k >= 0; k, a = k-1, a>>4 {
			hexAddr[k] = "0123456789abcdef"[a&15]
		}
		out = append(out, hexAddr[:]...)
		out = append(out, ' ', name[0], ' ')
		out = append(out, name[1:]...)
		out = append(out, '\n')
		if string(name[1:]) == "_text" && info.Text == 0 {
			info.Text = addrs[i]
		}
	}
	if im.raw && im.va == nil && info.Text != 0 {
		// Packed relocations and an absolute table: _text says where the
		// Image was linked.
		text, n := info.Text, uint64(len(im.b))
		im.va = func(off uint64) (uint64, bool) { return text + off, off < n }
	}
	return out, info, nil
}

// banner finds linux_banner (init/version-timestamp.c): "Linux version
// RELEASE (BUILDER) ..." and the release in it.
func banner(b []byte) (line, release string) {
	const prefix = "Linux version "
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte(prefix))
		if i < 0 {
			return "", ""
		}
		at := from + i
		from = at + 1
		rest := b[at+len(prefix):]
		if len(rest) == 0 || rest[0] < '0' || rest[0] > '9' {
			continue // "Linux version %s": a format, not the banner
		}
		end := bytes.IndexAny(rest[:min(len(rest), 512)], "\n\x00")
		if end < 0 {
			continue
		}
		rel, _, _ := bytes.Cut(rest[:end], []byte(" "))
		return prefix + string(rest[:end]), string(rel)
	}
}

// textStart: a kallsyms or System.map text may begin with b (an address,
// or blanks before one).
func textStart(b byte) bool {
	return hexval[b] >= 0 || b == ' ' || b == '\t' || b == '\n' || b == '\r'
}

// maybeImage: head, a file's first bytes, is a kernel image's, not a
// text's or a snapshot's.
func maybeImage(head []byte) bool {
	return len(head) > 0 && !textStart(head[0]) && !isSnapshot(head) && kimage.Detect(head) != kimage.None
}

// fromImage builds the index of the kallsyms tables of a kernel image,
// data, whose addresses are link-time (Image says where they came from).
func fromImage(name string, data []byte, opts *Options) (*Index, error) {
	text, info, err := decodeImage(name, data)
	if err != nil {
		return nil, err
	}
	p := newParser(name, opts)
	p.dispatch(text, 0, len(text), &wholeInput{data: text})
	ix, err := p.finish(text)
	if err != nil {
		return nil, err
	}
	ix.image = info
	return ix, nil
}

// Image says which kernel image the index was read from, its tables'
// layout and the kernel's release; false for an index read from a text or
// a snapshot.
func (ix *Index) Image() (ImageInfo, bool) {
	if ix.image == nil {
		return ImageInfo{}, false
	}
	return *ix.image, true
}
