// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// relKind is what a relocation type means to the counting.
type relKind uint8

const (
	kindOther      relKind = iota
	kindBranch             // a branch that takes a PLT entry when out of range (arm64, arm)
	kindBranchStat         // a call/jump counted in the statistics only (x86_64: no PLTs)
	kindGOT                // needs a GOT entry (x86_64 PIE)
	kindADRP               // ADRP, which erratum 843419 may need a veneer for (arm64)
)

// arch is what modplt knows of one architecture. The counting loop
// (count.go) is written once; these functions and limits are all it asks
// of an architecture. One file per architecture fills one in.
type arch struct {
	name    string
	machine elf.Machine
	is64    bool
	relType elf.SectionType // SHT_RELA or SHT_REL: the kernel reads only this type

	pltEntry  uint64             // bytes of one PLT entry; 0 when the arch uses no PLT
	fixedPLTs int                // slots each PLT starts with (arm: FTRACE_ADDR, MCOUNT_ADDR)
	pltSize   func(n int) uint64 // the sh_size the kernel gives a PLT of n entries

	// moduleArea is where module_alloc() starts looking for room, which
	// Link uses for the core when LinkOptions.Base is 0. etext is the
	// kernel's _etext (0 when not known), which arm64 places its modules
	// below, and page its PAGE_SIZE.
	moduleArea   func(etext, page uint64) uint64
	initPrefixes []string // module_init_section()
	exitPrefixes []string // module_exit_section()

	// kind classifies a relocation type. For kindBranch, kindBranchStat
	// and kindGOT, slot is a small dense index of the type (for the
	// per-section dedupe tables) and entry the kind of entry it takes
	// (entries of different kinds are never shared).
	kind func(t uint32) (k relKind, slot, entry uint8)
	// nslots bounds slot.
	nslots int
	// packed caches kind for the types below len(packed), one word each:
	// kind | slot<<8 | entry<<16 (newArch fills it).
	packed []uint32

	// addend returns a relocation's addend and whether the kernel takes
	// it for zero. RELA architectures read r.Addend; REL ones decode the
	// instruction at r.Offset in text (the target section's bytes).
	addend func(m *Module, text []byte, r elfobj.Reloc) (addend int64, zero bool, err error)

	// kernel counts one section's entries as Linux 6.1 does, from its
	// candidates (in section order) and the section itself.
	kernel func(c *counter, w *sectionWork) (int, error)

	// count, when set, is the whole of Count for an architecture whose
	// module_frob_arch_sections() sizes other things than PLT sections
	// (s390's GOT and PLT at the start of core, powerpc's .stubs); kernel
	// is then unused.
	count func(m *Module, opts Options) (*Counts, error)

	// apply applies one relocation at rc.loc: computes the value,
	// range-checks it against the architecture's limits, encodes it
	// (apply_relocate_add() / apply_relocate()).
	apply func(l *linker, rc *reloc) error

	// order, when set, is the order the kernel applies a relocation
	// section in (indices into t; nil: the file's):
	// module_frob_arch_sections() sorts the relocations of executable
	// sections in place, and the PLT entries are handed out in the
	// order the branches then come in. The linker asks for it only for
	// a section whose branches need entries (errDefer).
	order func(l *linker, t *elfobj.RelocTable) ([]int, error)

	// frob is the architecture's module_frob_arch_sections() for a
	// link, before the layout: it sizes, aligns and flags the sections
	// the loader fills (sizes, aligns, flags) and says how much of core
	// comes before the sections (reserve). nil: the kernel-mode count's
	// PLT sections (frobPLT).
	frob func(m *Module, opts *LinkOptions, fr *frobbed) error
	// setup, when set, readies the architecture's tables once the
	// module is laid out, before any relocation is applied (a GOT,
	// s390's GOT and PLT, powerpc's stubs).
	setup func(l *linker, fr *frobbed) error
	// finalize, when set, is module_finalize()'s part that fills
	// entries after the module's relocations and before livepatch's
	// (powerpc's ftrace stubs, arm64's ftrace trampolines).
	finalize func(l *linker)

	// noLookup is the undefined symbol simplify_symbols() never looks up
	// ("": none): x86's ignore_undef_symbol() passes
	// _GLOBAL_OFFSET_TABLE_ (GNU as before 2.37 left one unreferenced),
	// s390's module_frob_arch_sections() defines it (SHN_ABS), and
	// powerpc64's dedotify() defines .TOC..
	noLookup string
	// dedot: powerpc64's dedotify() strips the dot of every undefined
	// name that has one (ELFv1's function descriptors: .name is name's
	// entry point) before the loader looks it up.
	dedot bool
	// pltSections are the sections module_frob_arch_sections() refuses
	// a module without, and pltMissing what the loader then says after
	// the module's name (nil: none).
	pltSections []string
	pltMissing  string
	// ftracePLT, when set, are the ftrace trampoline sections a kernel of
	// generation g fills in module_finalize() (arm64's
	// module_init_ftrace_plt()), and the kernel symbols they jump to.
	ftracePLT func(g kgen.Generation) (sections, targets []string)

	// absPointer is the relocation type that stores a full absolute
	// address (what a function pointer's initialiser compiles to; 0:
	// FunctionPointers does not look on this architecture).
	absPointer uint32
}

