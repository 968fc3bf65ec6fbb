// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
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

	// arch/arm64/include/asm/memory.h with VA_BITS_MIN 48: the module
	// region [MODULES_VADDR, MODULES_END) is the 128 MiB below the
	// kernel image, which starts at MODULES_END (KIMAGE_VADDR).
	arm64ModulesVaddr = 0xffff800000000000
	arm64ModulesVsize = 128 << 20
)

// arm64ModuleArea: kaslr_init() starts module_alloc_base at
// _etext - MODULES_VSIZE, so that a module anywhere in its 128 MiB
// reaches all of the kernel's text with a BL (no PLT); module
// randomization (CONFIG_RANDOMIZE_MODULE_REGION_FULL) then moves it by a
// seed, which LinkOptions.Base stands for. vmalloc places the first
// module on the first page at or above module_alloc_base (alloc_vmap_area()
// aligns up to MODULE_ALIGN, PAGE_SIZE); _etext is SEGMENT_ALIGN (64 KiB)
// aligned, so on a real kernel that is module_alloc_base itself. Without
// _etext: MODULES_VADDR (of a 48-bit address space).
func arm64ModuleArea(etext, page uint64) uint64 {
	if etext < arm64ModulesVaddr+arm64ModulesVsize || etext > math.MaxUint64-page {
		return arm64ModulesVaddr
	}
	return (etext - arm64ModulesVsize + page - 1) &^ (page - 1)
}

