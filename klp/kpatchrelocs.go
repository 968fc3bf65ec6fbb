// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// kpatch-build's intermediate sections (kpatch-intermediate.h): what
// create-diff-object writes in output.o and create-klp-module reads.
const (
	kpatchRelocations = ".kpatch.relocations"
	kpatchSymbols     = ".kpatch.symbols"
	kpatchArch        = ".kpatch.arch"
)

// KpatchRelocation is one struct kpatch_relocation of kpatch-build's
// intermediate object, with the struct kpatch_symbol it names: a
// relocation that create-klp-module files in
// .klp.rela.<Object>.<Section> against .klp.sym.<SymObject>.<Name>,<Pos>.
type KpatchRelocation struct {
	Index    int
	Section  string // the section it writes to
	Offset   uint64 // where in that section
	Type     uint32
	TypeName string
	Addend   int64
	Object   string // the object whose load applies it (objname)
	// External: the symbol is exported by a module; legacy kpatch looks
	// it up by name alone. create-klp-module does not read it.
	External bool

	// The symbol (struct kpatch_symbol).
	Name      string
	SymObject string
	Pos       uint64
	Bind      elf.SymBind
	SymType   elf.SymType

	section int // index of Section
}

// kpatchIntermediateLayout gives the two structs' fields in bytes for
// pointer size w:
//
//	kpatch_relocation: dest | uint type | int external | long addend | objname | ksym
//	kpatch_symbol:     src | sympos | uchar bind, type | name | objname
type kpatchIntermediateLayout struct {
	relSize, relType, relExternal, relAddend, relObj, relSym int
	symSize, symPos, symBind, symType, symName, symObj       int
}

func intermediateLayout(w int) kpatchIntermediateLayout {
	return kpatchIntermediateLayout{
		relSize: 4*w + 8, relType: w, relExternal: w + 4, relAddend: w + 8, relObj: 2*w + 8, relSym: 3*w + 8,
		symSize: 5 * w, symPos: w, symBind: 2 * w, symType: 2*w + 1, symName: 3 * w, symObj: 4 * w,
	}
}

// readKpatchRelocations decodes .kpatch.relocations and .kpatch.symbols
// as create-klp-module's create_klp_relasecs_and_syms() and
// find_or_add_ksym_to_symbols() do: every pointer is a relocation, the
// strings are in .kpatch.strings, and both sections have one entry per
// relocation ("number of krelas and ksyms do not match").
func (m *Module) readKpatchRelocations(d *dataRelocs) ([]KpatchRelocation, bool, error) {
	f := m.elf
	rsec, ssec := f.SectionByName(kpatchRelocations), f.SectionByName(kpatchSymbols)
	if rsec == nil {
		return nil, false, nil
	}
	bad := func(sec, format string, args ...any) error {
		return &elfobj.FormatError{File: m.Path, Section: sec, Msg: fmt.Sprintf(format, args...)}
	}
	if ssec == nil {
		return nil, true, bad(kpatchRelocations, "no %s section beside it (create-klp-module: \"missing .kpatch.symbols section\")", kpatchSymbols)
	}
	w := int(d.w)
	l := intermediateLayout(w)
	if rsec.Size%uint64(l.relSize) != 0 {
		return nil, true, bad(rsec.Name, "size %d is not a multiple of struct kpatch_relocation's %d bytes", rsec.Size, l.relSize)
	}
	if ssec.Size%uint64(l.symSize) != 0 {
		return nil, true, bad(ssec.Name, "size %d is not a multiple of struct kpatch_symbol's %d bytes", ssec.Size, l.symSize)
	}
	n := int(rsec.Size) / l.relSize
	if nsym := int(ssec.Size) / l.symSize; nsym != n {
		return nil, true, bad(rsec.Name, "%d relocations and %d symbols in %s (create-klp-module: \"number of krelas and ksyms do not match\")", n, nsym, ssec.Name)
	}
	if n == 0 {
		return nil, true, nil
	}
	rrel, err := d.relocsOf(rsec.Index)
	if err != nil {
		return nil, true, err
	}
	srel, err := d.relocsOf(ssec.Index)
	if err != nil {
		return nil, true, err
	}
	rdata, sdata := f.SectionData(rsec), f.SectionData(ssec)
	if len(rdata) != int(rsec.Size) || len(sdata) != int(ssec.Size) {
		return nil, true, bad(rsec.Name, "section data outside the file")
	}
	reloc := func(rel map[uint64]elfobj.Reloc, sec string, at uint64, field string) (elfobj.Reloc, error) {
		r, ok := rel[at]
		if !ok {
			return r, bad(sec, "no relocation for the %s pointer at %#x", field, at)
		}
		return r, nil
	}
	str := func(rel map[uint64]elfobj.Reloc, sec string, at uint64, field string) (string, error) {
		r, err := reloc(rel, sec, at, field)
		if err != nil {
			return "", err
		}
		return m.relocString(r, sec)
	}
	out := make([]KpatchRelocation, 0, n)
	for i := range n {
		base := uint64(i * l.relSize)
		b := rdata[base:]
		kr := KpatchRelocation{Index: i, Type: f.Order.Uint32(b[l.relType:]), External: f.Order.Uint32(b[l.relExternal:]) != 0}
		kr.TypeName = RelocTypeName(f.Machine, kr.Type)
		kr.Addend = int64(d.word(b[l.relAddend:]))
		if w == 4 {
			kr.Addend = int64(int32(kr.Addend))
		}
		dest, err := reloc(rrel, rsec.Name, base, "dest")
		if err != nil {
			return nil, true, err
		}
		ds := &f.Symbols[dest.Sym]
		if ds.Shndx == uint16(elf.SHN_UNDEF) || int(ds.Shndx) >= len(f.Sections) {
			return nil, true, bad(rsec.Name, "entry %d: its destination is symbol %q, in no section of the file", i, ds.Name)
		}
		kr.section = int(ds.Shndx)
		kr.Section = f.Sections[ds.Shndx].Name
		kr.Offset = ds.Value + uint64(dest.Addend) // create-klp-module: st_value + addend
		if kr.Object, err = str(rrel, rsec.Name, base+uint64(l.relObj), "objname"); err != nil {
			return nil, true, err
		}
		ks, err := reloc(rrel, rsec.Name, base+uint64(l.relSym), "ksym")
		if err != nil {
			return nil, true, err
		}
		if int(f.Symbols[ks.Sym].Shndx) != ssec.Index {
			return nil, true, bad(rsec.Name, "entry %d: its ksym pointer is not into %s", i, kpatchSymbols)
		}
		at := f.Symbols[ks.Sym].Value + uint64(ks.Addend)
		if at%uint64(l.symSize) != 0 || at >= ssec.Size {
			return nil, true, bad(rsec.Name, "entry %d: its ksym pointer %s+%#x is not an entry of it", i, kpatchSymbols, at)
		}
		sb := sdata[at:]
		kr.Pos = d.word(sb[l.symPos:])
		kr.Bind, kr.SymType = elf.SymBind(sb[l.symBind]), elf.SymType(sb[l.symType])
		if kr.Name, err = str(srel, ssec.Name, at+uint64(l.symName), "name"); err != nil {
			return nil, true, err
		}
		if kr.SymObject, err = str(srel, ssec.Name, at+uint64(l.symObj), "objname"); err != nil {
			return nil, true, err
		}
		out = append(out, kr)
	}
	return out, true, nil
}
