// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// ConvertSymbol names a symbol to turn into a livepatch symbol: the
// undefined symbol Name of the object becomes
// .klp.sym.<Object>.<Name>,<Pos>.
type ConvertSymbol struct {
	Object string // "vmlinux" or a module name
	Name   string
	Pos    uint64 // 0 when the name is unique in Object, else 1-based
}

// Convert turns an ordinary relocatable object into a livepatch module:
// every relocation against one of syms moves, in order, into a
// .klp.rela.<object>.<section> section (SHT_RELA, SHF_ALLOC|SHF_INFO_LINK|
// SHF_RELA_LIVEPATCH, sh_link the symbol table, sh_info the patched
// section), and each such symbol is renamed .klp.sym.<object>.<name>,<pos>
// with st_shndx SHN_LIVEPATCH. This is what kpatch's create-klp-module and
// klp-build's "objtool klp post-link" do. Other sections keep their
// indexes; the new ones are appended.
func Convert(name string, obj []byte, syms []ConvertSymbol) ([]byte, error) {
	return convert(name, obj, syms, nil)
}

// convertHooks bend the output for the error fixtures of the tests: a
// symbol written with a raw name, a relocation filed in another object's
// section, a symbol left SHN_UNDEF.
type convertHooks struct {
	rawName    map[string]string
	sectionObj map[string]string
	keepUndef  map[string]bool
}