var arm64Arch = newArch(arch{
	pltSections: []string{".plt", ".init.plt"},
	pltMissing:  "module PLT section(s) missing",
	ftracePLT:   arm64FtraceTrampolines,
	absPointer:  uint32(elf.R_AARCH64_ABS64),
	name:        "arm64",
	machine:     elf.EM_AARCH64,
	is64:        true,
	relType:     elf.SHT_RELA,
	pltEntry:    arm64PLTEntry,
	fixedPLTs:   0,
	// module_frob_arch_sections(): sh_size = (n + 1) * sizeof(struct
	// plt_entry); the spare slot makes module_emit_plt_entry()'s
	// speculative write at index n safe.
	pltSize:    func(n int) uint64 { return uint64(n+1) * arm64PLTEntry },
	moduleArea: arm64ModuleArea,
	// CONFIG_ARM64_4K_PAGES, _16K_PAGES, _64K_PAGES (RHEL's kernel-64k).
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
	nslots:   2,
	addend:   relaAddend,
	kernel:   arm64Kernel,
	order:    arm64Order,
	apply:    arm64Apply,
	frob:     arm64Frob,
	finalize: (*linker).arm64Finalize,
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

// Linking: arch/arm64/kernel/module.c apply_relocate_add().

// Instruction immediate fields (aarch64_insn_encode_immediate()).
type arm64Imm uint8

const (
	arm64Imm26  arm64Imm = iota // B, BL: bits [25:0]
	arm64Imm19                  // B.cond, CBZ, LDR literal: bits [23:5]
	arm64Imm16                  // MOVZ/MOVN/MOVK: bits [20:5]
	arm64Imm14                  // TBZ/TBNZ: bits [18:5]
	arm64Imm12                  // ADD/LDR/STR unsigned offset: bits [21:10]
	arm64ImmADR                 // ADR/ADRP: immlo [30:29], immhi [23:5]
)

// arm64Fields are the fields' masks and positions (ADR is split).
var arm64Fields = [...]struct {
	mask  uint32
	shift uint
}{
	arm64Imm26: {0x3ffffff, 0},
	arm64Imm19: {0x7ffff, 5},
	arm64Imm16: {0xffff, 5},
	arm64Imm14: {0x3fff, 5},
	arm64Imm12: {0xfff, 10},
}

func arm64Encode(t arm64Imm, insn uint32, imm uint64) uint32 {
	if t == arm64ImmADR {
		return insn&^(3<<29|0x7ffff<<5) | (uint32(imm)&3)<<29 | (uint32(imm>>2)&0x7ffff)<<5
	}
	f := arm64Fields[t]
	return insn&^(f.mask<<f.shift) | (uint32(imm)&f.mask)<<f.shift
}

// Relocation types debug/elf does not name (arch/arm64/include/asm/elf.h).
const (
	arm64RNone        = 256 // R_AARCH64_NONE (debug/elf's R_AARCH64_NONE is 0, R_ARM_NONE, also accepted)
	arm64MovwPrelG0   = 287
	arm64MovwPrelG0NC = 288
	arm64MovwPrelG1   = 289
	arm64MovwPrelG1NC = 290
	arm64MovwPrelG2   = 291
	arm64MovwPrelG2NC = 292
	arm64MovwPrelG3   = 293
)

// Relocation operations (do_reloc()).
const (
	arm64OpAbs  = iota // S + A
	arm64OpPrel        // S + A - P
	arm64OpPage        // Page(S + A) - Page(P)
)

func arm64DoReloc(op int, p, val uint64) int64 {
	switch op {
	case arm64OpPrel:
		return int64(val - p)
	case arm64OpPage:
		return int64(val&^0xfff - p&^0xfff)
	}
	return int64(val)
}

// arm64Imm is reloc_insn_imm(): the value's bits [lsb, lsb+len) go into
// the instruction; the bits above must be a sign extension (all 0 or all
// 1), else the value is out of range.
func arm64InsnImm(op int, loc []byte, p, val uint64, lsb, length uint, t arm64Imm) bool {
	sval := arm64DoReloc(op, p, val) >> lsb
	mask := (uint64(1)<<(lsb+length) - 1) >> lsb
	insn := binary.LittleEndian.Uint32(loc)
	binary.LittleEndian.PutUint32(loc, arm64Encode(t, insn, uint64(sval)&mask))
	// Range: [-2^(len-1), 2^(len-1)) in units of 1 << lsb.
	top := (sval & int64(^(mask >> 1))) >> (length - 1)
	return uint64(top+1) < 2
}

// arm64Movw is reloc_insn_movw(): a 16-bit slice of the value into
// MOVZ/MOVN/MOVK. For the signed (MOVNZ) forms a negative value turns the
// instruction into MOVN of the inverted slice.
func arm64Movw(op int, loc []byte, p, val uint64, lsb uint, signed bool) bool {
	sval := arm64DoReloc(op, p, val)
	imm := uint64(sval >> lsb)
	insn := binary.LittleEndian.Uint32(loc)
	if signed {
		insn &^= 3 << 29
		if sval >= 0 {
			insn |= 2 << 29 // MOVZ
		} else {
			imm = ^imm // MOVN
		}
	}
	binary.LittleEndian.PutUint32(loc, arm64Encode(arm64Imm16, insn, imm))
	return imm <= 0xffff
}

// arm64Data is reloc_data(): a 16-, 32- or 64-bit datum, unsigned for
// ABS (the kernel's check), signed for PREL. Data is stored in the
// kernel's own byte order (reloc_data() writes *(s64 *)place, native),
// big-endian on a CONFIG_CPU_BIG_ENDIAN kernel, where instructions stay
// little-endian (reloc_insn_imm() goes through le32_to_cpu()).
func arm64Data(order binary.ByteOrder, op int, loc []byte, p, val uint64, bits int) bool {
	sval := arm64DoReloc(op, p, val)
	switch bits {
	case 64:
		order.PutUint64(loc, uint64(sval))
		return true
	case 32:
		order.PutUint32(loc, uint32(sval))
		if op == arm64OpAbs {
			return sval >= 0 && sval <= math.MaxUint32
		}
		return sval >= math.MinInt32 && sval <= math.MaxInt32
	default:
		order.PutUint16(loc, uint16(sval))
		if op == arm64OpAbs {
			return sval >= 0 && sval <= math.MaxUint16
		}
		return sval >= math.MinInt16 && sval <= math.MaxInt16
	}
}

// arm64Fits turns a range check into the relocation's result.
func arm64Fits(ok bool, val uint64, detail string) error {
	if ok {
		return nil
	}
	return rangeErr(val, detail)
}

// rangeWhy is the detail of an arm64 range failure: the value (S+A)
// does not fit the field the relocation type gives it.
const rangeWhy = "S+A does not fit the instruction or data field"

// arm64Apply applies one relocation: apply_relocate_add()'s switch. The
// _NC forms and G3 are not range-checked, as in the kernel.
func arm64Apply(l *linker, rc *reloc) error {
	t := elf.R_AARCH64(rc.r.Type)
	if len(rc.loc) < 8 { // near the section's end: check the type's own size
		need := 4
		switch t {
		case elf.R_AARCH64_NONE, arm64RNone:
			return nil
		case elf.R_AARCH64_ABS64, elf.R_AARCH64_PREL64:
			need = 8
		case elf.R_AARCH64_ABS16, elf.R_AARCH64_PREL16:
			need = 2
		}
		if len(rc.loc) < need {
			return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("%d bytes needed, %d left in the section", need, len(rc.loc))}
		}
	}
	loc, p, val := rc.loc, rc.P, rc.S+uint64(rc.A)
	// Data in the object's byte order; instructions always little-endian.
	order := l.m.f.Order
	nc := func(bool) error { return nil } // overflow_check = false
	switch t {
	case elf.R_AARCH64_NONE, arm64RNone:
		return nil
	case elf.R_AARCH64_ABS64: // S + A, 64 bits: cannot overflow
		order.PutUint64(loc, val)
		return nil
	case elf.R_AARCH64_ABS32:
		return arm64Fits(arm64Data(order, arm64OpAbs, loc, p, val, 32), val, rangeWhy)
	case elf.R_AARCH64_ABS16:
		return arm64Fits(arm64Data(order, arm64OpAbs, loc, p, val, 16), val, rangeWhy)
	case elf.R_AARCH64_PREL64:
		return arm64Fits(arm64Data(order, arm64OpPrel, loc, p, val, 64), val, rangeWhy)
	case elf.R_AARCH64_PREL32:
		return arm64Fits(arm64Data(order, arm64OpPrel, loc, p, val, 32), val, rangeWhy)
	case elf.R_AARCH64_PREL16:
		return arm64Fits(arm64Data(order, arm64OpPrel, loc, p, val, 16), val, rangeWhy)

	// MOVZ/MOVK xd, #:abs_gN:sym
	case elf.R_AARCH64_MOVW_UABS_G0_NC:
		return nc(arm64Movw(arm64OpAbs, loc, p, val, 0, false))
	case elf.R_AARCH64_MOVW_UABS_G0:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 0, false), val, rangeWhy)
	case elf.R_AARCH64_MOVW_UABS_G1_NC:
		return nc(arm64Movw(arm64OpAbs, loc, p, val, 16, false))
	case elf.R_AARCH64_MOVW_UABS_G1:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 16, false), val, rangeWhy)
	case elf.R_AARCH64_MOVW_UABS_G2_NC:
		return nc(arm64Movw(arm64OpAbs, loc, p, val, 32, false))
	case elf.R_AARCH64_MOVW_UABS_G2:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 32, false), val, rangeWhy)
	case elf.R_AARCH64_MOVW_UABS_G3:
		return nc(arm64Movw(arm64OpAbs, loc, p, val, 48, false)) // the top bits cannot overflow
	// MOVZ/MOVN xd, #:abs_gN_s:sym
	case elf.R_AARCH64_MOVW_SABS_G0:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 0, true), val, rangeWhy)
	case elf.R_AARCH64_MOVW_SABS_G1:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 16, true), val, rangeWhy)
	case elf.R_AARCH64_MOVW_SABS_G2:
		return arm64Fits(arm64Movw(arm64OpAbs, loc, p, val, 32, true), val, rangeWhy)
	// MOVZ/MOVN/MOVK xd, #:prel_gN:sym
	case arm64MovwPrelG0NC:
		return nc(arm64Movw(arm64OpPrel, loc, p, val, 0, false))
	case arm64MovwPrelG0:
		return arm64Fits(arm64Movw(arm64OpPrel, loc, p, val, 0, true), val, rangeWhy)
	case arm64MovwPrelG1NC:
		return nc(arm64Movw(arm64OpPrel, loc, p, val, 16, false))
	case arm64MovwPrelG1:
		return arm64Fits(arm64Movw(arm64OpPrel, loc, p, val, 16, true), val, rangeWhy)
	case arm64MovwPrelG2NC:
		return nc(arm64Movw(arm64OpPrel, loc, p, val, 32, false))
	case arm64MovwPrelG2:
		return arm64Fits(arm64Movw(arm64OpPrel, loc, p, val, 32, true), val, rangeWhy)
	case arm64MovwPrelG3:
		return nc(arm64Movw(arm64OpPrel, loc, p, val, 48, true))

	// LDR xt, label: +-1 MiB
	case elf.R_AARCH64_LD_PREL_LO19:
		return arm64Fits(arm64InsnImm(arm64OpPrel, loc, p, val, 2, 19, arm64Imm19), val, rangeWhy)
	// ADR xd, label: +-1 MiB
	case elf.R_AARCH64_ADR_PREL_LO21:
		return arm64Fits(arm64InsnImm(arm64OpPrel, loc, p, val, 0, 21, arm64ImmADR), val, rangeWhy)
	// ADRP xd, label: +-4 GiB in pages
	case elf.R_AARCH64_ADR_PREL_PG_HI21_NC:
		// Not range-checked; a veneer that cannot be emitted still fails.
		if err := arm64ApplyADRP(l, rc, val); err != nil && !errors.Is(err, ErrOutOfRange) {
			return err
		}
		return nil
	case elf.R_AARCH64_ADR_PREL_PG_HI21:
		if !l.opts.Erratum843419 {
			// ADRP xd, sym: immhi:immlo = Page(S+A) - Page(P) in pages,
			// within +-4 GiB
			d := int64(val&^0xfff-p&^0xfff) >> 12
			insn := binary.LittleEndian.Uint32(loc)
			binary.LittleEndian.PutUint32(loc, arm64Encode(arm64ImmADR, insn, uint64(d)))
			return arm64Fits(d >= -arm64PageRange>>12 && d < arm64PageRange>>12, val, "ADRP reaches +-4 GiB")
		}
		return arm64ApplyADRP(l, rc, val)
	// ADD xd, xn, #:lo12:sym; LDR/STR xt, [xn, #:lo12:sym] (scaled)
	case elf.R_AARCH64_ADD_ABS_LO12_NC, elf.R_AARCH64_LDST8_ABS_LO12_NC:
		// ADD xd, xn, #:lo12:sym: imm12 [21:10] = (S+A) & 0xfff, no check
		insn := binary.LittleEndian.Uint32(loc)
		binary.LittleEndian.PutUint32(loc, insn&^(0xfff<<10)|uint32(val&0xfff)<<10)
		return nil
	case elf.R_AARCH64_LDST16_ABS_LO12_NC:
		return nc(arm64InsnImm(arm64OpAbs, loc, p, val, 1, 11, arm64Imm12))
	case elf.R_AARCH64_LDST32_ABS_LO12_NC:
		return nc(arm64InsnImm(arm64OpAbs, loc, p, val, 2, 10, arm64Imm12))
	case elf.R_AARCH64_LDST64_ABS_LO12_NC:
		return nc(arm64InsnImm(arm64OpAbs, loc, p, val, 3, 9, arm64Imm12))
	case elf.R_AARCH64_LDST128_ABS_LO12_NC:
		return nc(arm64InsnImm(arm64OpAbs, loc, p, val, 4, 8, arm64Imm12))
	// TBZ/TBNZ: +-32 KiB
	case elf.R_AARCH64_TSTBR14:
		return arm64Fits(arm64InsnImm(arm64OpPrel, loc, p, val, 2, 14, arm64Imm14), val, rangeWhy)
	// B.cond, CBZ/CBNZ: +-1 MiB
	case elf.R_AARCH64_CONDBR19:
		return arm64Fits(arm64InsnImm(arm64OpPrel, loc, p, val, 2, 19, arm64Imm19), val, rangeWhy)
	// B/BL label: imm26 [25:0] = (S+A-P) >> 2, within +-128 MiB, else
	// through a PLT entry
	case elf.R_AARCH64_JUMP26, elf.R_AARCH64_CALL26:
		d := int64(val - p)
		ok := d >= -arm64BranchRange && d < arm64BranchRange
		if ok && !(l.opts.ForcePLT && rc.plt) {
			insn := binary.LittleEndian.Uint32(loc)
			binary.LittleEndian.PutUint32(loc, insn&^0x3ffffff|uint32(d>>2)&0x3ffffff)
			return nil
		}
		if !ok && l.opts.NoRandomizeBase && l.plt[rc.region] == nil {
			// A kernel without KASLR and without ARM64_MODULE_PLTS
			// (its modules have no PLT sections) fails the load with
			// "overflow in relocation type".
			return rangeErr(val, "BL reaches +-128 MiB, and a module without PLT sections (no ARM64_MODULE_PLTS) has no PLT to go through")
		}
		if !l.replay {
			return errDefer
		}
		entry, perr := l.arm64PLT(rc.region, val)
		if perr != nil {
			if !ok {
				return perr
			}
			return nil // forced, but no slot: the direct branch stands
		}
		return arm64Fits(arm64InsnImm(arm64OpPrel, loc, p, entry, 2, 26, arm64Imm26), entry, "PLT entry out of branch range")
	}
	return &RelocError{Kind: ErrUnsupported}
}

