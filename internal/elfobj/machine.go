// SPDX-License-Identifier: GPL-2.0-only

package elfobj

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// machines is the one table of what klpresolve knows of each architecture:
// the kernel's name for it and debug/elf's relocation type names, which
// are readelf's (R_X86_64_PLT32, R_AARCH64_CALL26, R_ARM_CALL,
// R_PPC64_REL24, R_390_PC32DBL).
var machines = map[elf.Machine]struct {
	name   string
	prefix string // of its relocation types' names
	reloc  func(uint32) fmt.Stringer
}{
	elf.EM_X86_64:    {"x86_64", "R_X86_64", func(t uint32) fmt.Stringer { return elf.R_X86_64(t) }},
	elf.EM_AARCH64:   {"arm64", "R_AARCH64", func(t uint32) fmt.Stringer { return elf.R_AARCH64(t) }},
	elf.EM_ARM:       {"arm", "R_ARM", func(t uint32) fmt.Stringer { return elf.R_ARM(t) }},
	elf.EM_PPC64:     {"ppc64", "R_PPC64", func(t uint32) fmt.Stringer { return elf.R_PPC64(t) }},
	elf.EM_S390:      {"s390", "R_390", func(t uint32) fmt.Stringer { return elf.R_390(t) }},
	elf.EM_386:       {"x86", "R_386", func(t uint32) fmt.Stringer { return elf.R_386(t) }},
	elf.EM_LOONGARCH: {"loongarch", "R_LARCH", func(t uint32) fmt.Stringer { return elf.R_LARCH(t) }},
	elf.EM_RISCV:     {"riscv", "R_RISCV", func(t uint32) fmt.Stringer { return elf.R_RISCV(t) }},
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