func convert(name string, obj []byte, syms []ConvertSymbol, hooks *convertHooks) ([]byte, error) {
	if hooks == nil {
		hooks = &convertHooks{}
	}
	f, err := elfobj.Parse(name, obj)
	if err != nil {
		return nil, err
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: %w (type %v)", name, ErrNotRelocatable, f.Type)
	}
	if f.Symtab == 0 {
		return nil, &elfobj.FormatError{File: name, Msg: "no symbol table"}
	}
	w := newWriter(f)
	want := map[string]ConvertSymbol{}
	for _, s := range syms {
		if prev, ok := want[s.Name]; ok && prev != s {
			// One undefined symbol becomes one livepatch symbol.
			return nil, badConvertSymbol(nil, "%s: symbol %q given twice: %s and %s", name, s.Name, FormatSymbolName(prev.Object, prev.Name, prev.Pos), FormatSymbolName(s.Object, s.Name, s.Pos))
		}
		if s.Object == "" || len(s.Object) > ModuleNameMax || containsAny(s.Object, ".") {
			return nil, badConvertSymbol(nil, "%s: object name %q: must be 1-%d bytes without dots", name, s.Object, ModuleNameMax)
		}
		if neverLoads(s.Object) {
			e := neverLoadsError(s.Object)
			return nil, badConvertSymbol(e, "%s: object name %q: %v", name, s.Object, e)
		}
		if s.Name == "" || len(s.Name) > SymbolNameMax || containsAny(s.Name, ",") {
			return nil, badConvertSymbol(nil, "%s: symbol name %q: must be 1-%d bytes without commas", name, s.Name, SymbolNameMax)
		}
		want[s.Name] = s
	}
	// Which symbols become livepatch symbols.
	conv := map[uint32]ConvertSymbol{}
	found := map[string]bool{}
	for i := range f.Symbols {
		s := &f.Symbols[i]
		if c, ok := want[s.Name]; ok && s.Shndx == uint16(elf.SHN_UNDEF) && i > 0 {
			conv[uint32(i)] = c
			found[s.Name] = true
		}
	}
	for _, s := range syms {
		if !found[s.Name] {
			return nil, badConvertSymbol(nil, "%s: symbol %q is not an undefined symbol of the object", name, s.Name)
		}
	}
	// Split every RELA section: relocations against converted symbols move.
	used := map[uint32]bool{}
	nsec := len(f.Sections)
	for i := 0; i < nsec; i++ {
		s := &f.Sections[i]
		if (s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL) || s.Flags&SHFRelaLivepatch != 0 {
			continue
		}
		relocs, err := f.Relocs(s)
		if err != nil {
			return nil, err
		}
		if s.Type == elf.SHT_REL {
			// klp_write_section_relocs() hands every livepatch section to
			// apply_relocate_add(): RELA only.
			for _, r := range relocs {
				if c, ok := conv[r.Sym]; ok {
					return nil, fmt.Errorf("%s: %w: %s relocates %s (%v): the kernel applies livepatch sections with apply_relocate_add(), which has no REL form (\"REL relocation unsupported\"; Linux has no livepatch for 32-bit arm)", name, ErrRELRelocations, s.Name, c.Name, f.Machine)
				}
			}
			continue
		}
		es := f.RelocEntSize(true)
		raw := f.SectionData(s)
		var keep []byte
		moved := map[string][]byte{}
		var order []string
		for j, r := range relocs {
			ent := raw[j*es : (j+1)*es]
			c, ok := conv[r.Sym]
			if !ok {
				keep = append(keep, ent...)
				continue
			}
			used[r.Sym] = true
			secObj := c.Object
			if o, ok := hooks.sectionObj[c.Name]; ok {
				secObj = o
			}
			if t := f.Sections[s.Info].Name; c.Object != kallsyms.Vmlinux && readAtLoad(t) {
				// The section would be ErrLoadTimeSection's.
				return nil, fmt.Errorf("%s: %w: %s refers to %s's %s, and the module loader reads %s when the patch loads, before livepatch would relocate it for %s (use static_key_enabled() instead of a static branch, a plain call instead of a static call)", name, ErrLoadTimeSection, t, c.Object, c.Name, t, c.Object)
			}
			if _, seen := moved[secObj]; !seen {
				order = append(order, secObj)
			}
			moved[secObj] = append(moved[secObj], ent...)
		}
		if len(order) == 0 {
			continue
		}
		w.data[i] = keep
		target := f.Sections[s.Info].Name
		for _, o := range order {
			w.add(elfobj.Section{
				Name: RelaPrefix + o + "." + target, Type: elf.SHT_RELA,
				Flags: elf.SHF_ALLOC | elf.SHF_INFO_LINK | SHFRelaLivepatch,
				Link:  uint32(f.Symtab), Info: s.Info, Addralign: uint64(w.word), Entsize: uint64(es),
			}, moved[o])
		}
	}
	for idx := range uint32(len(f.Symbols)) { // the first in symbol order
		if c, ok := conv[idx]; ok && !used[idx] {
			return nil, fmt.Errorf("%s: symbol %q: %w (it stays an ordinary undefined symbol)", name, c.Name, ErrNothingToConvert)
		}
	}
	// Rename the symbols and mark them SHN_LIVEPATCH.
	st := &f.Sections[f.Symtab]
	symdata := append([]byte(nil), f.SectionData(st)...)
	for idx := range uint32(len(f.Symbols)) { // symbol order: a deterministic string table
		c, ok := conv[idx]
		if !ok || !used[idx] {
			continue
		}
		klpName := FormatSymbolName(c.Object, c.Name, c.Pos)
		if raw, ok := hooks.rawName[c.Name]; ok {
			klpName = raw
		}
		off := w.addString(int(st.Link), klpName)
		e := symdata[int(idx)*f.SymEntSize():]
		f.Order.PutUint32(e, off)
		if hooks.keepUndef[c.Name] {
			continue
		}
		if f.Is64() {
			f.Order.PutUint16(e[6:], SHNLivepatch)
		} else {
			f.Order.PutUint16(e[14:], SHNLivepatch)
		}
	}
	w.data[f.Symtab] = symdata
	return w.bytes()
}

