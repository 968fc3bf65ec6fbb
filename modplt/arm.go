// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// arm: arch/arm/kernel/module-plts.c, with Debian armmp's configuration
// (L1_CACHE_BYTES 64, CONFIG_DYNAMIC_FTRACE).
const (
	armL1CacheBytes = 64
	// struct plt_entries: a cache line of "ldr pc, [pc, #off]" and a cache
	// line of their literals; each logical entry takes 8 bytes, and the
	// PLT grows a whole block (two cache lines) at a time.
	armPLTBlock = 2 * armL1CacheBytes
	armPLTEntry = 8
	// fixed_plts[]: FTRACE_ADDR and MCOUNT_ADDR, pre-seeded into every PLT.
	armFixedPLTs = 2

	// EF_ARM_BE8: a big-endian object whose instructions are little-endian
	// (the kernel links BE8 modules with --be8).
	armEFBE8 = 0x00800000

	// MODULES_VADDR (arch/arm/include/asm/memory.h): PAGE_OFFSET
	// (0xc0000000, the 3G/1G split) - 16 MiB, where module_alloc() looks
	// first, within a BL's reach of the kernel's text.
	armModulesVaddr = 0xbf000000
)

var armArch = newArch(arch{
	pltSections: []string{".plt", ".init.plt"},
	pltMissing:  "module PLT section(s) missing",
	absPointer:  uint32(elf.R_ARM_ABS32),
	name:        "arm",
	machine:     elf.EM_ARM,
	is64:        false,
	relType:     elf.SHT_REL,
	pltEntry:    armPLTEntry,
	fixedPLTs:   armFixedPLTs,
	// sh_size = round_up(n * PLT_ENT_SIZE, sizeof(struct plt_entries)).
	pltSize: func(n int) uint64 {
		return (uint64(n)*armPLTEntry + armPLTBlock - 1) / armPLTBlock * armPLTBlock
	},
	moduleArea: func(uint64, uint64) uint64 { return armModulesVaddr },
	// arch/arm/kernel/module.c overrides module_init_section() and
	// module_exit_section() to add the unwind tables' names.
	initPrefixes: []string{".init", ".ARM.extab.init", ".ARM.exidx.init"},
	exitPrefixes: []string{".exit", ".ARM.extab.exit", ".ARM.exidx.exit"},
	kind:         armKind,
	nslots:       5,
	addend:       armAddend,
	kernel:       armKernel,
	order:        armOrder,
	apply:        armApply,
	frob:         armFrob,
})

// armKind classifies arm relocation types.
func armKind(t uint32) (relKind, uint8, uint8) {
	switch elf.R_ARM(t) {
	case elf.R_ARM_CALL:
		return kindBranch, 0, 0
	case elf.R_ARM_PC24:
		return kindBranch, 1, 0
	case elf.R_ARM_JUMP24:
		return kindBranch, 2, 0
	case elf.R_ARM_THM_PC22: // R_ARM_THM_CALL
		return kindBranch, 3, 1 // Thumb-2 entries are ldr.w pc: another kind
	case elf.R_ARM_THM_JUMP24:
		return kindBranch, 4, 1
	}
	return kindOther, 0, 0
}

