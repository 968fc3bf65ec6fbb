// SPDX-License-Identifier: GPL-2.0-only

package reference

import (
	"cmp"
	"debug/elf"
	"errors"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/ksort"
)

// Elf64Rela is the kernel's Elf64_Rela.
type Elf64Rela struct {
	Offset uint64
	Info   uint64
	Addend int64
}

func relaType(r *Elf64Rela) uint32 { return uint32(r.Info) }
func relaSym(r *Elf64Rela) uint32  { return uint32(r.Info >> 32) }

// cmpRela is arch/arm64/kernel/module-plts.c cmp_rela().
func cmpRela(x, y *Elf64Rela) int {
	i := cmp.Compare(relaType(x), relaType(y))
	if i == 0 {
		i = cmp.Compare(relaSym(x), relaSym(y))
	}
	if i == 0 {
		i = cmp.Compare(x.Addend, y.Addend)
	}
	return i
}

func duplicateRel(rela []Elf64Rela, num int) bool {
	return num > 0 && cmpRela(&rela[num], &rela[num-1]) == 0
}

func branchRelaNeedsPLT(syms []elfobj.Symbol, r *Elf64Rela, dstidx uint32) bool {
	if uint32(syms[relaSym(r)].Shndx) == dstidx {
		return false
	}
	t := elf.R_AARCH64(relaType(r))
	return t == elf.R_AARCH64_JUMP26 || t == elf.R_AARCH64_CALL26
}

// partitionBranchPLTRelas is partition_branch_plt_relas(), as written.
func partitionBranchPLTRelas(syms []elfobj.Symbol, rela []Elf64Rela, dstidx uint32) int {
	i, j := 0, len(rela)-1
	for i < j {
		if branchRelaNeedsPLT(syms, &rela[i], dstidx) {
			i++
		} else if branchRelaNeedsPLT(syms, &rela[j], dstidx) {
			rela[i], rela[j] = rela[j], rela[i]
		} else {
			j--
		}
	}
	return i
}

// countPLTs is count_plts() without the erratum: the reference for the
// benchmark and the property tests.
func countPLTs(syms []elfobj.Symbol, rela []Elf64Rela, dstidx uint32) int {
	ret := 0
	for i := range rela {
		switch elf.R_AARCH64(relaType(&rela[i])) {
		case elf.R_AARCH64_JUMP26, elf.R_AARCH64_CALL26:
			if uint32(syms[relaSym(&rela[i])].Shndx) == dstidx {
				break
			}
			if rela[i].Addend != 0 || !duplicateRel(rela, i) {
				ret++
			}
		}
	}
	return ret
}

// ErrBadSymbol is returned for a symbol index past the table: the kernel
// would read past it.
var ErrBadSymbol = errors.New("symbol index past the symbol table")

// KernelARM64PLTs is a faithful port of Linux 6.1's arm64
// module_frob_arch_sections() (CONFIG_RANDOMIZE_BASE=y, no erratum
// 843419 workaround, CONFIG_MODULE_UNLOAD=y): for each RELA section that
// applies to an executable section, copy its entries (the kernel sorts
// them in place), partition the branches that need a PLT to the front,
// heapsort that prefix with cmp_rela(), and count. It returns the core
// and init entry counts.
func KernelARM64PLTs(f *elfobj.File) (core, init int, err error) {
	// The kernel sorts each section in place; the port copies the largest
	// section once into one buffer, and reuses it.
	var rels []Elf64Rela
	for i := range f.Sections {
		if s := &f.Sections[i]; s.Type == elf.SHT_RELA {
			rels = slices.Grow(rels, int(s.Size/24))
		}
	}
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA {
			continue
		}
		t, err := f.RelocTable(s)
		if err != nil {
			return 0, 0, err
		}
		dst := t.Target()
		if dst.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		raw := f.SectionData(s)
		rels = rels[:0]
		for j := 0; j+24 <= len(raw); j += 24 {
			r := Elf64Rela{f.Order.Uint64(raw[j:]), f.Order.Uint64(raw[j+8:]), int64(f.Order.Uint64(raw[j+16:]))}
			if int(relaSym(&r)) >= len(f.Symbols) {
				return 0, 0, ErrBadSymbol
			}
			rels = append(rels, r)
		}
		nents := partitionBranchPLTRelas(f.Symbols, rels, s.Info)
		if nents > 0 {
			ksort.Sort(rels[:nents], cmpRela)
		}
		n := countPLTs(f.Symbols, rels, s.Info)
		if strings.HasPrefix(dst.Name, ".init") {
			init += n
		} else {
			core += n
		}
	}
	return core, init, nil
}