func containsAny(s, chars string) bool {
	for i := range len(s) {
		for j := range len(chars) {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// writer re-lays an object out: same header, sections in order (with
// some contents replaced, some dropped and some appended), then the
// section headers.
type writer struct {
	f     *elfobj.File
	word  int
	secs  []elfobj.Section
	data  [][]byte
	orig  []int          // each section's index in f; -1 for one added
	shstr int            // the section names' table
	names map[int][]byte // grown string tables, by section index
}

func newWriter(f *elfobj.File) *writer {
	w := &writer{f: f, word: 4, names: map[int][]byte{}}
	if f.Is64() {
		w.word = 8
	}
	for i := range f.Sections {
		w.secs = append(w.secs, f.Sections[i])
		w.data = append(w.data, f.SectionData(&f.Sections[i]))
		w.orig = append(w.orig, i)
	}
	w.shstr = int(f.Order.Uint16(f.Data[w.byClass(62, 50):])) // e_shstrndx
	return w
}

// byClass is a field's offset (in the ELF header, a symbol): at64 in
// ELF64, at32 in ELF32.
func (w *writer) byClass(at64, at32 int) int {
	if w.f.Is64() {
		return at64
	}
	return at32
}

// addString appends s to string table sec and returns its offset.
func (w *writer) addString(sec int, s string) uint32 {
	tab, ok := w.names[sec]
	if !ok {
		tab = append([]byte(nil), w.data[sec]...)
	}
	off := uint32(len(tab))
	tab = append(append(tab, s...), 0)
	w.names[sec] = tab
	w.data[sec] = tab
	return off
}

func (w *writer) add(s elfobj.Section, data []byte) {
	s.Index = len(w.secs)
	w.secs = append(w.secs, s)
	w.data = append(w.data, data)
	w.orig = append(w.orig, -1)
}

// drop removes the sections of the given indexes, before any is added or
// a string table grown, and renumbers the others: the section header
// links and infos that are section indexes and the name table's index.
// It returns each old index's new one (-1 for a dropped section); the
// caller renumbers what the contents hold (symbols' st_shndx).
func (w *writer) drop(gone map[int]bool) []int {
	renum := make([]int, len(w.secs))
	var secs []elfobj.Section
	var data [][]byte
	var orig []int
	for i := range w.secs {
		if gone[i] {
			renum[i] = -1
			continue
		}
		renum[i] = len(secs)
		secs, data, orig = append(secs, w.secs[i]), append(data, w.data[i]), append(orig, w.orig[i])
	}
	for i := range secs {
		s := &secs[i]
		s.Index = i
		if s.Link != 0 && int(s.Link) < len(renum) && linksSection(s) {
			s.Link = uint32(max(renum[s.Link], 0))
		}
		if s.Info != 0 && int(s.Info) < len(renum) && (elfobj.IsReloc(s) || s.Flags&elf.SHF_INFO_LINK != 0) {
			s.Info = uint32(max(renum[s.Info], 0))
		}
	}
	w.secs, w.data, w.orig = secs, data, orig
	if w.shstr < len(renum) {
		w.shstr = max(renum[w.shstr], 0)
	}
	return renum
}

// linksSection: sh_link is a section index (the gABI's table of sh_link
// and sh_info).
func linksSection(s *elfobj.Section) bool {
	switch s.Type {
	case elf.SHT_SYMTAB, elf.SHT_DYNSYM, elf.SHT_REL, elf.SHT_RELA, elf.SHT_HASH, elf.SHT_DYNAMIC,
		elf.SHT_GROUP, elf.SHT_SYMTAB_SHNDX, elf.SHT_GNU_HASH, elf.SHT_GNU_VERSYM:
		return true
	}
	return s.Flags&elf.SHF_LINK_ORDER != 0
}

// maxAlign bounds a section's alignment when writing: real modules use at
// most a page, and a forged one must not make the writer pad gigabytes.
const maxAlign = 1 << 16

func (w *writer) bytes() ([]byte, error) {
	f := w.f
	o := f.Order
	ehsize, shentsize := 52, 40
	if f.Is64() {
		ehsize, shentsize = 64, 64
	}
	if len(w.secs) >= int(elf.SHN_LORESERVE) {
		return nil, fmt.Errorf("%s: too many sections (%d)", f.Name, len(w.secs))
	}
	if w.shstr == 0 || w.shstr >= len(w.secs) {
		return nil, &elfobj.FormatError{File: f.Name, Msg: fmt.Sprintf("section name table index %d is not one of its %d sections", w.shstr, len(w.secs))}
	}
	nameOff := make([]uint32, len(w.secs))
	for i := range w.secs {
		if w.orig[i] >= 0 {
			nameOff[i] = o.Uint32(f.Data[w.rawShoff()+uint64(w.orig[i]*w.rawShentsize()):])
		} else {
			nameOff[i] = w.addString(w.shstr, w.secs[i].Name)
		}
	}
	out := append([]byte(nil), f.Data[:ehsize]...)
	o.PutUint16(out[w.byClass(62, 50):], uint16(w.shstr))
	for i := range w.secs {
		s := &w.secs[i]
		if s.Type == elf.SHT_NULL {
			continue
		}
		if s.Addralign > maxAlign {
			return nil, &elfobj.FormatError{File: f.Name, Section: s.Name, Msg: fmt.Sprintf("alignment %#x is larger than %#x", s.Addralign, maxAlign)}
		}
		al := max(int(s.Addralign), 1)
		out = append(out, make([]byte, (al-len(out)%al)%al)...)
		s.Offset = uint64(len(out))
		if s.Type != elf.SHT_NOBITS {
			s.Size = uint64(len(w.data[i]))
			out = append(out, w.data[i]...)
		}
	}
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	shoff := len(out)
	for i := range w.secs {
		s := &w.secs[i]
		h := make([]byte, shentsize)
		o.PutUint32(h, nameOff[i])
		o.PutUint32(h[4:], uint32(s.Type))
		if f.Is64() {
			o.PutUint64(h[8:], uint64(s.Flags))
			o.PutUint64(h[16:], s.Addr)
			o.PutUint64(h[24:], s.Offset)
			o.PutUint64(h[32:], s.Size)
			o.PutUint32(h[40:], s.Link)
			o.PutUint32(h[44:], s.Info)
			o.PutUint64(h[48:], s.Addralign)
			o.PutUint64(h[56:], s.Entsize)
		} else {
			o.PutUint32(h[8:], uint32(s.Flags))
			o.PutUint32(h[12:], uint32(s.Addr))
			o.PutUint32(h[16:], uint32(s.Offset))
			o.PutUint32(h[20:], uint32(s.Size))
			o.PutUint32(h[24:], s.Link)
			o.PutUint32(h[28:], s.Info)
			o.PutUint32(h[32:], uint32(s.Addralign))
			o.PutUint32(h[36:], uint32(s.Entsize))
		}
		if w.orig[i] == 0 {
			h = append([]byte(nil), f.Data[w.rawShoff():w.rawShoff()+uint64(shentsize)]...)
		}
		out = append(out, h...)
	}
	if f.Is64() {
		o.PutUint64(out[40:], uint64(shoff))
		o.PutUint16(out[58:], uint16(shentsize))
		o.PutUint16(out[60:], uint16(len(w.secs)))
	} else {
		o.PutUint32(out[32:], uint32(shoff))
		o.PutUint16(out[46:], uint16(shentsize))
		o.PutUint16(out[48:], uint16(len(w.secs)))
	}
	return out, nil
}

func (w *writer) rawShoff() uint64 {
	if w.f.Is64() {
		return w.f.Order.Uint64(w.f.Data[40:])
	}
	return uint64(w.f.Order.Uint32(w.f.Data[32:]))
}

func (w *writer) rawShentsize() int {
	if w.f.Is64() {
		return int(w.f.Order.Uint16(w.f.Data[58:]))
	}
	return int(w.f.Order.Uint16(w.f.Data[46:]))
}