// armInsnOrder is the byte order of instructions in m: little-endian
// unless the object is big-endian and not BE8.
func armInsnOrder(m *Module) binary.ByteOrder {
	if m.f.Order == binary.ByteOrder(binary.BigEndian) && m.f.Flags&armEFBE8 == 0 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// armAddend decodes the addend a REL branch keeps in its instruction, and
// applies is_zero_addend_relocation()'s bit test, which compares the raw
// field with the PC bias (-8 in ARM state, -4 in Thumb) instead of
// decoding it.
func armAddend(m *Module, text []byte, r elfobj.Reloc) (int64, bool, error) {
	if r.Offset > uint64(len(text)) || uint64(len(text))-r.Offset < 4 {
		return 0, false, fmt.Errorf("relocation at %#x: the instruction is past the end of the section (%d bytes)", r.Offset, len(text))
	}
	o := armInsnOrder(m)
	b := text[r.Offset:]
	switch elf.R_ARM(r.Type) {
	case elf.R_ARM_THM_PC22, elf.R_ARM_THM_JUMP24: // THM_CALL, THM_JUMP24
		// BL/B.W: S:I1:I2:imm10:imm11:0, I1 = ~(J1 ^ S), I2 = ~(J2 ^ S).
		upper, lower := uint32(o.Uint16(b)), uint32(o.Uint16(b[2:]))
		s := upper >> 10 & 1
		i1 := ^(lower>>13 ^ s) & 1
		i2 := ^(lower>>11 ^ s) & 1
		v := s<<24 | i1<<23 | i2<<22 | (upper&0x3ff)<<12 | (lower&0x7ff)<<1
		zero := upper&0x7ff == 0x7ff && lower&0x2fff == 0x2ffe
		return int64(int32(v<<7) >> 7), zero, nil
	default:
		// BL/B: imm24 << 2, sign-extended from bit 25.
		insn := o.Uint32(b)
		return int64(int32(insn<<8) >> 6), insn&0xffffff == 0xfffffe, nil
	}
}

// armKernel is module_frob_arch_sections()'s work on one section: sort()
// every relocation of the section by cmp_rel() (type, symbol: the addend
// is in the instruction, not in the entry), then count_plts() counts each
// branch unless both it and the one before it are zero-addend and equal.
//
// The heapsort is not stable, so when a (type, symbol) group mixes zero
// and non-zero addends, the order it leaves them in decides the count.
// When no group is mixed the count is order-free: one per zero-addend
// group plus one per non-zero-addend branch. Only a mixed section is
// sorted, by the kernel's own heapsort (armKernelSorted).
func armKernel(c *counter, w *sectionWork) (int, error) {
	serial := c.nextSerial()
	count := 0
	for i := range w.cands {
		x := &w.cands[i]
		switch c.markGroup(x, serial) {
		case groupMixed:
			return armKernelSorted(c.m, w)
		case groupNew:
			count++
		case groupSeen:
			if !x.zero {
				count++
			}
		}
	}
	return count, nil
}

// armKernelSorted is the kernel's arm path for one section, step for step.
func armKernelSorted(m *Module, w *sectionWork) (int, error) {
	zero := func(r elfobj.Reloc) (bool, error) {
		_, z, err := armAddend(m, w.text, r)
		return z, err
	}
	count := 0
	var prev elfobj.Reloc
	for k, i := range armSorted(&w.table) {
		x, err := w.table.Reloc(i)
		p := prev
		prev = x
		if kind, _, _ := armKind(x.Type); kind != kindBranch {
			continue
		} else if err != nil {
			// Only branches' symbols are looked at, so only theirs must
			// be in the table (as in the scan).
			return 0, err
		}
		if uint32(m.f.Symbols[x.Sym].Shndx) == w.table.Section.Info {
			continue
		}
		z, err := zero(x)
		if err != nil {
			return 0, err
		}
		dup := false
		if k > 0 && x.Type == p.Type && x.Sym == p.Sym {
			if dup, err = zero(p); err != nil {
				return 0, err
			}
		}
		if !z || !dup {
			count++
		}
	}
	return count, nil
}

// armSorted is the order module_frob_arch_sections() leaves the
// relocations of t in: sorted in place by cmp_rel() (type, symbol: the
// addend is in the instruction, not in the entry) with lib/sort.c's
// heapsort, which is not stable: the order of equal keys is its own.
// (A symbol index past the table sorts as it is; whoever reads that
// relocation reports it.)
func armSorted(t *elfobj.RelocTable) []int {
	keys := make([]relKey, t.Len())
	for i := range keys {
		r, _ := t.Reloc(i)
		keys[i] = relKey{i: i, typ: r.Type, sym: r.Sym} // (REL: no addend in the entry)
	}
	return kernelSort(keys, len(keys))
}

// armOrder is the order apply_relocate() meets the relocations of t in:
// those of an executable section as module_frob_arch_sections() sorted
// them (armSorted), which decides the PLT entries; others as they are.
func armOrder(_ *linker, t *elfobj.RelocTable) ([]int, error) {
	if t.Target().Flags&elf.SHF_EXECINSTR == 0 {
		return nil, nil
	}
	return armSorted(t), nil
}

// Linking: arch/arm/kernel/module.c apply_relocate(). Addends are in the
// instructions (REL).
const (
	armBranchLimit   = 0x02000000 // B/BL: offsets in (-32 MiB, +32 MiB)
	thumbBranchLimit = 0x01000000 // Thumb-2 BL/B.W: (-16 MiB, +16 MiB)
	armPrel31Limit   = 0x40000000 // PREL31: [-1 GiB, +1 GiB)

	armPLTLdr      = 0xe59ff000 | (armL1CacheBytes - 8) // ldr pc, [pc, #56]: the literal one cache line on
	thumbPLTLdrHi  = 0xf8df                             // ldr.w pc, [pc, #60] (first halfword)
	thumbPLTLdrLo  = 0xf000 | (armL1CacheBytes - 4)     // (second halfword)
	armPLTPerBlock = armL1CacheBytes / 4                // PLT_ENT_COUNT: entries per block
)

// armFixedTargets are fixed_plts[]: FTRACE_ADDR and MCOUNT_ADDR.
var armFixedTargets = [armFixedPLTs]string{"ftrace_caller", "__gnu_mcount_nc"}

func armApply(l *linker, rc *reloc) error {
	if len(rc.loc) < 4 {
		// "out of bounds relocation": r_offset > sh_size - 4.
		return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("4 bytes needed, %d left in the section", len(rc.loc))}
	}
	io := armInsnOrder(l.m) // instructions
	do := l.m.f.Order       // data
	loc, p, s := rc.loc, uint32(rc.P), uint32(rc.S)
	switch elf.R_ARM(rc.r.Type) {
	case elf.R_ARM_NONE:
		return nil
	case elf.R_ARM_ABS32, elf.R_ARM_TARGET1: // *loc += S
		do.PutUint32(loc, do.Uint32(loc)+s)
		return nil
	case elf.R_ARM_REL32: // *loc += S - P
		do.PutUint32(loc, do.Uint32(loc)+s-p)
		return nil
	case elf.R_ARM_PREL31: // 31-bit signed offset, bit 31 kept (unwind tables)
		v := do.Uint32(loc)
		off := int32(v<<1)>>1 + int32(s-p)
		if off >= armPrel31Limit || off < -armPrel31Limit {
			return rangeErr(uint64(int64(off)), "PREL31 reaches +-1 GiB")
		}
		do.PutUint32(loc, v&0x80000000|uint32(off)&0x7fffffff)
		return nil
	case elf.R_ARM_V4BX: // BX Rm -> MOV PC, Rm, keeping Rm and the condition
		io.PutUint32(loc, io.Uint32(loc)&0xf000000f|0x01a0f000)
		return nil
	case elf.R_ARM_PC24, elf.R_ARM_CALL, elf.R_ARM_JUMP24: // B/BL imm24
		if s&3 != 0 {
			return &RelocError{Kind: ErrInterworking, Detail: "ARM -> Thumb"}
		}
		insn := io.Uint32(loc)
		off := int32(insn<<8)>>6 + int32(s-p)
		if l.armNeedsPLT(rc, off, armBranchLimit) {
			if !l.replay {
				return errDefer
			}
			entry, err := l.armPLT(rc.region, false, uint32(off)+p+8)
			if err == nil {
				off = int32(uint32(entry) - p - 8)
			} else if armOutOfRange(off, armBranchLimit) {
				return err
			}
		}
		if armOutOfRange(off, armBranchLimit) {
			return rangeErr(uint64(int64(off)), "B/BL reaches +-32 MiB")
		}
		io.PutUint32(loc, insn&0xff000000|uint32(off>>2)&0x00ffffff)
		return nil
	case elf.R_ARM_MOVW_ABS_NC, elf.R_ARM_MOVT_ABS, elf.R_ARM_MOVW_PREL_NC, elf.R_ARM_MOVT_PREL:
		// MOVW/MOVT rd, #imm16: imm4 [19:16], imm12 [11:0]
		insn := io.Uint32(loc)
		off := int32(((insn&0xf0000)>>4|insn&0xfff)^0x8000) - 0x8000
		off += int32(s)
		t := elf.R_ARM(rc.r.Type)
		if t == elf.R_ARM_MOVW_PREL_NC || t == elf.R_ARM_MOVT_PREL {
			off -= int32(p)
		}
		if t == elf.R_ARM_MOVT_ABS || t == elf.R_ARM_MOVT_PREL {
			off >>= 16
		}
		v := uint32(off)
		io.PutUint32(loc, insn&0xfff0f000|(v&0xf000)<<4|v&0x0fff)
		return nil
	case elf.R_ARM_ALU_PC_G0_NC, elf.R_ARM_ALU_PC_G1_NC:
		// ADD/SUB rd, pc, #rotated imm8: the group's part of the offset.
		group := uint32(1)
		if elf.R_ARM(rc.r.Type) == elf.R_ARM_ALU_PC_G0_NC {
			group = 0
		}
		insn := io.Uint32(loc)
		off := int32(bits.RotateLeft32(insn&0xff, -int((insn&0xf00)>>7)))
		if insn&(1<<22) != 0 {
			off = -off
		}
		off += int32(s - p)
		if off < 0 {
			off = -off
			insn = insn&^(1<<23) | 1<<22 // SUB
		} else {
			insn = insn&^(1<<22) | 1<<23 // ADD
		}
		uoff := uint32(off)
		shift := armGroupRem(group, &uoff)
		if shift < 24 {
			uoff >>= 24 - shift
			uoff |= (shift + 8) << 7
		}
		io.PutUint32(loc, insn&^0xfff|uoff)
		return nil
	case elf.R_ARM_LDR_PC_G2:
		// LDR rd, [pc, #+-imm12]: what groups 0 and 1 leave.
		insn := io.Uint32(loc)
		off := int32(insn & 0xfff)
		if insn&(1<<23) == 0 {
			off = -off
		}
		off += int32(s - p)
		if off < 0 {
			off = -off
			insn &^= 1 << 23
		} else {
			insn |= 1 << 23
		}
		uoff := uint32(off)
		armGroupRem(2, &uoff)
		if uoff > 0xfff {
			return rangeErr(uint64(uoff), "LDR_PC_G2 residual does not fit 12 bits")
		}
		io.PutUint32(loc, insn&^0xfff|uoff)
		return nil
	case elf.R_ARM_THM_PC22, elf.R_ARM_THM_JUMP24: // THM_CALL, THM_JUMP24: Thumb-2 BL/B.W
		if l.m.f.Symbols[rc.r.Sym].Type() == elf.STT_FUNC && s&1 == 0 {
			return &RelocError{Kind: ErrInterworking, Detail: "Thumb -> ARM"}
		}
		upper, lower := uint32(io.Uint16(loc)), uint32(io.Uint16(loc[2:]))
		// S:I1:I2:imm10:imm11:0, I1 = ~(J1 ^ S), I2 = ~(J2 ^ S)
		sign := upper >> 10 & 1
		j1, j2 := lower>>13&1, lower>>11&1
		v := sign<<24 | (^(j1^sign)&1)<<23 | (^(j2^sign)&1)<<22 | (upper&0x3ff)<<12 | (lower&0x7ff)<<1
		off := int32(v<<7)>>7 + int32(s-p)
		if l.armNeedsPLT(rc, off, thumbBranchLimit) {
			if !l.replay {
				return errDefer
			}
			entry, err := l.armPLT(rc.region, true, uint32(off)+p+4)
			if err == nil {
				off = int32(uint32(entry) - p - 4)
			} else if armOutOfRange(off, thumbBranchLimit) {
				return err
			}
		}
		if armOutOfRange(off, thumbBranchLimit) {
			return rangeErr(uint64(int64(off)), "Thumb-2 BL/B.W reaches +-16 MiB")
		}
		u := uint32(off)
		sign = u >> 24 & 1
		j1 = sign ^ (^(u >> 23) & 1)
		j2 = sign ^ (^(u >> 22) & 1)
		io.PutUint16(loc, uint16(upper&0xf800|sign<<10|u>>12&0x3ff))
		io.PutUint16(loc[2:], uint16(lower&0xd000|j1<<13|j2<<11|u>>1&0x7ff))
		return nil
	case elf.R_ARM_THM_MOVW_ABS_NC, elf.R_ARM_THM_MOVT_ABS, elf.R_ARM_THM_MOVW_PREL_NC, elf.R_ARM_THM_MOVT_PREL:
		// Thumb-2 MOVW/MOVT: imm16 = imm4:i:imm3:imm8
		upper, lower := uint32(io.Uint16(loc)), uint32(io.Uint16(loc[2:]))
		off := int32(((upper&0xf)<<12|(upper&0x400)<<1|(lower&0x7000)>>4|lower&0xff)^0x8000) - 0x8000
		off += int32(s)
		t := elf.R_ARM(rc.r.Type)
		if t == elf.R_ARM_THM_MOVW_PREL_NC || t == elf.R_ARM_THM_MOVT_PREL {
			off -= int32(p)
		}
		if t == elf.R_ARM_THM_MOVT_ABS || t == elf.R_ARM_THM_MOVT_PREL {
			off >>= 16
		}
		v := uint32(off)
		io.PutUint16(loc, uint16(upper&0xfbf0|(v&0xf000)>>12|(v&0x0800)>>1))
		io.PutUint16(loc[2:], uint16(lower&0x8f00|(v&0x0700)<<4|v&0xff))
		return nil
	}
	return &RelocError{Kind: ErrUnsupported}
}

