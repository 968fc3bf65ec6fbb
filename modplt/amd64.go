// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/klpresolve/klpresolve/kgen"
)

// x86_64 modules branch with PC32/PLT32 and the kernel gives them no PLT
// (they are loaded within 2 GiB of everything they call). A module built
// as PIE addresses its external symbols through a GOT; mainline never
// merged module GOT support, so the rules are those of Thomas Garnier's
// PIE series (arch/x86/kernel/module.c under CONFIG_X86_PIE): sort each
// section by (type, symbol, addend) and count each distinct entry once.
const amd64GOTEntry = 8 // a GOT entry is the target's absolute address

// amd64ModulesVaddr: MODULES_VADDR (arch/x86/include/asm/pgtable_64_types.h),
// __START_KERNEL_map + KERNEL_IMAGE_SIZE; module_alloc() adds a KASLR
// offset (module_load_offset()), which LinkOptions.Base stands for.
const amd64ModulesVaddr = 0xffffffffc0000000

var amd64Arch = newArch(arch{
	noLookup:     "_GLOBAL_OFFSET_TABLE_",
	absPointer:   uint32(elf.R_X86_64_64),
	name:         "x86_64",
	machine:      elf.EM_X86_64,
	is64:         true,
	relType:      elf.SHT_RELA,
	pltEntry:     0,
	pltSize:      func(int) uint64 { return 0 },
	moduleArea:   func(uint64, uint64) uint64 { return amd64ModulesVaddr },
	initPrefixes: []string{".init"},
	exitPrefixes: []string{".exit"},
	kind: func(t uint32) (relKind, uint8, uint8) {
		switch elf.R_X86_64(t) {
		case elf.R_X86_64_PC32:
			return kindBranchStat, 0, 0
		case elf.R_X86_64_PLT32:
			return kindBranchStat, 1, 0
		case elf.R_X86_64_GOTPCREL:
			return kindGOT, 0, 0
		case elf.R_X86_64_GOTPCRELX:
			return kindGOT, 1, 0
		case elf.R_X86_64_REX_GOTPCRELX:
			return kindGOT, 2, 0 // all three take the same entry
		}
		return kindOther, 0, 0
	},
	nslots: 3,
	addend: relaAddend,
	kernel: amd64Kernel,
	apply:  amd64Apply,
	setup:  func(l *linker, _ *frobbed) error { return l.addGOT() },
})

// amd64Kernel counts one section's GOT entries as Garnier's count_gots()
// did after sorting: distinct (type, symbol, addend).
func amd64Kernel(c *counter, w *sectionWork) (int, error) {
	serial := c.nextSerial()
	count := 0
	for i := range w.cands {
		if c.firstInSectionAny(&w.cands[i], serial) {
			count++
		}
	}
	return count, nil
}

// Linking: arch/x86/kernel/module.c __apply_relocate_add() (6.1),
// __write_relocate_add() (6.12 and later), and the module GOT of a
// PIE-built module.

