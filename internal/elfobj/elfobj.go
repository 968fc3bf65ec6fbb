// SPDX-License-Identifier: GPL-2.0-only

// Package elfobj is the project's one hardened reader for relocatable ELF
// objects (kernel modules): 32- and 64-bit, little- and big-endian. The
// whole file is in memory; every offset, size, count, index and string
// reference is checked against it before use, so no input can make it
// panic or allocate more than the file's own size justifies.
package elfobj

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/input"
)

// ErrMalformed is wrapped by every *FormatError (diag.ErrMalformed).
var ErrMalformed = diag.ErrMalformed

// FormatError says what is wrong with a file, and where: the public
// diag.FormatError, so that callers of klpresolve's packages can name it.
type FormatError = diag.FormatError

// Section is one section header, validated.
type Section struct {
	Index     int
	Name      string
	Type      elf.SectionType
	Flags     elf.SectionFlag
	Addr      uint64
	Offset    uint64
	Size      uint64
	Link      uint32
	Info      uint32
	Addralign uint64
	Entsize   uint64
}

// Symbol is one symbol table entry.
type Symbol struct {
	Index   int
	Name    string
	NameOff uint32
	Value   uint64
	Size    uint64
	Info    uint8
	Other   uint8
	Shndx   uint16
}

// Bind and Type decode Info.
func (s *Symbol) Bind() elf.SymBind { return elf.ST_BIND(s.Info) }
func (s *Symbol) Type() elf.SymType { return elf.ST_TYPE(s.Info) }

// Reloc is one REL or RELA entry.
type Reloc struct {
	Offset uint64
	Sym    uint32
	Type   uint32
	Addend int64
}

// File is a parsed relocatable object.
type File struct {
	Name     string
	Data     []byte
	Class    elf.Class
	Order    binary.ByteOrder
	Machine  elf.Machine
	Type     elf.Type
	Flags    uint32
	Sections []Section
	// Symtab is the index of the .symtab section (0 if none).
	Symtab int
	// SymtabCount is how many SHT_SYMTAB sections the file has.
	SymtabCount int
	Symbols     []Symbol // from .symtab; Symbols[0] is the null symbol
}

func (f *File) errf(sec string, format string, args ...any) error {
	return &FormatError{File: f.Name, Section: sec, Msg: fmt.Sprintf(format, args...)}
}

// notELF names what a file that is not ELF looks like, when it is one of
// the other inputs klpresolve takes: a symbol list or a snapshot given
// where a module was expected.
func notELF(data []byte) string {
	line := data[:min(len(data), 200)]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	switch {
	case bytes.HasPrefix(data, []byte("KLPSNAP\x00")):
		return ": a klpresolve symbol snapshot, not a module"
	case isSymbolLine(line):
		return ": it reads like a kernel symbol list (kallsyms, System.map), not a module"
	}
	return ""
}

// isSymbolLine reports whether line reads like a /proc/kallsyms or
// System.map line, "ADDRESS TYPE NAME" (8 to 16 hex digits, a type
// letter), perhaps with a "\t[module]" after it. (By hand: a regexp
// compiled at package initialization cost every run 0.13 ms.)
func isSymbolLine(line []byte) bool {
	f := bytes.Fields(line)
	if len(f) < 3 || len(f) > 4 || len(f[0]) < 8 || len(f[0]) > 16 || len(f[1]) != 1 {
		return false
	}
	for _, c := range f[0] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	if t := f[1][0]; !('a' <= t|0x20 && t|0x20 <= 'z' || t == '?') {
		return false
	}
	return len(f) == 3 || f[3][0] == '[' && f[3][len(f[3])-1] == ']'
}

// Is64 reports a 64-bit file.
func (f *File) Is64() bool { return f.Class == elf.ELFCLASS64 }

// CheckHead returns the error Parse would give a file that begins with
// head when head is neither ELF (its magic) nor compressed (whose
// content Parse's callers decompress first), and nil otherwise: a reader
// of a stream (input.ReadFileChecked) stops at a text or /dev/zero
// instead of reading it all. A head shorter than the magic is left to
// Parse.
func CheckHead(name string, head []byte) error {
	if bytes.HasPrefix(head, []byte(elf.ELFMAG)) || bytes.HasPrefix([]byte(elf.ELFMAG), head) || input.Detect(head) != input.None {
		return nil
	}
	f := &File{Name: name, Data: head}
	return f.errf("", "not an ELF file (no \\x7fELF magic)%s", notELF(head))
}

