package klp

import (
	"debug/elf"
	"fmt"
)

// ArchName is the kernel's name of a machine.
func ArchName(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_S390:
		return "s390"
	case elf.EM_386:
		return "x86"
	case elf.EM_LOONGARCH:
		return "loongarch"
	case elf.EM_RISCV:
		return "riscv"
	}
	return m.String()
}

// RelocTypeName names a relocation type as readelf prints it
// (R_X86_64_PLT32, R_AARCH64_CALL26, R_ARM_CALL, R_PPC64_REL24,
// R_390_PC32DBL), or "R_<machine>_<number>" when unknown.
func RelocTypeName(m elf.Machine, t uint32) string {
	var s fmt.Stringer
	switch m {
	case elf.EM_X86_64:
		s = elf.R_X86_64(t)
	case elf.EM_AARCH64:
		s = elf.R_AARCH64(t)
	case elf.EM_ARM:
		s = elf.R_ARM(t)
	case elf.EM_PPC64:
		s = elf.R_PPC64(t)
	case elf.EM_S390:
		s = elf.R_390(t)
	case elf.EM_386:
		s = elf.R_386(t)
	case elf.EM_LOONGARCH:
		s = elf.R_LARCH(t)
	case elf.EM_RISCV:
		s = elf.R_RISCV(t)
	default:
		return fmt.Sprintf("R_%v_%d", m, t)
	}
	return s.String()
}