// amd64Apply computes, range-checks and writes one relocation, in the
// order of the kernel's generation: 6.1 refuses a nonzero target first
// and checks R_X86_64_32 and 32S after the write; 6.12 and later check
// those two first. A failure carries the kernel's message (amd64Says).
func amd64Apply(l *linker, rc *reloc) error {
	t := elf.R_X86_64(rc.r.Type)
	size := 4
	switch t {
	case elf.R_X86_64_NONE:
		return nil
	case elf.R_X86_64_64, elf.R_X86_64_PC64:
		size = 8
	case elf.R_X86_64_32, elf.R_X86_64_32S, elf.R_X86_64_PC32, elf.R_X86_64_PLT32,
		elf.R_X86_64_GOTPCREL, elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX:
	default:
		return &RelocError{Kind: ErrUnsupported, says: amd64Says(l, t, rc.P, 0, ErrUnsupported)}
	}
	loc := rc.loc
	if len(loc) < size {
		return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("%d bytes needed, %d left in the section", size, len(loc))}
	}
	le := binary.LittleEndian
	val := rc.S + uint64(rc.A)
	// The 32-bit absolute types' range (the kernel's "overflow").
	var overflow string
	switch t {
	case elf.R_X86_64_32:
		if val > math.MaxUint32 {
			overflow = "not a 32-bit unsigned value (module not built with -mcmodel=kernel?)"
		}
	case elf.R_X86_64_32S:
		if int64(val) != int64(int32(val)) {
			overflow = "not a 32-bit signed value (module not built with -mcmodel=kernel?)"
		}
	}
	late := l.opts.Generation <= kgen.Linux6_1 // 6.1 checks the range after the write
	if overflow != "" && !late {
		return &RelocError{Kind: ErrOutOfRange, Value: val, Detail: overflow, says: amd64Says(l, t, rc.P, val, ErrOutOfRange)}
	}
	if size == 8 && le.Uint64(loc) != 0 || size == 4 && le.Uint32(loc) != 0 {
		// The value the kernel prints: 6.1 checks before it subtracts
		// the place, 6.12 after.
		said := val
		if !late && (t == elf.R_X86_64_PC32 || t == elf.R_X86_64_PLT32 || t == elf.R_X86_64_PC64) {
			said = val - rc.P
		}
		return &RelocError{Kind: ErrNonZeroTarget, Value: said, Detail: "the kernel refuses: existing value is nonzero",
			says: amd64Says(l, t, rc.P, said, ErrNonZeroTarget)}
	}
	if overflow != "" {
		return &RelocError{Kind: ErrOutOfRange, Value: val, Detail: overflow, says: amd64Says(l, t, rc.P, val, ErrOutOfRange)}
	}
	switch t {
	case elf.R_X86_64_64: // S + A
		le.PutUint64(loc, val)
	case elf.R_X86_64_PC64: // S + A - P
		le.PutUint64(loc, val-rc.P)
	case elf.R_X86_64_32, elf.R_X86_64_32S: // S + A, range-checked above
		le.PutUint32(loc, uint32(val))
	case elf.R_X86_64_PC32, elf.R_X86_64_PLT32: // S + A - P
		d := int64(val - rc.P)
		// The kernel has this check under #if 0 and writes the truncated
		// value; a wrapped call is a crash waiting, so it is reported.
		if d != int64(int32(d)) {
			return rangeErr(uint64(d), "more than 2 GiB away (the kernel does not check and would truncate)")
		}
		le.PutUint32(loc, uint32(d))
	default: // GOTPCREL, GOTPCRELX, REX_GOTPCRELX: G + GOT + A - P
		d := int64(val - rc.P)
		// mov foo@GOTPCREL(%rip), %reg (8b /r) -> lea foo(%rip), %reg
		// (8d /r) when foo is within reach: no GOT load at all.
		if t != elf.R_X86_64_GOTPCREL && d == int64(int32(d)) && amd64RelaxMov(l, rc) {
			le.PutUint32(loc, uint32(d))
			return nil
		}
		g, err := l.gotEntry(rc)
		if err != nil {
			return err
		}
		d = int64(g + uint64(rc.A) - rc.P)
		if d != int64(int32(d)) {
			return rangeErr(uint64(d), "GOT entry more than 2 GiB away")
		}
		le.PutUint32(loc, uint32(d))
	}
	return nil
}

// amd64RelaxMov turns the mov before a GOTPCRELX into a lea (8b -> 8d),
// when it is one: the opcode is two bytes before the displacement
// (opcode, ModRM, disp32; a REX prefix, if any, comes before).
func amd64RelaxMov(l *linker, rc *reloc) bool {
	off := rc.r.Offset
	sec := l.sec
	if off < 2 || sec[off-2] != 0x8b || sec[off-1]&0xc7 != 0x05 { // mod 00, r/m 101: RIP-relative
		return false
	}
	sec[off-2] = 0x8d
	return true
}

// amd64Says is the kernel's message for a relocation of type t at
// address p that fails with kind, val the value it prints, per generation
// (__apply_relocate_add() on 6.1, __write_relocate_add() later). 6.1's
// and 6.12's "loc %p" is a hashed pointer, which only the booted kernel
// knows; 7.2 prints the address, and the relocation section's index and
// the relocation's.
func amd64Says(l *linker, t elf.R_X86_64, p, val uint64, kind error) func(relsec, idx int) string {
	g, name := l.opts.Generation, l.m.Name
	return func(relsec, idx int) string {
		switch kind {
		case ErrUnsupported:
			return fmt.Sprintf("%s: Unknown rela relocation: %d", name, uint32(t))
		case ErrOutOfRange:
			where := ""
			if g >= kgen.Linux7_2 {
				where = fmt.Sprintf(" sec %d idx %d", relsec, idx)
			}
			return fmt.Sprintf("overflow in relocation type %d val %x%s; `%s' likely not compiled with -mcmodel=kernel", uint32(t), val, where, name)
		}
		switch {
		case g <= kgen.Linux6_1:
			return fmt.Sprintf("x86/modules: Skipping invalid relocation target, existing value is nonzero for type %d, loc %%p, val %x", uint32(t), val)
		case g < kgen.Linux7_2:
			return fmt.Sprintf("x86/modules: Invalid relocation target, existing value is nonzero for type %d, loc %%p, val %x", uint32(t), val)
		}
		return fmt.Sprintf("x86/modules: Invalid relocation target, existing value is nonzero for sec %d, idx %d, type %d, loc %x, val %x", relsec, idx, uint32(t), p, val)
	}
}