// ParseHeader reads only data's ELF header: its class, byte order, type,
// machine and flags (for a caller that hands the bytes on, as the CLI's
// architecture check does before klp.Convert). name is used in errors.
func ParseHeader(name string, data []byte) (*File, error) {
	f := &File{Name: name, Data: data}
	if len(data) < 16 || !bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
		return nil, f.errf("", "not an ELF file (no \\x7fELF magic)%s", notELF(data))
	}
	f.Class = elf.Class(data[elf.EI_CLASS])
	switch elf.Data(data[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		f.Order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		f.Order = binary.BigEndian
	default:
		return nil, f.errf("", "unknown data encoding %d", data[elf.EI_DATA])
	}
	hdrSize := 52
	switch f.Class {
	case elf.ELFCLASS64:
		hdrSize = 64
	case elf.ELFCLASS32:
	default:
		return nil, f.errf("", "unknown class %d", data[elf.EI_CLASS])
	}
	if len(data) < hdrSize {
		return nil, f.errf("", "truncated ELF header (%d of %d bytes)", len(data), hdrSize)
	}
	o := f.Order
	f.Type = elf.Type(o.Uint16(data[16:]))
	f.Machine = elf.Machine(o.Uint16(data[18:]))
	if f.Is64() {
		f.Flags = o.Uint32(data[48:])
	} else {
		f.Flags = o.Uint32(data[36:])
	}
	return f, nil
}