func armOutOfRange(off int32, limit int32) bool { return off <= -limit || off >= limit }

// armNeedsPLT: the branch is out of range, or the debug knob forces every
// branch that was counted through the PLT.
func (l *linker) armNeedsPLT(rc *reloc, off, limit int32) bool {
	return armOutOfRange(off, limit) || l.opts.ForcePLT && rc.plt
}

// armGroupRem is get_group_rem(): strips the ALU group relocations'
// 8-bit-rotated chunks from the top of *off, group+1 times.
func armGroupRem(group uint32, off *uint32) uint32 {
	val := *off
	var shift uint32
	for {
		shift = 32
		if val != 0 {
			shift = uint32(bits.LeadingZeros32(val)) &^ 1 // (31 - __fls(val)) & ~1
		}
		*off = val
		if val == 0 {
			break
		}
		val &= 0xffffff >> shift
		if group == 0 {
			break
		}
		group--
	}
	return shift
}

// armPLTSlot returns the addresses of entry i's instruction and literal:
// struct plt_entries blocks of PLT_ENT_COUNT instructions, then as many
// literals one cache line on.
func armPLTSlot(i int) (ldr, lit int) {
	b, k := i/armPLTPerBlock, i%armPLTPerBlock
	return b*armPLTBlock + 4*k, b*armPLTBlock + armL1CacheBytes + 4*k
}