// arm64Order is the order apply_relocate_add() meets the relocations of
// t in: for an executable section, module_frob_arch_sections() moved the
// branches that need a PLT (CALL26 and JUMP26 to another section) to the
// front in place, partition_branch_plt_relas()'s swaps (none without
// KASLR), and sorted that prefix by cmp_rela() (type, symbol, addend)
// with lib/sort.c's heapsort.
func arm64Order(l *linker, t *elfobj.RelocTable) ([]int, error) {
	if t.Target().Flags&elf.SHF_EXECINSTR == 0 || l.opts.NoRandomizeBase {
		return nil, nil // (as they are)
	}
	keys := make([]relKey, t.Len())
	for i := range keys {
		r, err := t.Reloc(i)
		if err != nil {
			return nil, err
		}
		typ := elf.R_AARCH64(r.Type)
		keys[i] = relKey{i: i, typ: r.Type, sym: r.Sym, addend: r.Addend,
			plt: (typ == elf.R_AARCH64_CALL26 || typ == elf.R_AARCH64_JUMP26) && uint32(l.m.f.Symbols[r.Sym].Shndx) != t.Section.Info}
	}
	// partition_branch_plt_relas(), its loop as it is
	i, j := 0, len(keys)-1
	for i < j {
		switch {
		case keys[i].plt:
			i++
		case keys[j].plt:
			keys[i], keys[j] = keys[j], keys[i]
		default:
			j--
		}
	}
	return kernelSort(keys, i), nil
}