// Parse validates data as an ELF object. name is used in errors.
func Parse(name string, data []byte) (*File, error) {
	f, err := ParseHeader(name, data)
	if err != nil {
		return nil, err
	}
	o := f.Order
	var shoff uint64
	var shentsize, shnum, shstrndx int
	shentWant := 40
	if f.Is64() {
		shentWant = 64
		shoff = o.Uint64(data[40:])
		shentsize, shnum, shstrndx = int(o.Uint16(data[58:])), int(o.Uint16(data[60:])), int(o.Uint16(data[62:]))
	} else {
		shoff = uint64(o.Uint32(data[32:]))
		shentsize, shnum, shstrndx = int(o.Uint16(data[46:])), int(o.Uint16(data[48:])), int(o.Uint16(data[50:]))
	}
	if shoff == 0 {
		return nil, f.errf("", "no section header table")
	}
	// elf_validity_check(): e_shentsize is sizeof(Elf_Shdr), exactly.
	if shentsize != shentWant {
		return nil, f.errf("", "section header entry size %d is not %d: the kernel refuses it (\"Invalid ELF section header size\")", shentsize, shentWant)
	}
	if shoff >= uint64(len(data)) {
		return nil, f.errf("", "section header table at %#x is past the end of the file (%d bytes)", shoff, len(data))
	}
	if uint64(len(data))-shoff < uint64(shentsize) {
		return nil, f.errf("", "section header table at %#x runs past the end of the file (%d bytes)", shoff, len(data))
	}
	// elf_validity_check() reads e_shnum and e_shstrndx as they are: a
	// file with ELF's extended numbering (e_shnum 0 and the count in
	// section 0's sh_size, for 65,280 sections or more) is refused.
	if shnum == 0 {
		return nil, f.errf("", "no sections (e_shnum 0: extended section numbering, which the kernel's loader refuses: \"Invalid ELF section name index\")")
	}
	if end := shoff + uint64(shnum)*uint64(shentsize); end > uint64(len(data)) {
		return nil, f.errf("", "section header table (%d entries at %#x) runs past the end of the file (%d bytes)", shnum, shoff, len(data))
	}
	if shstrndx == 0 || shstrndx >= shnum {
		return nil, f.errf("", "section name table index %d out of range (%d sections)", shstrndx, shnum)
	}
	// "The code assumes that section 0 has a length of zero and an addr
	// of zero" (elf_validity_check()): the loader refuses any other.
	var first Section
	f.readSection(&first, data[shoff:])
	if first.Type != elf.SHT_NULL || first.Size != 0 || first.Addr != 0 {
		return nil, f.errf("[0]", "is not the null section (type %v, %d bytes at address %#x): the kernel refuses it (\"ELF Spec violation: section 0 type(%d)!=SH_NULL or non-zero len or addr\")",
			first.Type, first.Size, first.Addr, uint32(first.Type))
	}
	f.Sections = make([]Section, shnum)
	for i := range f.Sections {
		// Decoded in place: the records hold a pointer (Name), and
		// building one aside and copying it in cost more than decoding it.
		s := &f.Sections[i]
		f.readSection(s, data[shoff+uint64(i*shentsize):])
		s.Index = i
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL {
			if s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset {
				return nil, f.errf(fmt.Sprintf("[%d]", i), "claims %d bytes at offset %#x, past the end of the file (%d bytes)", s.Size, s.Offset, len(data))
			}
		}
	}
	strs := &f.Sections[shstrndx]
	if strs.Type != elf.SHT_STRTAB {
		return nil, f.errf("", "section name table [%d] is not a string table", shstrndx)
	}
	shstrS := string(data[strs.Offset : strs.Offset+strs.Size])
	for i := range f.Sections {
		off := f.rawNameOff(data[shoff+uint64(i*shentsize):])
		n, ok := cstring(shstrS, off)
		if !ok {
			return nil, f.errf(fmt.Sprintf("[%d]", i), "name offset %#x is outside the section name table or not NUL-terminated", off)
		}
		f.Sections[i].Name = n
	}
	// The first symbol table is the one (setup_load_info() on 6.1); a
	// later kernel refuses more than one (elf_validity_cache_index_sym()),
	// which the caller tells from SymtabCount.
	for i := range f.Sections {
		if f.Sections[i].Type == elf.SHT_SYMTAB {
			if f.Symtab == 0 {
				f.Symtab = i
			}
			f.SymtabCount++
		}
	}
	if f.Symtab != 0 {
		if err := f.readSymbols(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *File) rawNameOff(b []byte) uint32 { return f.Order.Uint32(b) }

// le64 reports an ELF64 little-endian file (x86_64, arm64, ppc64le,
// riscv64): its tables are decoded without the ByteOrder interface,
// whose calls do not inline.
func (f *File) le64() bool {
	return f.Is64() && f.Order == binary.ByteOrder(binary.LittleEndian)
}

// readSection decodes the section header in b into s, all but its
// Index and Name.
func (f *File) readSection(s *Section, b []byte) {
	switch o := f.Order; {
	case f.le64():
		b := (*[64]byte)(b)
		le := binary.LittleEndian
		s.Type, s.Flags = elf.SectionType(le.Uint32(b[4:])), elf.SectionFlag(le.Uint64(b[8:]))
		s.Addr, s.Offset, s.Size = le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
		s.Link, s.Info = le.Uint32(b[40:]), le.Uint32(b[44:])
		s.Addralign, s.Entsize = le.Uint64(b[48:]), le.Uint64(b[56:])
	case f.Is64():
		s.Type, s.Flags = elf.SectionType(o.Uint32(b[4:])), elf.SectionFlag(o.Uint64(b[8:]))
		s.Addr, s.Offset, s.Size = o.Uint64(b[16:]), o.Uint64(b[24:]), o.Uint64(b[32:])
		s.Link, s.Info = o.Uint32(b[40:]), o.Uint32(b[44:])
		s.Addralign, s.Entsize = o.Uint64(b[48:]), o.Uint64(b[56:])
	default:
		s.Type, s.Flags = elf.SectionType(o.Uint32(b[4:])), elf.SectionFlag(o.Uint32(b[8:]))
		s.Addr, s.Offset, s.Size = uint64(o.Uint32(b[12:])), uint64(o.Uint32(b[16:])), uint64(o.Uint32(b[20:]))
		s.Link, s.Info = o.Uint32(b[24:]), o.Uint32(b[28:])
		s.Addralign, s.Entsize = uint64(o.Uint32(b[32:])), uint64(o.Uint32(b[36:]))
	}
}

// cstring returns the NUL-terminated string at off in tab: a part of
// tab, which the names of a table share (one copy of the table, not one
// allocation per name).
func cstring(tab string, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", false
	}
	i := strings.IndexByte(tab[off:], 0)
	if i < 0 {
		return "", false
	}
	return tab[off : int(off)+i], true
}

// SectionData returns the bytes of s (nil for SHT_NOBITS). Parse has
// checked that they lie inside the file.
func (f *File) SectionData(s *Section) []byte {
	if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
		return nil
	}
	return f.Data[s.Offset : s.Offset+s.Size]
}

