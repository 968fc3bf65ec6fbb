// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// Layout: kernel/module/main.c layout_sections(), with the configuration
// of Debian's 6.1 kernels (CONFIG_STRICT_MODULE_RWX, CONFIG_MODULE_UNLOAD,
// data in the same allocation as code).

// shfROAfterInit is the kernel's SHF_RO_AFTER_INIT, which the loader sets
// on .data..ro_after_init and __jump_table (roAfterInit).
const shfROAfterInit = 0x00200000

// maxNobits bounds one section's size: arm64's module area (128 MiB).
const maxNobits = 128 << 20

// DefaultPageSize is the kernel's PAGE_SIZE when LinkOptions.PageSize is
// 0: 4 KiB, as on every x86_64, s390 and 32-bit ARM kernel and Debian's
// arm64 ones (ppc64's default is 64 KiB: PageSizes lists each machine's
// default first).
const DefaultPageSize = 4096

// layoutMasks are layout_sections()'s groups, in order: code, read-only
// data, ro-after-init data, writable data (ARCH_SHF_SMALL is 0 here).
var layoutMasks = [][2]elf.SectionFlag{
	{elf.SHF_EXECINSTR | elf.SHF_ALLOC, 0},
	{elf.SHF_ALLOC, elf.SHF_WRITE},
	{shfROAfterInit | elf.SHF_ALLOC, 0},
	{elf.SHF_WRITE | elf.SHF_ALLOC, 0},
}

// percpuSection is the section find_pcpusec() finds: the module's
// DEFINE_PER_CPU variables, not loaded with it (see LinkOptions.PercpuBase).
const percpuSection = ".data..percpu"

// roAfterInit reports whether the loader marks the section
// SHF_RO_AFTER_INIT, by generation: .data..ro_after_init, and
// __jump_table, whose entries jump_label_apply_nops() may still change
// during init but never after (layout_and_allocate(), Linux 4.19 on);
// from 7.2 (module_mark_ro_after_init()) also .static_call_sites where
// the kernel has CONFIG_HAVE_STATIC_CALL_INLINE, as x86_64's have. They
// are laid out in the ro-after-init group, a page apart from the
// writable data (6.1), or in MOD_RO_AFTER_INIT (6.4 on).
func roAfterInit(name string, machine elf.Machine, g kgen.Generation) bool {
	return name == ".data..ro_after_init" || name == "__jump_table" ||
		g >= kgen.Linux7_2 && machine == elf.EM_X86_64 && name == ".static_call_sites"
}

// Placed is one allocated section at its load address.
type Placed struct {
	Index  int
	Name   string
	Region Region
	Addr   uint64
	Size   uint64
	Align  uint64
	// Flags are the section's flags as the loader lays it out (the
	// file's, with the PLT sections' the counting set, and
	// SHF_RO_AFTER_INIT); for a section the linker adds (Index -1: a
	// GOT, s390's PLT), those of the group it sits in.
	Flags elf.SectionFlag
	// Data is the section's bytes, relocated; nil for a SHT_NOBITS
	// section such as .bss, whose Size bytes are zeros the kernel
	// allocates and clears (nothing relocates it).
	Data []byte
	// Mem is the kind of module memory the section is in, on a kernel
	// that lays modules out by kind (Linux 6.4 and later:
	// LinkOptions.Generation); MemText for 6.1's layout.
	Mem MemType

	src  []byte // the file's bytes, until Data is made from them
	zero bool   // SHT_NOBITS: no bytes are ever made
}

// fill makes p.Data from the file's bytes.
func (p *Placed) fill() {
	if p.Data == nil && !p.zero {
		p.Data = make([]byte, p.Size)
		copy(p.Data, p.src)
		p.src = nil
	}
}