// arm64ApplyADRP is reloc_insn_adrp(): an ordinary ADRP, unless erratum 843419
// is worked around and the ADRP sits at a page offset of 0xff8 or 0xffc:
// then ADR when the page is within +-1 MiB, else a veneer.
func arm64ApplyADRP(l *linker, rc *reloc, val uint64) error {
	if !l.opts.Erratum843419 || rc.P&0xfff < 0xff8 {
		return arm64Fits(arm64InsnImm(arm64OpPage, rc.loc, rc.P, val, 12, 21, arm64ImmADR), val, "ADRP reaches +-4 GiB")
	}
	if arm64InsnImm(arm64OpPrel, rc.loc, rc.P, val&^0xfff, 0, 21, arm64ImmADR) {
		insn := binary.LittleEndian.Uint32(rc.loc)
		binary.LittleEndian.PutUint32(rc.loc, insn&^(1<<31)) // ADRP -> ADR
		return nil
	}
	if !l.replay {
		return errDefer
	}
	veneer, err := l.arm64Veneer(rc, val&^0xfff)
	if err != nil {
		return err
	}
	// B veneer
	binary.LittleEndian.PutUint32(rc.loc, 0x14000000)
	return arm64Fits(arm64InsnImm(arm64OpPrel, rc.loc, rc.P, veneer, 2, 26, arm64Imm26), veneer, "veneer out of branch range")
}

