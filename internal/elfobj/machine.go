// SPDX-License-Identifier: GPL-2.0-only

package elfobj

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// machine is what klpresolve knows of one architecture.
type machine struct {
	m      elf.Machine
	name   string // the kernel's name for it
	prefix string // of its relocation types' names
	reloc  func(uint32) fmt.Stringer
	// relative is its R_*_RELATIVE (0: none known): the relocation that
	// writes its addend plus the load offset, which a relocatable kernel
	// image's .rela.dyn is made of.
	relative uint32
	// entry are vmlinux symbols that its entry code defines and no other
	// architecture's: x86_64's head_64.S and head64.c, arm64's head.S and
	// entry.S, arm's entry-common.S, s390's head64.S and entry.S,
	// powerpc64's head_64.S.
	entry []string
	// pageSizes are the PAGE_SIZE values its kernels can be built with,
	// the default first (nil: a machine klpresolve does not link).
	pageSizes []uint64
	// thunks are vmlinux symbols only a kernel built with indirect-branch
	// thunks has, whose use changes how modules link (s390's
	// CONFIG_EXPOLINE: __s390_indirect_jump_r14 and the like; code, so
	// every kallsyms lists them).
	thunks []string
}

// machineTable is the one table of what klpresolve knows of each
// architecture, in the order Arch-style searches try them. Relocation
// type names are debug/elf's, which are readelf's (R_X86_64_PLT32,
// R_AARCH64_CALL26, R_ARM_CALL, R_PPC64_REL24, R_390_PC32DBL).
var machineTable = []machine{
	{elf.EM_X86_64, "x86_64", "R_X86_64", func(t uint32) fmt.Stringer { return elf.R_X86_64(t) },
		uint32(elf.R_X86_64_RELATIVE), []string{"x86_64_start_kernel", "startup_64"}, []uint64{4096}, nil},
	{elf.EM_AARCH64, "arm64", "R_AARCH64", func(t uint32) fmt.Stringer { return elf.R_AARCH64(t) },
		uint32(elf.R_AARCH64_RELATIVE), []string{"primary_entry", "el0t_64_sync", "__primary_switch"}, []uint64{4096, 16384, 65536}, nil},
	{elf.EM_ARM, "arm", "R_ARM", func(t uint32) fmt.Stringer { return elf.R_ARM(t) },
		0, []string{"vector_swi"}, []uint64{4096}, nil}, // LPAE too
	{elf.EM_S390, "s390", "R_390", func(t uint32) fmt.Stringer { return elf.R_390(t) },
		uint32(elf.R_390_RELATIVE), []string{"startup_continue", "mcck_int_handler", "pgm_check_handler"}, []uint64{4096},
		[]string{"__s390_indirect_jump_r14", "__s390_indirect_jump_r1"}},
	{elf.EM_PPC64, "ppc64", "R_PPC64", func(t uint32) fmt.Stringer { return elf.R_PPC64(t) },
		uint32(elf.R_PPC64_RELATIVE), []string{"start_here_multiplatform", "__secondary_hold"}, []uint64{64 << 10, 4 << 10}, nil},
	{elf.EM_386, "x86", "R_386", func(t uint32) fmt.Stringer { return elf.R_386(t) }, 0, nil, nil, nil},
	{elf.EM_LOONGARCH, "loongarch", "R_LARCH", func(t uint32) fmt.Stringer { return elf.R_LARCH(t) }, 0, nil, nil, nil},
	{elf.EM_RISCV, "riscv", "R_RISCV", func(t uint32) fmt.Stringer { return elf.R_RISCV(t) },
		uint32(elf.R_RISCV_RELATIVE), nil, nil, nil},
}

// machines indexes machineTable by machine.
var machines = func() map[elf.Machine]*machine {
	out := make(map[elf.Machine]*machine, len(machineTable))
	for i := range machineTable {
		out[machineTable[i].m] = &machineTable[i]
	}
	return out
}()

// RelativeReloc is m's R_*_RELATIVE relocation type (false: none known).
func RelativeReloc(m elf.Machine) (uint32, bool) {
	if a, ok := machines[m]; ok && a.relative != 0 {
		return a.relative, true
	}
	return 0, false
}