// layout places every SHF_ALLOC section of m. sizes overrides section
// sizes (the PLT sections the counting sized), aligns raises alignments
// (erratum 843419), at overrides addresses (tests, to match GNU ld).
// Init goes at init, or (init == 0) past core's end and its guard page.
// page is the kernel's PAGE_SIZE. Core's first reserve bytes are left to
// what the architecture puts there (s390's GOT and PLT). coreSize is the
// size of core's allocation (coreKallsymsEnd).
func (m *Module) layout(core, init, page, reserve uint64, sizes map[int]uint64, aligns map[int]uint64, flagsOf map[int]elf.SectionFlag, at map[string]uint64, unload, kallsymsAll bool) (out []*Placed, coreSize uint64, err error) {
	f := m.f
	placed := make([]*Placed, len(f.Sections))
	for r := range 2 {
		region := Region(r)
		base := core
		if region == Init {
			base = init
			if base == 0 {
				// Init is module_alloc()'s next allocation: vmalloc
				// puts it past core's pages and core's guard page (the
				// corpus's modules sit a page apart too).
				base = core + coreSize + page
			}
		}
		// module_alloc() returns whole pages, within the address space.
		if base%page != 0 {
			return nil, 0, fmt.Errorf("%s: %w: %s at %#x is not on a %d-byte page", f.Name, ErrBadBase, region, base, page)
		}
		off := uint64(0)
		if region == Core {
			off = reserve
		}
		for _, mask := range layoutMasks {
			for i := range f.Sections {
				s := &f.Sections[i]
				flags, mapped := m.loaderFlags(i, kgen.Linux6_1, flagsOf)
				if !mapped || placed[i] != nil || flags&mask[0] != mask[0] || flags&mask[1] != 0 || m.arch.region(s.Name, unload) != region {
					continue
				}
				size, align, err := m.extent(i, sizes, aligns)
				if err != nil {
					return nil, 0, err
				}
				// module_get_offset(): ALIGN(size, sh_addralign).
				off = (off + align - 1) &^ (align - 1)
				p := &Placed{Index: i, Name: s.Name, Region: region, Addr: base + off, Size: size, Align: align, Flags: flags}
				if a, ok := at[s.Name]; ok {
					p.Addr = a
				}
				m.contents(p, sizes)
				placed[i] = p
				out = append(out, p)
				off += size
			}
			// strict_align(): each group starts on a page.
			off = (off + page - 1) &^ (page - 1)
		}
		if top := addressTop(f.Class); base > top || off > top-base || (region == Core && init == 0 && page > top-base-off) {
			// (core also needs room for init after it, a page on, when
			// init goes there)
			return nil, 0, fmt.Errorf("%s: %w: %s at %#x, %#x bytes, runs past the end of the address space (%#x)", f.Name, ErrBadBase, region, base, off, top)
		}
		if region == Core {
			coreSize = m.coreKallsymsEnd(off, page, placed, kallsymsAll)
		}
	}
	return out, coreSize, nil
}

// coreKallsymsEnd is where core ends, given its sections' end off: past
// the symbols kallsyms keeps for the module once its init is freed, which
// kernel/module/kallsyms.c layout_symtab() appends to core (its entries,
// their names, a type byte each), page-aligned. It keeps every symbol of a
// livepatch module; of others, the null symbol and each named one defined
// in a core section, or in .data..percpu, with CONFIG_KALLSYMS_ALL (all,
// as Debian's amd64 kernels have it), else in a core section of code
// (elfobj.File.CoreSymbol). init follows core's end and its guard page, so this
// moves init; no section's address in core depends on it.
func (m *Module) coreKallsymsEnd(off, page uint64, placed []*Placed, all bool) uint64 {
	f := m.f
	if f.Symtab == 0 {
		return off
	}
	n, names := m.keptSymbols(placed, all)
	align := max(f.Sections[f.Symtab].Addralign, 1)
	off = (off+align-1)&^(align-1) + n*uint64(f.SymEntSize()) + names + n
	return (off + page - 1) &^ (page - 1)
}

