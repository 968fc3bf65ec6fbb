// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// FuncPointer is a function address the module stores in its data: an
// absolute relocation, in a section that is not code, against a function
// symbol the module defines, an undefined one (a kernel function, or
// data: the ELF does not say), or a code section's symbol plus the offset
// of one of its functions (how compilers point at a static function:
// xfs.ko holds 1,346 such "&.text + 0x19160", in its ops tables and
// its BPF raw-tracepoint map).
type FuncPointer struct {
	Section  string // the data section holding it
	Offset   uint64
	Symbol   string
	Target   uint64 // the address stored
	External bool   // an undefined symbol, resolved from the kernel
}

// isAbsPointer reports whether type t stores a full absolute address on the
// architecture (what a function pointer initialiser compiles to).
func (a *arch) isAbsPointer(t uint32) bool { return a.absPointer != 0 && t == a.absPointer }

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
	var funcs map[funcKey]string // built on the first section-symbol pointer
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != a.relType {
			continue
		}
		dst := placed[int(s.Info)]
		if dst == nil || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR != 0 || ftraceCallsites(dst.Name) {
			continue
		}
		t, err := f.RelocTable(s)
		if err != nil {
			continue
		}
		for j := range t.Len() {
			if !a.isAbsPointer(t.Type(j)) {
				continue
			}
			r, err := t.Reloc(j)
			if err != nil {
				continue
			}
			sym := &f.Symbols[r.Sym]
			undef := sym.Shndx == uint16(elf.SHN_UNDEF)
			section := sym.Type() == elf.STT_SECTION
			if !undef && !section && sym.Type() != elf.STT_FUNC {
				continue
			}
			v, ok := img.SymbolAddr(r.Sym)
			if !ok {
				continue
			}
			target := v + uint64(r.Addend)
			if a.relType == elf.SHT_REL {
				// The addend was the word's own content: the link
				// stored S + A there.
				if target, ok = storedWord(dst, r.Offset, a.is64, f.Order); !ok {
					continue
				}
			}
			name := sym.Name
			if section { // &static_fn: the section plus the function's offset
				if funcs == nil {
					funcs = localFuncs(f)
				}
				if name, ok = funcs[funcKey{sym.Shndx, target - v}]; !ok {
					continue // a code address that starts no function
				}
			}
			out = append(out, FuncPointer{Section: dst.Name, Offset: r.Offset, Symbol: name, Target: target, External: undef})
		}
	}
	return out
}

// ftraceCallsites reports whether section name lists where each
// function's ftrace call site is (FTRACE_CALLSITE_SECTION,
// include/linux/ftrace.h: __mcount_loc, or __patchable_function_entries
// where the compiler makes the entries), which find_module_sections()
// hands to ftrace: code addresses nothing calls through, not function
// pointers.
func ftraceCallsites(name string) bool {
	return name == "__mcount_loc" || name == "__patchable_function_entries"
}

// funcKey is where a function starts: its section and its offset there.
type funcKey struct {
	shndx uint16
	off   uint64
}

// localFuncs maps where each function symbol of f starts to its name (the
// first listed, where two start at one place).
func localFuncs(f *elfobj.File) map[funcKey]string {
	m := map[funcKey]string{}
	for i := range f.Symbols {
		s := &f.Symbols[i]
		if s.Type() != elf.STT_FUNC || s.Shndx == uint16(elf.SHN_UNDEF) || s.Shndx >= uint16(elf.SHN_LORESERVE) {
			continue
		}
		if k := (funcKey{s.Shndx, s.Value}); m[k] == "" {
			m[k] = s.Name
		}
	}
	return m
}

// storedWord reads the pointer-sized word the link stored at off in p.
func storedWord(p *Placed, off uint64, is64 bool, order binary.ByteOrder) (uint64, bool) {
	n := uint64(4)
	if is64 {
		n = 8
	}
	if off > uint64(len(p.Data)) || uint64(len(p.Data))-off < n {
		return 0, false
	}
	if is64 {
		return order.Uint64(p.Data[off:]), true
	}
	return uint64(order.Uint32(p.Data[off:])), true
}