// PageSizes are the PAGE_SIZE values kernels of machine m can be built
// with, the default first (nil: a machine klpresolve does not link).
func PageSizes(m elf.Machine) []uint64 {
	if a, ok := machines[m]; ok {
		return slices.Clone(a.pageSizes)
	}
	return nil
}

// ThunkSymbols are the vmlinux symbols only a kernel of machine m built
// with indirect-branch thunks has (s390's CONFIG_EXPOLINE), nil for a
// machine without such a build option.
func ThunkSymbols(m elf.Machine) []string {
	if a, ok := machines[m]; ok {
		return slices.Clone(a.thunks)
	}
	return nil
}

// EntrySymbols calls fn with each architecture's kernel name and the
// vmlinux symbols only its entry code defines, in the table's order,
// until fn returns false.
func EntrySymbols(fn func(arch string, names []string) bool) {
	for i := range machineTable {
		if a := &machineTable[i]; len(a.entry) > 0 && !fn(a.name, a.entry) {
			return
		}
	}
}

// moreRelocNames are relocation types debug/elf does not name (it prints
// the nearest lower name and "+N" for them: R_AARCH64_MOVW_PREL_G0 came out
// as "R_AARCH64_LDST64_ABS_LO12_NC+1"), from the ELF ABI of each machine
// (arm64's MOVW_PREL group is one the linker applies).
var moreRelocNames = map[elf.Machine]map[uint32]string{
	elf.EM_AARCH64: {
		287: "R_AARCH64_MOVW_PREL_G0", 288: "R_AARCH64_MOVW_PREL_G0_NC",
		289: "R_AARCH64_MOVW_PREL_G1", 290: "R_AARCH64_MOVW_PREL_G1_NC",
		291: "R_AARCH64_MOVW_PREL_G2", 292: "R_AARCH64_MOVW_PREL_G2_NC",
		293: "R_AARCH64_MOVW_PREL_G3",
		300: "R_AARCH64_MOVW_GOTOFF_G0", 301: "R_AARCH64_MOVW_GOTOFF_G0_NC",
		302: "R_AARCH64_MOVW_GOTOFF_G1", 303: "R_AARCH64_MOVW_GOTOFF_G1_NC",
		304: "R_AARCH64_MOVW_GOTOFF_G2", 305: "R_AARCH64_MOVW_GOTOFF_G2_NC",
		306: "R_AARCH64_MOVW_GOTOFF_G3", 307: "R_AARCH64_GOTREL64", 308: "R_AARCH64_GOTREL32",
	},
	// s390: binutils' and the kernel's names where debug/elf's differ
	// (GOTOFF is GOTOFF32; GOTPLTOFF16/32/64 are PLTOFF16/32/64).
	elf.EM_S390: {13: "R_390_GOTOFF32", 34: "R_390_PLTOFF16", 35: "R_390_PLTOFF32", 36: "R_390_PLTOFF64"},
	elf.EM_X86_64: {
		43: "R_X86_64_CODE_4_GOTPCRELX", 44: "R_X86_64_CODE_4_GOTTPOFF", 45: "R_X86_64_CODE_4_GOTPC32_TLSDESC",
	},
}

// BigEndian reports whether o is binary.BigEndian.
func BigEndian(o binary.ByteOrder) bool { return o == binary.ByteOrder(binary.BigEndian) }

// EndianName names a byte order as klpresolve's text does:
// "big-endian", or "little-endian" (also for nil).
func EndianName(o binary.ByteOrder) string {
	if BigEndian(o) {
		return "big-endian"
	}
	return "little-endian"
}

// ArchName is the kernel's name of a machine.
func ArchName(m elf.Machine) string {
	if a, ok := machines[m]; ok {
		return a.name
	}
	return m.String()
}

// RelocTypeName names a relocation type as readelf prints it, or with
// its number, "R_AARCH64_294", where it has no name (and "R_<machine>_<number>"
// for a machine klpresolve does not know).
func RelocTypeName(m elf.Machine, t uint32) string {
	if n, ok := moreRelocNames[m][t]; ok {
		return n
	}
	if a, ok := machines[m]; ok {
		if s := a.reloc(t).String(); !strings.Contains(s, "+") {
			return s
		}
		return fmt.Sprintf("%s_%d", a.prefix, t) // not "nearest name+N"
	}
	return fmt.Sprintf("R_%v_%d", m, t)
}
