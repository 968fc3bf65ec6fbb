// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// Kpatch is what a kpatch-build module carries in its .kpatch.* sections:
// a legacy kpatch module (kpatch.ko core, before kernel livepatch) its
// dynrelas to resolve at load time; both legacy and livepatch ones the
// functions they patch (in Module.Funcs, FuncsKpatch).
type Kpatch struct {
	// Layout names the struct layout found: "sympos" (kpatch 0.4 and
	// later: a sympos field in both structs) or "nosympos" (older).
	Layout   string
	Dynrelas []Dynrela
	// Relocations are kpatch-build's intermediate form (output.o, before
	// create-klp-module): .kpatch.relocations with their
	// .kpatch.symbols. Intermediate is set when the file has the section,
	// even empty.
	Relocations  []KpatchRelocation
	Intermediate bool
}

// Dynrela is one struct kpatch_patch_dynrela.
type Dynrela struct {
	Index    int
	Dest     string // where it writes: section+offset, from its relocation
	Offset   uint64 // that offset in that section (0 for a symbol-relative place)
	Type     uint32
	TypeName string
	Pos      uint64
	Name     string
	Object   string
	External bool // exported symbol, looked up by name alone
	Addend   int64
}

// kpatch struct layouts, in words (w = 8 on 64-bit, 4 on 32-bit):
//
//	dynrela (sympos):   dest src type sympos name objname | int external | long addend
//	dynrela (nosympos): dest src type name objname        | int external | int addend
//	func (sympos):      new_addr new_size old_addr old_size sympos name objname
//	func (nosympos):    new_addr new_size old_addr old_size name objname
type layout struct {
	name                        string
	dynSize, dynName, dynObj    int
	dynSympos, dynExt, dynAdd   int // dynSympos < 0: none
	addendWord                  bool
	funcSize, funcName, funcObj int
	funcSympos                  int
}

func layouts(w int) []layout {
	return []layout{
		{name: "sympos", dynSize: 6*w + 4 + (w - 4) + w, dynName: 4 * w, dynObj: 5 * w, dynSympos: 3 * w, dynExt: 6 * w, dynAdd: 7 * w, addendWord: true,
			funcSize: 7 * w, funcName: 5 * w, funcObj: 6 * w, funcSympos: 4 * w},
		{name: "nosympos", dynSize: 5*w + 8, dynName: 3 * w, dynObj: 4 * w, dynSympos: -1, dynExt: 5 * w, dynAdd: 5*w + 4,
			funcSize: 6 * w, funcName: 4 * w, funcObj: 5 * w, funcSympos: -1},
	}
}