// armPLT is get_module_plt(): the entry for target in region r's PLT.
// The first one asked for takes the fixed slots first (prealloc_fixed());
// a target that is a fixed slot's, or the last entry's, is that entry;
// any other gets the next slot. The relocations come to it in the
// kernel's order (armOrder), so the entries are the kernel's, slot for
// slot.
func (l *linker) armPLT(r Region, thumb bool, target uint32) (uint64, error) {
	a, err := l.pltFor(r)
	if err != nil {
		return 0, err
	}
	if a.fixed == nil {
		l.armPrefillFixed(a)
	}
	for i, v := range a.fixed {
		if v != 0 && v == uint64(target) {
			ldr, _ := armPLTSlot(i)
			return a.p.Addr + uint64(ldr), nil
		}
	}
	k := pltKey{thumb, uint64(target)}
	if a.hasLast && a.last == k {
		return a.lastAt, nil
	}
	if a.used >= a.max {
		return 0, pltFull(a, "")
	}
	e := l.armWritePLT(a, a.used, thumb, target)
	a.used++
	a.made(k, e)
	return e, nil
}

// armWritePLT writes entry i: its instruction and literal; where it
// starts a block of PLT_ENT_COUNT, the block's other instructions too, as
// get_module_plt() fills a new struct plt_entries (its other literals
// zero).
func (l *linker) armWritePLT(a *pltArea, i int, thumb bool, target uint32) uint64 {
	io := armInsnOrder(l.m)
	ldr, lit := armPLTSlot(i)
	put := func(x int) {
		if thumb {
			io.PutUint16(a.p.Data[x:], thumbPLTLdrHi)
			io.PutUint16(a.p.Data[x+2:], thumbPLTLdrLo)
		} else {
			io.PutUint32(a.p.Data[x:], armPLTLdr)
		}
	}
	if i%armPLTPerBlock == 0 {
		for k := range armPLTPerBlock {
			put(ldr + 4*k)
		}
		clear(a.p.Data[lit : lit+armL1CacheBytes])
	}
	put(ldr)
	l.m.f.Order.PutUint32(a.p.Data[lit:], target)
	return a.p.Addr + uint64(ldr)
}