// PLT entry instructions (struct plt_entry).
const (
	arm64BranchRange = 1 << 27    // B/BL: [-128 MiB, +128 MiB)
	arm64ADRPX16     = 0x90000010 // ADRP x16, #0
	arm64ADDX16      = 0x91000210 // ADD x16, x16, #0
	arm64BRX16       = 0xd61f0200 // BR x16
	arm64B           = 0x14000000 // B #0
	arm64PageRange   = 1 << 32    // ADRP: +-4 GiB
)

// arm64Forbidden is is_forbidden_offset_for_adrp().
func (l *linker) arm64Forbidden(addr uint64) bool {
	return l.opts.Erratum843419 && addr&0xfff >= 0xff8
}

// arm64PLT is module_emit_plt_entry(): ADRP x16, page(target); ADD x16,
// x16, #lo12(target); BR x16, in the next slot (past one whose ADRP would
// sit at 0xff8/0xffc, with erratum 843419), unless the last entry made
// has the same target: that one is reused, and the slot keeps the copy
// just written (plt_entries_equal() compares the two). The relocations
// come to it in the kernel's order (arm64Order), so the entries are the
// kernel's, slot for slot.
func (l *linker) arm64PLT(r Region, target uint64) (uint64, error) {
	a, err := l.pltFor(r)
	if err != nil {
		return 0, err
	}
	i := a.used
	if l.arm64Forbidden(a.p.Addr + uint64(i)*arm64PLTEntry) {
		i++
	}
	// The entry is written before it is compared with the last one: into
	// the section's spare slot when the counted ones are taken.
	addr := a.p.Addr + uint64(i)*arm64PLTEntry
	if err := arm64PutPLT(a.p, i, target); err != nil {
		return 0, err
	}
	k := pltKey{false, target}
	if a.hasLast && a.last == k {
		return a.lastAt, nil
	}
	if i >= a.max {
		why := ""
		if l.opts.NoRandomizeBase {
			why = "without KASLR, 6.1 reserves none for branches, which must then reach their targets"
		}
		return 0, pltFull(a, why)
	}
	a.used = i + 1
	a.made(k, addr)
	return addr, nil
}