// keptSymbols counts the symbols layout_symtab() keeps for kallsyms once
// init is freed (elfobj.File.CoreSymbol),
// and the bytes of their names with their NULs.
func (m *Module) keptSymbols(placed []*Placed, all bool) (n, names uint64) {
	f := m.f
	livepatch := f.ModInfo("livepatch") == "Y"
	pcpu := -1
	if s := f.SectionByName(percpuSection); s != nil && all {
		pcpu = s.Index
	}
	core := func(sh int) (bool, bool) {
		p := placed[sh]
		return p != nil && p.Region == Core, p != nil && p.Flags&elf.SHF_EXECINSTR != 0
	}
	for i := range f.Symbols {
		s := &f.Symbols[i]
		keep := f.CoreSymbol(i, livepatch, all, pcpu, core)
		if keep {
			n++
			names += uint64(len(s.Name)) + 1
		}
	}
	return n, names
}

// addressTop is the highest address of a module of class c: the load
// addresses of a 32-bit architecture are 32 bits.
func addressTop(c elf.Class) uint64 {
	if c == elf.ELFCLASS32 {
		return 1<<32 - 1
	}
	return 1<<64 - 1
}

// loaderFlags returns section i's flags as layout_sections() sees them
// (flagsOf overrides the file's; the ro-after-init sections of generation
// g gain shfROAfterInit) and whether the loader maps it at all:
// layout_and_allocate() clears SHF_ALLOC from .modinfo and __versions
// (read at load, never mapped) and from the per-cpu section, whose bytes
// percpu_modcopy() copies to each CPU's copy of the module's per-cpu area
// instead.
func (m *Module) loaderFlags(i int, g kgen.Generation, flagsOf map[int]elf.SectionFlag) (flags elf.SectionFlag, mapped bool) {
	s := &m.f.Sections[i]
	flags = s.Flags
	if v, ok := flagsOf[i]; ok {
		flags = v
	}
	if roAfterInit(s.Name, m.arch.machine, g) {
		flags |= shfROAfterInit
	}
	if s.Name == ".modinfo" || s.Name == "__versions" || s.Name == percpuSection {
		return flags, false
	}
	return flags, true
}

// extent returns the size (sizes overrides the file's: a PLT or GOT the
// counting sized) and alignment section i takes in the module's memory,
// refusing what the loader would copy from outside the file or could not
// place.
func (m *Module) extent(i int, sizes, aligns map[int]uint64) (size, align uint64, err error) {
	f := m.f
	s := &f.Sections[i]
	size = s.Size
	if v, ok := sizes[i]; ok {
		size = v
	}
	// elf_validity_check() does not check a SHT_NULL section's offset,
	// and move_module() copies sh_size bytes from it all the same: out of
	// the file.
	if s.Type == elf.SHT_NULL && size != 0 {
		return 0, 0, &elfobj.FormatError{File: f.Name, Section: s.Name, Msg: fmt.Sprintf("is SHT_NULL and SHF_ALLOC with %d bytes: the loader would copy them from an offset it never checked", size)}
	}
	align = max(s.Addralign, 1, aligns[i])
	if align&(align-1) != 0 {
		return 0, 0, &elfobj.FormatError{File: f.Name, Section: s.Name, Msg: fmt.Sprintf("alignment %d is not a power of two", align)}
	}
	// PROGBITS sizes are bounded by the file; a NOBITS section (.bss) is
	// not, so it is bounded by the module area.
	if size > maxNobits {
		return 0, 0, &elfobj.FormatError{File: f.Name, Section: s.Name, Msg: fmt.Sprintf("claims %d bytes, more than a module area holds (%d)", size, maxNobits)}
	}
	return size, align, nil
}

// contents says where placed section p's bytes come from when the module
// is linked: a PLT or GOT the counting sized starts zeroed and is filled;
// a NOBITS section has no bytes (a file of a few hundred bytes may claim
// sections of 100 MB, and nothing needs them); the others are copied from
// the file just before their relocations are applied.
func (m *Module) contents(p *Placed, sizes map[int]uint64) {
	s := &m.f.Sections[p.Index]
	_, sized := sizes[p.Index]
	switch {
	case sized:
		p.Data = make([]byte, p.Size)
	case s.Type == elf.SHT_NOBITS:
		p.zero = true
	default:
		p.src = m.f.SectionData(s)
	}
}