// armPrefillFixed is prealloc_fixed(): the block of the fixed slots, with
// their targets where the kernel's symbols (LinkOptions.Kernel, else
// Resolve) give them. FTRACE_ADDR and MCOUNT_ADDR are the kernel's own
// addresses, not exports: ftrace_caller is no module's to resolve.
func (l *linker) armPrefillFixed(a *pltArea) {
	find := l.opts.Kernel
	if find == nil {
		find = l.opts.Resolve
	}
	a.fixed = make([]uint64, armFixedPLTs)
	a.used = armFixedPLTs
	thumb := false // (a Thumb-2 kernel's entries are all Thumb-2; Debian's are ARM)
	for i, name := range armFixedTargets {
		v, ok := uint64(0), false
		if find != nil {
			v, ok = find(name)
		}
		if ok {
			a.fixed[i] = uint64(uint32(v))
		}
		l.armWritePLT(a, i, thumb, uint32(a.fixed[i]))
	}
}

// shtARMExidx is SHT_ARM_EXIDX (ELF_SECTION_UNWIND), the type of an
// .ARM.exidx section.
const shtARMExidx = elf.SectionType(0x70000001)

// armUnwindAsText: 7.2's module_frob_arch_sections(), with
// CONFIG_ARM_UNWIND and without CONFIG_VMSPLIT_3G, marks the unwind
// sections (SHT_ARM_EXIDX, and those named .ARM.extab*) executable, so
// that they are laid out with the code their R_ARM_PREL31 relocations
// reach (+-1 GiB).
func armUnwindAsText(f *elfobj.File, flags map[int]elf.SectionFlag) {
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type == shtARMExidx || strings.HasPrefix(s.Name, ".ARM.extab") {
			flags[i] = cmp.Or(flags[i], s.Flags) | elf.SHF_EXECINSTR
		}
	}
}

// armFrob is arm's module_frob_arch_sections(): the PLT sections
// (frobPLT), and from 7.2 the unwind sections made code where the
// kernel's configuration says so (armUnwindAsText).
func armFrob(m *Module, opts *LinkOptions, fr *frobbed) error {
	if err := frobPLT(m, opts, fr); err != nil {
		return err
	}
	if opts.ARMUnwindText && opts.Generation >= kgen.Linux7_2 {
		armUnwindAsText(m.f, fr.flags)
	}
	return nil
}