// SymEntSize is the size of one symbol table entry.
func (f *File) SymEntSize() int {
	if f.Is64() {
		return 24
	}
	return 16
}

func (f *File) readSymbols() error {
	st := &f.Sections[f.Symtab]
	es := uint64(f.SymEntSize())
	if st.Entsize != es {
		return f.errf(st.Name, "entry size %d, want %d", st.Entsize, es)
	}
	if st.Size%es != 0 {
		return f.errf(st.Name, "size %d is not a multiple of the entry size %d", st.Size, es)
	}
	if st.Link == 0 || int(st.Link) >= len(f.Sections) || f.Sections[st.Link].Type != elf.SHT_STRTAB {
		return f.errf(st.Name, "sh_link %d is not a string table", st.Link)
	}
	strtabS := string(f.SectionData(&f.Sections[st.Link]))
	raw := f.SectionData(st)
	n := int(st.Size / es)
	f.Symbols = make([]Symbol, n)
	o, le64 := f.Order, f.le64()
	for i := range f.Symbols {
		b := raw[i*int(es):]
		s := &f.Symbols[i] // decoded in place, as the sections are
		switch {
		case le64:
			b := (*[24]byte)(b)
			le := binary.LittleEndian
			s.NameOff, s.Info, s.Other, s.Shndx = le.Uint32(b[:]), b[4], b[5], le.Uint16(b[6:])
			s.Value, s.Size = le.Uint64(b[8:]), le.Uint64(b[16:])
		case f.Is64():
			s.NameOff, s.Info, s.Other, s.Shndx = o.Uint32(b), b[4], b[5], o.Uint16(b[6:])
			s.Value, s.Size = o.Uint64(b[8:]), o.Uint64(b[16:])
		default:
			s.NameOff, s.Value, s.Size = o.Uint32(b), uint64(o.Uint32(b[4:])), uint64(o.Uint32(b[8:]))
			s.Info, s.Other, s.Shndx = b[12], b[13], o.Uint16(b[14:])
		}
		s.Index = i
		name, ok := cstring(strtabS, s.NameOff)
		if !ok {
			return f.errf(st.Name, "symbol %d: name offset %#x is outside the string table or not NUL-terminated", i, s.NameOff)
		}
		s.Name = name
	}
	return nil
}

// IsReloc reports whether s is a REL or RELA section.
func IsReloc(s *Section) bool { return s.Type == elf.SHT_RELA || s.Type == elf.SHT_REL }

// RelocEntSize is the size of one entry of a REL or RELA section.
func (f *File) RelocEntSize(rela bool) int {
	switch {
	case f.Is64() && rela:
		return 24
	case f.Is64():
		return 16
	case rela:
		return 12
	}
	return 8
}

// RelocTable is a validated view of the entries of a REL or RELA section,
// decoded on demand, so that a pass over a large section allocates
// nothing.
type RelocTable struct {
	f       *File
	Section *Section
	raw     []byte
	es      int
	rela    bool
	le64    bool // ELF64 little-endian: decoded without the ByteOrder interface
	nsym    uint32
}

// RelocTable checks the REL/RELA section s (its entry size, its symbol
// table link and its target section) and returns a view of its entries.
// Symbol indexes are checked by Reloc.
func (f *File) RelocTable(s *Section) (RelocTable, error) {
	rela := s.Type == elf.SHT_RELA
	if !IsReloc(s) {
		return RelocTable{}, f.errf(s.Name, "type %v is not REL or RELA", s.Type)
	}
	es := uint64(f.RelocEntSize(rela))
	if s.Entsize != es && s.Entsize != 0 {
		return RelocTable{}, f.errf(s.Name, "entry size %d, want %d", s.Entsize, es)
	}
	if s.Size%es != 0 {
		return RelocTable{}, f.errf(s.Name, "size %d is not a multiple of the entry size %d", s.Size, es)
	}
	if int(s.Link) != f.Symtab || f.Symtab == 0 {
		return RelocTable{}, f.errf(s.Name, "sh_link %d is not the symbol table", s.Link)
	}
	if s.Info == 0 || int(s.Info) >= len(f.Sections) {
		return RelocTable{}, f.errf(s.Name, "sh_info %d is not a section index (%d sections)", s.Info, len(f.Sections))
	}
	return RelocTable{f: f, Section: s, raw: f.SectionData(s), es: int(es), rela: rela,
		le64: f.le64(), nsym: uint32(len(f.Symbols))}, nil
}

