package modplt

import (
	"debug/elf"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// x86_64 modules branch with PC32/PLT32 and the kernel gives them no PLT
// (they are loaded within 2 GiB of everything they call). A module built
// as PIE addresses its external symbols through a GOT; mainline never
// merged module GOT support, so the rules are those of Thomas Garnier's
// PIE series (arch/x86/kernel/module.c under CONFIG_X86_PIE): sort each
// section by (type, symbol, addend) and count each distinct entry once.
const amd64GOTEntry = 8 // a GOT entry is the target's absolute address

var amd64Arch = newArch(arch{
	name:         "x86_64",
	machine:      elf.EM_X86_64,
	is64:         true,
	relType:      elf.SHT_RELA,
	pltEntry:     0,
	pltSize:      func(int) uint64 { return 0 },
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
	addend: func(_ *Module, _ []byte, r elfobj.Reloc) (int64, bool, error) {
		return r.Addend, r.Addend == 0, nil
	},
	kernel: amd64Kernel,
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
