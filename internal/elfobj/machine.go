package elfobj

import (
	"debug/elf"
	"fmt"
)

// machines is the one table of what klpresolve knows of each architecture:
// the kernel's name for it and debug/elf's relocation type names, which
// are readelf's (R_X86_64_PLT32, R_AARCH64_CALL26, R_ARM_CALL,
// R_PPC64_REL24, R_390_PC32DBL).
var machines = map[elf.Machine]struct {
	name  string
	reloc func(uint32) fmt.Stringer
}{
	elf.EM_X86_64:    {"x86_64", func(t uint32) fmt.Stringer { return elf.R_X86_64(t) }},
	elf.EM_AARCH64:   {"arm64", func(t uint32) fmt.Stringer { return elf.R_AARCH64(t) }},
	elf.EM_ARM:       {"arm", func(t uint32) fmt.Stringer { return elf.R_ARM(t) }},
	elf.EM_PPC64:     {"ppc64", func(t uint32) fmt.Stringer { return elf.R_PPC64(t) }},
	elf.EM_S390:      {"s390", func(t uint32) fmt.Stringer { return elf.R_390(t) }},
	elf.EM_386:       {"x86", func(t uint32) fmt.Stringer { return elf.R_386(t) }},
	elf.EM_LOONGARCH: {"loongarch", func(t uint32) fmt.Stringer { return elf.R_LARCH(t) }},
	elf.EM_RISCV:     {"riscv", func(t uint32) fmt.Stringer { return elf.R_RISCV(t) }},
}

// ArchName is the kernel's name of a machine.
func ArchName(m elf.Machine) string {
	if a, ok := machines[m]; ok {
		return a.name
	}
	return m.String()
}

// RelocTypeName names a relocation type as readelf prints it, or
// "R_<machine>_<number>" for a machine klpresolve does not know.
func RelocTypeName(m elf.Machine, t uint32) string {
	if a, ok := machines[m]; ok {
		return a.reloc(t).String()
	}
	return fmt.Sprintf("R_%v_%d", m, t)
}