// arm64FtraceTrampolines is module_init_ftrace_plt()'s trampolines, by
// generation: the sections that hold them, and the kernel functions
// their NR_FTRACE_PLTS entries branch to, which ftrace makes a module's
// call sites branch to when the kernel's are out of reach.
//   - 6.1 (with DYNAMIC_FTRACE_WITH_REGS, Debian's): two entries in
//     .text.ftrace_trampoline, FTRACE_ADDR and FTRACE_REGS_ADDR.
//   - 6.12 and 7.2: one entry, FTRACE_ADDR, in .text.ftrace_trampoline
//     and in .init.text.ftrace_trampoline, both of which the module
//     must have.
func arm64FtraceTrampolines(g kgen.Generation) (sections, targets []string) {
	if g <= kgen.Linux6_1 {
		return []string{arm64FtraceSection}, []string{"ftrace_caller", "ftrace_regs_caller"}
	}
	return []string{arm64FtraceSection, arm64InitFtraceSection}, []string{"ftrace_caller"}
}

// arm64Finalize is module_finalize()'s module_init_ftrace_plt(): it
// fills the trampolines (arm64FtraceTrampolines) from the kernel's own
// symbols (LinkOptions.Kernel), each left zero where they do not say.
func (l *linker) arm64Finalize() {
	if l.opts.Kernel == nil {
		return
	}
	secs, targets := arm64FtraceTrampolines(l.opts.Generation)
	for _, name := range secs {
		s := l.m.f.SectionByName(name)
		if s == nil || l.placed[s.Index] == nil {
			continue
		}
		p := l.placed[s.Index]
		p.fill()
		for i, target := range targets {
			if v, ok := l.opts.Kernel(target); ok {
				_ = arm64PutPLT(p, i, v) // (a target 4 GiB away is left zero)
			}
		}
	}
}

