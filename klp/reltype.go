// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// ArchName is the kernel's name of a machine ("x86_64", "arm64", "arm",
// "ppc64", "s390"), or debug/elf's name for one klpresolve does not know.
func ArchName(m elf.Machine) string { return elfobj.ArchName(m) }

// RelocTypeName names a relocation type as readelf prints it
// (R_X86_64_PLT32, R_AARCH64_CALL26, R_ARM_CALL, R_PPC64_REL24,
// R_390_PC32DBL), or "R_<machine>_<number>" for a machine klpresolve does
// not know.
func RelocTypeName(m elf.Machine, t uint32) string { return elfobj.RelocTypeName(m, t) }

// typeNames names relocation types for a loop over many relocations of
// one module, each name built once: a module uses a handful of types.
type typeNames struct {
	machine elf.Machine
	types   []uint32
	names   []string
}

func (t *typeNames) name(typ uint32) string {
	for i, x := range t.types {
		if x == typ {
			return t.names[i]
		}
	}
	n := RelocTypeName(t.machine, typ)
	t.types, t.names = append(t.types, typ), append(t.names, n)
	return n
}