// Reordered returns a copy of t whose entry k is t's entry order[k],
// for a loader that sorts a relocation section in place before applying
// it (powerpc64's get_stubs_size()). order must be a permutation of
// 0..Len()-1.
func (t *RelocTable) Reordered(order []int) RelocTable {
	c := *t
	c.raw = make([]byte, len(t.raw))
	for k, j := range order {
		copy(c.raw[k*t.es:(k+1)*t.es], t.raw[j*t.es:])
	}
	return c
}

// Len is the number of entries.
func (t *RelocTable) Len() int {
	if t.es == 0 {
		return 0
	}
	return len(t.raw) / t.es
}

// Target is the section the entries apply to (sh_info).
func (t *RelocTable) Target() *Section { return &t.f.Sections[t.Section.Info] }

// Type returns the type of entry i (0 <= i < Len()) without decoding the
// rest, so that a pass can skip the types it does not handle cheaply.
func (t *RelocTable) Type(i int) uint32 {
	if t.le64 { // small enough to inline
		return binary.LittleEndian.Uint32(t.raw[i*t.es+8:])
	}
	return t.typeSlow(i)
}

func (t *RelocTable) typeSlow(i int) uint32 {
	off := i * t.es
	if t.f.Is64() {
		return uint32(t.f.Order.Uint64(t.raw[off+8 : off+16]))
	}
	return t.f.Order.Uint32(t.raw[off+4:off+8]) & 0xff
}

// Reloc decodes entry i (0 <= i < Len()) and checks its symbol index.
func (t *RelocTable) Reloc(i int) (Reloc, error) {
	if t.le64 && t.rela {
		if r, ok := t.RelaLE64(i); ok {
			return r, nil
		}
	}
	return t.relocSlow(i)
}

// IsRelaLE64 reports an ELF64 little-endian RELA table (arm64, x86_64),
// the one RelaLE64 decodes.
func (t *RelocTable) IsRelaLE64() bool { return t.le64 && t.rela }

// RelaLE64 decodes entry i of a table for which IsRelaLE64 holds, cheaply
// enough to inline in a hot loop; ok is false when the symbol index is
// past the table (Reloc then says so).
func (t *RelocTable) RelaLE64(i int) (r Reloc, ok bool) {
	b := (*[24]byte)(t.raw[i*24:])
	r.Sym = uint32(binary.LittleEndian.Uint64(b[8:16]) >> 32)
	r.Type = binary.LittleEndian.Uint32(b[8:12])
	r.Offset = binary.LittleEndian.Uint64(b[:8])
	r.Addend = int64(binary.LittleEndian.Uint64(b[16:]))
	return r, r.Sym < t.nsym
}

func (t *RelocTable) relocSlow(i int) (Reloc, error) {
	b := t.raw[i*t.es : (i+1)*t.es]
	o := t.f.Order
	var r Reloc
	if t.f.Is64() {
		info := o.Uint64(b[8:])
		r = Reloc{Offset: o.Uint64(b), Sym: uint32(info >> 32), Type: uint32(info)}
		if t.rela {
			r.Addend = int64(o.Uint64(b[16:]))
		}
	} else {
		info := o.Uint32(b[4:])
		r = Reloc{Offset: uint64(o.Uint32(b)), Sym: info >> 8, Type: info & 0xff}
		if t.rela {
			r.Addend = int64(int32(o.Uint32(b[8:])))
		}
	}
	if r.Sym >= t.nsym {
		return r, t.badSym(i, r)
	}
	return r, nil
}

func (t *RelocTable) badSym(i int, r Reloc) error {
	return t.f.errf(t.Section.Name, "relocation %d (offset %#x): symbol index %d past the symbol table (%d symbols)", i, r.Offset, r.Sym, len(t.f.Symbols))
}