// readKpatch decodes .kpatch.dynrelas and .kpatch.funcs, whose string
// pointers are relocations into .kpatch.strings.
func (m *Module) readKpatch(d *dataRelocs) error {
	f := m.elf
	dyn, funcs := f.SectionByName(".kpatch.dynrelas"), f.SectionByName(".kpatch.funcs")
	if dyn == nil && funcs == nil && f.SectionByName(kpatchRelocations) == nil {
		return nil
	}
	w := 4
	if f.Is64() {
		w = 8
	}
	relocsFor := func(s *elfobj.Section) (map[uint64]elfobj.Reloc, error) {
		if s == nil {
			return nil, nil
		}
		return d.relocsOf(s.Index)
	}
	drel, err := relocsFor(dyn)
	if err != nil {
		return err
	}
	frel, err := relocsFor(funcs)
	if err != nil {
		return err
	}
	var lay *layout
	for _, l := range layouts(w) {
		if fits(dyn, drel, l.dynSize, 0, l.dynName, l.dynObj) && fits(funcs, frel, l.funcSize, 0, l.funcName, l.funcObj) {
			lay = &l
			break
		}
	}
	if lay == nil {
		return &elfobj.FormatError{File: m.Path, Section: ".kpatch.dynrelas", Msg: "no known kpatch struct layout fits the section sizes and relocations"}
	}
	k := &Kpatch{Layout: lay.name}
	word := func(b []byte) uint64 {
		if w == 8 {
			return f.Order.Uint64(b)
		}
		return uint64(f.Order.Uint32(b))
	}
	str := func(rel map[uint64]elfobj.Reloc, at uint64, sec string) (string, error) {
		r, ok := rel[at]
		if !ok {
			return "", &elfobj.FormatError{File: m.Path, Section: sec, Msg: fmt.Sprintf("no relocation for the string pointer at %#x", at)}
		}
		return m.relocString(r, sec)
	}
	if dyn != nil {
		data := f.SectionData(dyn)
		for i := 0; (i+1)*lay.dynSize <= len(data); i++ {
			b, base := data[i*lay.dynSize:], uint64(i*lay.dynSize)
			d := Dynrela{Index: i, Type: uint32(word(b[2*w:])), External: f.Order.Uint32(b[lay.dynExt:]) != 0}
			d.TypeName = RelocTypeName(f.Machine, d.Type)
			if lay.dynSympos >= 0 {
				d.Pos = word(b[lay.dynSympos:])
			}
			if lay.addendWord {
				d.Addend = int64(word(b[lay.dynAdd:]))
				if w == 4 {
					d.Addend = int64(int32(d.Addend))
				}
			} else {
				d.Addend = int64(int32(f.Order.Uint32(b[lay.dynAdd:])))
			}
			if r, ok := drel[base]; ok {
				d.Dest = m.relocTarget(r)
				if sym := &f.Symbols[r.Sym]; sym.Shndx != 0 && int(sym.Shndx) < len(f.Sections) {
					d.Offset = sym.Value + uint64(r.Addend)
				}
			}
			if d.Name, err = str(drel, base+uint64(lay.dynName), dyn.Name); err != nil {
				return err
			}
			if d.Object, err = str(drel, base+uint64(lay.dynObj), dyn.Name); err != nil {
				return err
			}
			k.Dynrelas = append(k.Dynrelas, d)
		}
	}
	if funcs != nil {
		data := f.SectionData(funcs)
		for i := 0; (i+1)*lay.funcSize <= len(data); i++ {
			b, base := data[i*lay.funcSize:], uint64(i*lay.funcSize)
			fn := Func{Index: i, Section: funcs.Name, Offset: base}
			if lay.funcSympos >= 0 {
				fn.Pos = word(b[lay.funcSympos:])
			}
			if fn.Name, err = str(frel, base+uint64(lay.funcName), funcs.Name); err != nil {
				return err
			}
			if fn.Object, err = str(frel, base+uint64(lay.funcObj), funcs.Name); err != nil {
				return err
			}
			m.Funcs = append(m.Funcs, fn)
		}
	}
	if k.Relocations, k.Intermediate, err = m.readKpatchRelocations(d); err != nil {
		return err
	}
	m.Kpatch = k
	if len(m.Funcs) > 0 {
		m.FuncSource = FuncsKpatch
	}
	return nil
}

// fits reports whether a section of records of size n has its relocations
// only at the given in-record offsets.
func fits(s *elfobj.Section, rel map[uint64]elfobj.Reloc, n int, offs ...int) bool {
	if s == nil {
		return true
	}
	if s.Size%uint64(n) != 0 {
		return false
	}
	for at := range rel {
		ok := false
		for _, o := range offs {
			if int(at%uint64(n)) == o {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// relocString reads the NUL-terminated string a pointer relocation points
// at: symbol value + addend within the symbol's section.
func (m *Module) relocString(r elfobj.Reloc, sec string) (string, error) {
	f := m.elf
	sym := &f.Symbols[r.Sym]
	if sym.Shndx == 0 || int(sym.Shndx) >= len(f.Sections) {
		return "", &elfobj.FormatError{File: m.Path, Section: sec, Msg: fmt.Sprintf("string pointer at %#x refers to symbol %q outside any section", r.Offset, sym.Name)}
	}
	data := f.SectionData(&f.Sections[sym.Shndx])
	at := sym.Value + uint64(r.Addend)
	if at >= uint64(len(data)) {
		return "", &elfobj.FormatError{File: m.Path, Section: sec, Msg: fmt.Sprintf("string pointer at %#x points past %s", r.Offset, f.Sections[sym.Shndx].Name)}
	}
	end := bytes.IndexByte(data[at:], 0)
	if end < 0 {
		return "", &elfobj.FormatError{File: m.Path, Section: sec, Msg: fmt.Sprintf("string at %#x is not NUL-terminated", at)}
	}
	return string(data[at : at+uint64(end)]), nil
}

// relocTarget names where a pointer relocation points: section+offset.
func (m *Module) relocTarget(r elfobj.Reloc) string {
	f := m.elf
	sym := &f.Symbols[r.Sym]
	if sym.Shndx != 0 && int(sym.Shndx) < len(f.Sections) {
		return fmt.Sprintf("%s+%#x", f.Sections[sym.Shndx].Name, sym.Value+uint64(r.Addend))
	}
	return fmt.Sprintf("%s%+d", sym.Name, r.Addend)
}