// frobbed is what module_frob_arch_sections() decided for a link: the
// sections' sizes, alignments and flags by index, core's reserve, the
// PLT counts, and the architecture's own tables.
type frobbed struct {
	sizes, aligns map[int]uint64
	flags         map[int]elf.SectionFlag
	reserve       uint64
	counts        *Counts
	s390          *s390Tables
	ppc64         *ppc64Tables
}

// relaAddend is the addend of a RELA architecture: r_addend, which the
// kernel takes for zero when it is.
func relaAddend(_ *Module, _ []byte, r elfobj.Reloc) (int64, bool, error) {
	return r.Addend, r.Addend == 0, nil
}

type kindInfo struct {
	kind        relKind
	slot, entry uint8
}

// maxKindTable bounds the relocation types modplt handles: the largest is
// arm64's CALL26, 283 (the 1024+ arm64 types are dynamic ones).
const maxKindTable = 1024

// newArch fills a's kind cache. The arch values are never changed after.
func newArch(a arch) *arch {
	a.packed = make([]uint32, maxKindTable)
	for t := range a.packed {
		k, slot, entry := a.kind(uint32(t))
		a.packed[t] = uint32(k) | uint32(slot)<<8 | uint32(entry)<<16
	}
	return &a
}

// classify is kind through the cache, from one 4-byte load, the three
// fields apart (small enough to inline; a kindInfo held whole is spilled
// as three bytes and reloaded wider, a store-forwarding stall). Types
// past the table are kindOther.
func (a *arch) classify(t uint32) (relKind, uint8, uint8) {
	if t < uint32(len(a.packed)) {
		v := a.packed[t]
		return relKind(v), uint8(v >> 8), uint8(v >> 16)
	}
	return kindOther, 0, 0
}

var arches = []*arch{arm64Arch, armArch, amd64Arch, s390Arch, ppc64Arch}

// linkedArches names the architectures modplt links, for messages:
// "x86_64, s390, ppc64, arm64 and arm".
func linkedArches() string {
	var names []string
	for _, a := range arches {
		names = append(names, a.name)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) }) // x86_64 first
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func archFor(m elf.Machine) *arch {
	for _, a := range arches {
		if a.machine == m {
			return a
		}
	}
	return nil
}

// pageSizes are the PAGE_SIZE values the architecture's kernels can be
// built with (LinkOptions.PageSize), from the one table of architecture
// facts (elfobj.PageSizes).
func (a *arch) pageSizes() []uint64 { return elfobj.PageSizes(a.machine) }
