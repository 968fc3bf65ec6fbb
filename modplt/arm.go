package modplt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/ksort"
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
)

var armArch = newArch(arch{
	name:      "arm",
	machine:   elf.EM_ARM,
	is64:      false,
	relType:   elf.SHT_REL,
	pltEntry:  armPLTEntry,
	fixedPLTs: armFixedPLTs,
	// sh_size = round_up(n * PLT_ENT_SIZE, sizeof(struct plt_entries)).
	pltSize: func(n int) uint64 {
		return (uint64(n)*armPLTEntry + armPLTBlock - 1) / armPLTBlock * armPLTBlock
	},
	// arch/arm/kernel/module.c overrides module_init_section() and
	// module_exit_section() to add the unwind tables' names.
	initPrefixes: []string{".init", ".ARM.extab.init", ".ARM.exidx.init"},
	exitPrefixes: []string{".exit", ".ARM.extab.exit", ".ARM.exidx.exit"},
	kind:         armKind,
	nslots:       5,
	addend:       armAddend,
	kernel:       armKernel,
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
	type rel struct {
		off      uint64
		typ, sym uint32
	}
	rels := make([]rel, w.table.Len())
	for i := range rels {
		r, err := w.table.Reloc(i)
		if err != nil {
			return 0, err
		}
		rels[i] = rel{r.Offset, r.Type, r.Sym}
	}
	cmpRel := func(x, y *rel) int {
		if x.typ != y.typ {
			return cmp.Compare(x.typ, y.typ)
		}
		return cmp.Compare(x.sym, y.sym)
	}
	ksort.Sort(rels, cmpRel)
	zero := func(x *rel) (bool, error) {
		_, z, err := armAddend(m, w.text, elfobj.Reloc{Offset: x.off, Type: x.typ})
		return z, err
	}
	count := 0
	for i := range rels {
		x := &rels[i]
		if k, _, _ := armKind(x.typ); k != kindBranch || uint32(m.f.Symbols[x.sym].Shndx) == w.table.Section.Info {
			continue
		}
		z, err := zero(x)
		if err != nil {
			return 0, err
		}
		dup := false
		if i > 0 && cmpRel(x, &rels[i-1]) == 0 {
			if dup, err = zero(&rels[i-1]); err != nil {
				return 0, err
			}
		}
		if !z || !dup {
			count++
		}
	}
	return count, nil
}
