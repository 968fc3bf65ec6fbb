package modplt

import "debug/elf"

// FuncPointer is a function address the module stores in its data: an
// absolute relocation, in a section that is not code, against a function
// symbol the module defines or an undefined one (a kernel function, or
// data: the ELF does not say).
type FuncPointer struct {
	Section  string // the data section holding it
	Offset   uint64
	Symbol   string
	Target   uint64 // the address stored
	External bool   // an undefined symbol, resolved from the kernel
}

// absPointer reports whether type t stores a full absolute address on the
// architecture (what a function pointer initialiser compiles to).
func (a *arch) absPointer(t uint32) bool {
	switch a.machine {
	case elf.EM_AARCH64:
		return elf.R_AARCH64(t) == elf.R_AARCH64_ABS64
	case elf.EM_X86_64:
		return elf.R_X86_64(t) == elf.R_X86_64_64
	case elf.EM_ARM:
		return elf.R_ARM(t) == elf.R_ARM_ABS32
	}
	return false
}

// FunctionPointers lists the function pointers in the linked module's
// data, with the addresses they hold.
func (img *Image) FunctionPointers() []FuncPointer {
	m := img.Module
	f, a := m.f, m.arch
	placed := map[int]*Placed{}
	for _, p := range img.Sections {
		placed[p.Index] = p
	}
	var out []FuncPointer
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != a.relType {
			continue
		}
		dst := placed[int(s.Info)]
		if dst == nil || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR != 0 {
			continue
		}
		t, err := f.RelocTable(s)
		if err != nil {
			continue
		}
		for j := range t.Len() {
			if !a.absPointer(t.Type(j)) {
				continue
			}
			r, err := t.Reloc(j)
			if err != nil {
				continue
			}
			sym := &f.Symbols[r.Sym]
			undef := sym.Shndx == uint16(elf.SHN_UNDEF)
			if sym.Type() != elf.STT_FUNC && !undef {
				continue
			}
			v, ok := img.SymbolAddr(r.Sym)
			if !ok {
				continue
			}
			if a.relType == elf.SHT_RELA {
				v += uint64(r.Addend)
			}
			out = append(out, FuncPointer{Section: dst.Name, Offset: r.Offset, Symbol: sym.Name, Target: v, External: undef})
		}
	}
	return out
}
