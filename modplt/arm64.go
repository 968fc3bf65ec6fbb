package modplt

import (
	"cmp"
	"debug/elf"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// arm64: arch/arm64/kernel/module-plts.c.
const (
	arm64PLTEntry = 12 // struct plt_entry: ADRP x16; ADD x16, x16, #lo12; BR x16

	// Erratum 843419: an ADRP at page offset 0xff8 or 0xffc may compute a
	// wrong address. count_plts() raises the target section's alignment
	// so that the ADRP cannot land there, or, when that would need more
	// than a page of alignment, reserves a veneer slot.
	arm64Page = 4096
	// Slack for PLT slots skipped because they are themselves at a
	// forbidden offset: one per SZ_4K/sizeof(struct plt_entry) entries.
	arm64ErratumSlackEvery = arm64Page / arm64PLTEntry // 341
)

var arm64Arch = newArch(arch{
	name:      "arm64",
	machine:   elf.EM_AARCH64,
	is64:      true,
	relType:   elf.SHT_RELA,
	pltEntry:  arm64PLTEntry,
	fixedPLTs: 0,
	// module_frob_arch_sections(): sh_size = (n + 1) * sizeof(struct
	// plt_entry); the spare slot makes module_emit_plt_entry()'s
	// speculative write at index n safe.
	pltSize:      func(n int) uint64 { return uint64(n+1) * arm64PLTEntry },
	initPrefixes: []string{".init"},
	exitPrefixes: []string{".exit"},
	kind: func(t uint32) (relKind, uint8, uint8) {
		switch elf.R_AARCH64(t) {
		case elf.R_AARCH64_JUMP26:
			return kindBranch, 0, 0
		case elf.R_AARCH64_CALL26:
			return kindBranch, 1, 0 // a BL takes the same entry as a B
		case elf.R_AARCH64_ADR_PREL_PG_HI21, elf.R_AARCH64_ADR_PREL_PG_HI21_NC:
			return kindADRP, 0, 0
		}
		return kindOther, 0, 0
	},
	nslots: 2,
	addend: func(_ *Module, _ []byte, r elfobj.Reloc) (int64, bool, error) {
		return r.Addend, r.Addend == 0, nil
	},
	kernel: arm64Kernel,
})

// arm64Kernel is module_frob_arch_sections()'s work on one section:
// partition_branch_plt_relas() moves the branches that need a PLT to the
// front, sort() orders that prefix by cmp_rela() (type, symbol, addend),
// and count_plts() counts each branch unless its addend is zero and it
// equals the entry before it.
//
// The count does not depend on the order inside the sorted prefix, so
// there is no need to sort: it is the number of non-zero-addend branches
// plus the number of distinct (type, symbol) among the zero-addend ones.
//
// The partition's quirk: its loop runs while i < j and returns i, so when
// every relocation of the section needs a PLT, i stops at the last one,
// which stays outside the sorted prefix; count_plts() then compares it
// with the prefix's last (largest) entry only. (When any relocation does
// not need a PLT, the loop ends on one of those, and the prefix holds all
// the candidates.) md4.ko's .rela.text is [memset x3, memcpy x2]: the
// second memcpy is left out, compared with memset, and counted again.
func arm64Kernel(c *counter, w *sectionWork) (int, error) {
	prefix := w.cands
	var last *candidate
	if n := len(w.cands); n > 0 && n == w.relocs {
		prefix, last = w.cands[:n-1], &w.cands[n-1]
	}
	serial := c.nextSerial()
	count := 0
	var max *candidate
	for i := range prefix {
		x := &prefix[i]
		if max == nil || cmpRela(x, max) > 0 {
			max = x
		}
		if x.addend != 0 || c.firstInSection(x, serial) {
			count++
		}
	}
	if last != nil && (last.addend != 0 || max == nil || cmpRela(last, max) != 0) {
		count++
	}
	return count, nil
}

// cmpRela is cmp_rela(): by ELF64_R_TYPE, then ELF64_R_SYM, then the
// (signed) addend.
func cmpRela(x, y *candidate) int {
	switch {
	case x.typ != y.typ:
		return cmp.Compare(x.typ, y.typ)
	case x.sym != y.sym:
		return cmp.Compare(x.sym, y.sym)
	}
	return cmp.Compare(x.addend, y.addend)
}

// arm64ADRP is count_plts()'s erratum 843419 case for an ADRP at section
// offset off: min_align = 2 << ffz(off | 7). An alignment of up to a page
// keeps the ADRP off the forbidden offsets; beyond that it needs a veneer.
func arm64ADRP(off uint64) (veneer bool, align uint64) {
	x := off | 7
	ffz := uint(0)
	for x&1 != 0 {
		x >>= 1
		ffz++
	}
	minAlign := uint64(2) << ffz
	if ffz >= 63 || minAlign > arm64Page {
		return true, 0
	}
	return false, minAlign
}