// Relocs decodes all the entries of the REL/RELA section s, checking its
// entry size, its symbol table link, its target section and every symbol
// index.
func (f *File) Relocs(s *Section) ([]Reloc, error) {
	t, err := f.RelocTable(s)
	if err != nil {
		return nil, err
	}
	out := make([]Reloc, t.Len())
	for i := range out {
		if out[i], err = t.Reloc(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SectionByName returns the first section called name.
func (f *File) SectionByName(name string) *Section {
	for i := range f.Sections {
		if f.Sections[i].Name == name {
			return &f.Sections[i]
		}
	}
	return nil
}

// ModInfo returns the value of key in .modinfo ("name", "livepatch", ...):
// the first, as the kernel's get_modinfo() does.
func (f *File) ModInfo(key string) string {
	for v := range f.modInfo(key) {
		return v
	}
	return ""
}

// ModInfoAll returns every value of key in .modinfo, in order (a key such
// as import_ns may be given many times; get_next_modinfo() walks them).
func (f *File) ModInfoAll(key string) []string {
	var out []string
	for v := range f.modInfo(key) {
		out = append(out, v)
	}
	return out
}

func (f *File) modInfo(key string) iter.Seq[string] {
	return func(yield func(string) bool) {
		s := f.SectionByName(".modinfo")
		if s == nil {
			return
		}
		for kv := range bytes.SplitSeq(f.SectionData(s), []byte{0}) {
			if k, v, ok := bytes.Cut(kv, []byte{'='}); ok && string(k) == key {
				if !yield(string(v)) {
					return
				}
			}
		}
	}
}

// Export is a symbol a module exports to others (Exports).
type Export struct {
	Name string
	GPL  bool // EXPORT_SYMBOL_GPL: for GPL-compatible modules only
}

// HasSection reports whether f has a section named name.
func (f *File) HasSection(name string) bool { return f.SectionByName(name) != nil }

// Exports lists what the module exports: each __ksymtab_NAME symbol in
// its __ksymtab section (EXPORT_SYMBOL) or __ksymtab_gpl
// (EXPORT_SYMBOL_GPL), the tables Linux 6.1's find_symbol() and
// is_exported() search. They come in the order the kernel walks them
// (verify_exported_symbols()): __ksymtab's entries by their place in it,
// then __ksymtab_gpl's.
func (f *File) Exports() []Export {
	type placed struct {
		Export
		at uint64
	}
	var all []placed
	for i := range f.Symbols {
		s := &f.Symbols[i]
		name, ok := strings.CutPrefix(s.Name, "__ksymtab_")
		if !ok || s.Shndx == uint16(elf.SHN_UNDEF) || int(s.Shndx) >= len(f.Sections) {
			continue
		}
		switch f.Sections[s.Shndx].Name {
		case "__ksymtab":
			all = append(all, placed{Export{name, false}, s.Value})
		case "__ksymtab_gpl":
			all = append(all, placed{Export{name, true}, s.Value})
		}
	}
	slices.SortStableFunc(all, func(a, b placed) int {
		if a.GPL != b.GPL {
			if a.GPL {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.at, b.at)
	})
	out := make([]Export, len(all))
	for i, p := range all {
		out[i] = p.Export
	}
	return out
}

// Open reads and parses the object at path, decompressed if its magic
// says so, up to max bytes (input.DefaultMaxSize when max <= 0): for the
// benchmark harness and tests, which need the ELF view of a module that
// a public package opened.
func Open(path string, max int64) (*File, error) {
	if max <= 0 {
		max = input.DefaultMaxSize
	}
	data, err := input.ReadFileChecked(path, max, CheckHead)
	if err != nil {
		return nil, err
	}
	if data, _, err = input.Decompress(path, data, max); err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// CoreSymbol is is_core_symbol() (kernel/module/kallsyms.c), with
// layout_symtab()'s rule for livepatch modules: whether the kernel's
// kallsyms keeps f's symbol i once the module's init is freed. It keeps
// the null symbol and every symbol of a livepatch module; of others, each
// named symbol defined in a core section (core says whether section sh is
// laid out in core, and whether it is code) that is code, or any with
// CONFIG_KALLSYMS_ALL (all), and with it too those of the per-cpu section
// (pcpu, its index; 0 or -1 when there is none).
func (f *File) CoreSymbol(i int, livepatch, all bool, pcpu int, core func(sh int) (inCore, code bool)) bool {
	if i == 0 || livepatch {
		return true
	}
	s := &f.Symbols[i]
	sh := int(s.Shndx)
	if s.Shndx == uint16(elf.SHN_UNDEF) || sh >= len(f.Sections) || s.NameOff == 0 {
		return false
	}
	if all && pcpu > 0 && sh == pcpu {
		return true
	}
	inCore, code := core(sh)
	return inCore && (all || code)
}
