// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// ErrNotIntermediate: ConvertKpatch was given a file without
// .kpatch.relocations.
var ErrNotIntermediate = errors.New("not kpatch-build's intermediate object (no .kpatch.relocations section)")

// ConvertKpatch does create-klp-module's job (kpatch-build's last step)
// on kpatch-build's intermediate object (output.o, or the module kbuild
// linked from it): every struct kpatch_relocation of .kpatch.relocations
// becomes a relocation in .klp.rela.<objname>.<section>, against a
// symbol .klp.sym.<objname>.<name>,<sympos> made from its struct
// kpatch_symbol (SHN_LIVEPATCH, the kpatch_symbol's binding and type; a
// local one after the other locals, a global one last; one symbol per
// name). The sections and the relocations in each are in
// .kpatch.relocations' order. .kpatch.relocations, .kpatch.symbols and
// .kpatch.arch are dropped with their relocation sections, as
// kpatch-build has create-klp-module do for every kernel from 5.8
// (--no-klp-arch-sections: those kernels read no .klp.arch sections).
// The other sections keep their order and contents, renumbered; the new
// ones are appended.
func ConvertKpatch(name string, obj []byte) ([]byte, error) {
	m, err := Parse(name, obj)
	if err != nil {
		return nil, err
	}
	if m.Kpatch == nil || !m.Kpatch.Intermediate {
		return nil, fmt.Errorf("%s: %w", name, ErrNotIntermediate)
	}
	f := m.elf
	if f.Symtab == 0 {
		return nil, &elfobj.FormatError{File: name, Msg: "no symbol table"}
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: %w (type %v)", name, ErrNotRelocatable, f.Type)
	}
	if len(f.Sections) > int(elf.SHN_LORESERVE) {
		return nil, &elfobj.FormatError{File: name, Msg: fmt.Sprintf("%d sections: extended section numbering is not supported", len(f.Sections))}
	}
	// remove_intermediate_sections()
	gone := map[int]bool{}
	for _, n := range []string{kpatchSymbols, kpatchRelocations, kpatchArch} {
		if s := f.SectionByName(n); s != nil {
			gone[s.Index] = true
		}
	}
	for i := range f.Sections {
		if s := &f.Sections[i]; elfobj.IsReloc(s) && gone[int(s.Info)] {
			gone[i] = true
		}
	}
	for i := range f.Sections {
		if s := &f.Sections[i]; !gone[i] && (elfobj.IsReloc(s) || s.Type == elf.SHT_GROUP) && s.Link != uint32(f.Symtab) {
			return nil, &elfobj.FormatError{File: name, Section: s.Name, Msg: "refers to another symbol table than .symtab"}
		}
		if s := &f.Sections[i]; !gone[i] && s.Type == elf.SHT_SYMTAB_SHNDX {
			return nil, &elfobj.FormatError{File: name, Section: s.Name, Msg: "extended symbol section indexes are not supported"}
		}
	}

	// The symbols: the file's, less those of the dropped sections, and
	// the livepatch ones (find_or_add_ksym_to_symbols()).
	type newSym struct {
		name string
		info uint8
	}
	var added []newSym
	byName := map[string]int{} // livepatch symbol name -> index into added, or -1-old index
	for i := range f.Symbols {
		if s := &f.Symbols[i]; i > 0 && s.Name != "" {
			if _, dup := byName[s.Name]; !dup {
				byName[s.Name] = -1 - i
			}
		}
	}
	symOf := make([]int, len(m.Kpatch.Relocations))
	for i, r := range m.Kpatch.Relocations {
		n := FormatSymbolName(r.SymObject, r.Name, r.Pos)
		at, ok := byName[n]
		if !ok {
			at = len(added)
			byName[n] = at
			added = append(added, newSym{n, elf.ST_INFO(r.Bind, r.SymType)})
		}
		symOf[i] = at
	}
	// New order: locals, new locals, globals, new globals.
	isLocal := func(info uint8) bool { return elf.ST_BIND(info) == elf.STB_LOCAL }
	renumSym := make([]int, len(f.Symbols))
	addedAt := make([]int, len(added))
	next, nlocal := 0, 0
	for pass := range 2 {
		local := pass == 0
		for i := range f.Symbols {
			s := &f.Symbols[i]
			if isLocal(s.Info) != local && i > 0 {
				continue
			}
			if i == 0 && !local {
				continue
			}
			if i > 0 && s.Shndx != uint16(elf.SHN_UNDEF) && s.Shndx < uint16(elf.SHN_LORESERVE) && gone[int(s.Shndx)] {
				renumSym[i] = -1
				continue
			}
			renumSym[i] = next
			next++
		}
		for j, a := range added {
			if isLocal(a.info) == local {
				addedAt[j] = next
				next++
			}
		}
		if local {
			nlocal = next // the symbol table's sh_info
		}
	}
	symIndex := func(at int) int {
		if at < 0 {
			return renumSym[-1-at]
		}
		return addedAt[at]
	}

	w := newWriter(f)
	renum := w.drop(gone)
	st := renum[f.Symtab]

	// The symbol table, rewritten.
	es := f.SymEntSize()
	old := f.SectionData(&f.Sections[f.Symtab])
	tab := make([]byte, next*es)
	for i := range f.Symbols {
		if renumSym[i] < 0 {
			continue
		}
		e := tab[renumSym[i]*es : (renumSym[i]+1)*es]
		copy(e, old[i*es:(i+1)*es])
		if sh := f.Symbols[i].Shndx; sh != uint16(elf.SHN_UNDEF) && sh < uint16(elf.SHN_LORESERVE) && int(sh) < len(renum) {
			f.Order.PutUint16(e[w.byClass(6, 14):], uint16(renum[sh]))
		}
	}
	for j, a := range added {
		e := tab[addedAt[j]*es : (addedAt[j]+1)*es]
		f.Order.PutUint32(e, w.addString(renum[f.Sections[f.Symtab].Link], a.name))
		e[w.byClass(4, 12)] = a.info // st_info
		f.Order.PutUint16(e[w.byClass(6, 14):], SHNLivepatch)
	}
	w.data[st] = tab
	w.secs[st].Info = uint32(nlocal)

	// Every relocation's symbol renumbered, and each group's members.
	for i := range w.secs {
		s := &w.secs[i]
		switch {
		case elfobj.IsReloc(s):
			ent := f.RelocEntSize(s.Type == elf.SHT_RELA)
			raw := append([]byte(nil), w.data[i]...)
			for at := 0; at+ent <= len(raw); at += ent {
				sym := w.relocSym(raw[at:])
				if int(sym) >= len(renumSym) || renumSym[sym] < 0 {
					return nil, &elfobj.FormatError{File: name, Section: s.Name, Msg: fmt.Sprintf("relocation at entry %d refers to symbol %d, which is dropped or not in .symtab", at/ent, sym)}
				}
				w.setRelocSym(raw[at:], uint32(renumSym[sym]))
			}
			w.data[i] = raw
		case s.Type == elf.SHT_GROUP:
			if int(s.Info) >= len(renumSym) || renumSym[s.Info] < 0 {
				return nil, &elfobj.FormatError{File: name, Section: s.Name, Msg: "its signature symbol is dropped or not in .symtab"}
			}
			s.Info = uint32(renumSym[s.Info])
			raw := append([]byte(nil), w.data[i]...)
			for at := 4; at+4 <= len(raw); at += 4 {
				if m := f.Order.Uint32(raw[at:]); int(m) < len(renum) && renum[m] >= 0 {
					f.Order.PutUint32(raw[at:], uint32(renum[m]))
				}
			}
			w.data[i] = raw
		}
	}

	// The .klp.rela sections (find_or_add_klp_relasec()), in order.
	ao, ok := f.Order.(binary.AppendByteOrder)
	if !ok {
		return nil, fmt.Errorf("%s: byte order %v cannot append", name, f.Order)
	}
	var order []string
	secs := map[string][]byte{}
	info := map[string]int{}
	for i, r := range m.Kpatch.Relocations {
		sn := RelaPrefix + r.Object + "." + r.Section
		if _, ok := secs[sn]; !ok {
			order = append(order, sn)
			info[sn] = renum[r.section]
			if info[sn] < 0 {
				return nil, &elfobj.FormatError{File: name, Section: kpatchRelocations, Msg: fmt.Sprintf("entry %d writes to %s, an intermediate section", i, r.Section)}
			}
		}
		secs[sn] = elfobj.AppendReloc(secs[sn], ao, f.Is64(), true,
			elfobj.Reloc{Offset: r.Offset, Sym: uint32(symIndex(symOf[i])), Type: r.Type, Addend: r.Addend})
	}
	for _, sn := range order {
		w.add(elfobj.Section{Name: sn, Type: elf.SHT_RELA,
			Flags: elf.SHF_ALLOC | elf.SHF_INFO_LINK | SHFRelaLivepatch,
			Link:  uint32(st), Info: uint32(info[sn]), Addralign: uint64(w.word), Entsize: uint64(f.RelocEntSize(true))}, secs[sn])
	}
	return w.bytes()
}

// relocSym reads a relocation entry's symbol index.
func (w *writer) relocSym(e []byte) uint32 {
	if w.f.Is64() {
		return uint32(w.f.Order.Uint64(e[8:]) >> 32)
	}
	return w.f.Order.Uint32(e[4:]) >> 8
}

// setRelocSym rewrites a relocation entry's symbol index.
func (w *writer) setRelocSym(e []byte, sym uint32) {
	o := w.f.Order
	if w.f.Is64() {
		o.PutUint64(e[8:], uint64(sym)<<32|o.Uint64(e[8:])&0xffffffff)
		return
	}
	o.PutUint32(e[4:], sym<<8|o.Uint32(e[4:])&0xff)
}