// arm64PutPLT writes entry i of p, a PLT or the ftrace trampolines
// (get_plt_entry()): ADRP x16, page(target); ADD x16, x16,
// #lo12(target); BR x16. An entry past p's bytes is not written.
func arm64PutPLT(p *Placed, i int, target uint64) error {
	b := p.Data[min(i*arm64PLTEntry, len(p.Data)):]
	if len(b) < arm64PLTEntry {
		return nil
	}
	if err := arm64ADRPADD(b, p.Addr+uint64(i)*arm64PLTEntry, target, 16); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[8:], arm64BRX16)
	return nil
}

// arm64ADRPADD writes ADRP xd, page(target); ADD xd, xd, #lo12(target)
// at b, whose address is addr (__get_adrp_add_pair()).
func arm64ADRPADD(b []byte, addr, target uint64, rd uint32) error {
	d := int64(target&^0xfff) - int64(addr&^0xfff)
	if d < -arm64PageRange || d >= arm64PageRange {
		return rangeErr(uint64(d), "PLT target more than 4 GiB from the PLT")
	}
	binary.LittleEndian.PutUint32(b, arm64Encode(arm64ImmADR, arm64ADRPX16&^0x1f|rd, uint64(d>>12)))
	binary.LittleEndian.PutUint32(b[4:], arm64Encode(arm64Imm12, arm64ADDX16&^0x3ff|rd<<5|rd, target&0xfff))
	return nil
}

// arm64Veneer is module_emit_veneer_for_adrp(): ADRP xd, page; ADD xd, xd,
// #0; B loc+4, in a PLT slot, for an ADRP that must not stay where it is.
func (l *linker) arm64Veneer(rc *reloc, page uint64) (uint64, error) {
	a, err := l.pltFor(rc.region)
	if err != nil {
		return 0, err
	}
	i := a.used
	if l.arm64Forbidden(a.p.Addr + uint64(i)*arm64PLTEntry) {
		i++
	}
	if i >= a.max {
		return 0, pltFull(a, "")
	}
	addr := a.p.Addr + uint64(i)*arm64PLTEntry
	b := a.p.Data[i*arm64PLTEntry:]
	rd := binary.LittleEndian.Uint32(rc.loc) & 0x1f
	if err := arm64ADRPADD(b, addr, page, rd); err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint32(b[8:], arm64B)
	if !arm64InsnImm(arm64OpPrel, b[8:], addr+8, rc.P+4, 2, 26, arm64Imm26) {
		return 0, rangeErr(rc.P+4, "veneer's return branch out of range")
	}
	a.used = i + 1
	a.hasLast = false // (a veneer ends in B, no PLT entry equals it)
	return addr, nil
}

// arm64Frob is arm64's module_frob_arch_sections(): the PLT sections
// (frobPLT), and the ftrace trampoline sections, NR_FTRACE_PLTS entries
// each (arm64FtraceTrampolines).
func arm64Frob(m *Module, opts *LinkOptions, fr *frobbed) error {
	if err := frobPLT(m, opts, fr); err != nil {
		return err
	}
	secs, targets := arm64FtraceTrampolines(opts.Generation)
	for _, name := range secs {
		if s := m.f.SectionByName(name); s != nil {
			fr.sizes[s.Index] = uint64(len(targets)) * arm64PLTEntry
			fr.aligns[s.Index] = 4 // __alignof__(struct plt_entry)
			fr.flags[s.Index] = elf.SHF_ALLOC | elf.SHF_EXECINSTR
		}
	}
	return nil
}
