// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/ksort"
	"github.com/klpresolve/klpresolve/kgen"
)

// The ways a relocation can fail to link. Each *RelocError wraps one.
var (
	ErrUnresolved    = errors.New("unresolved symbol")
	ErrOutOfRange    = errors.New("relocation out of range")
	ErrUnsupported   = errors.New("unsupported relocation type")
	ErrNonZeroTarget = errors.New("relocation target is not zero")
	ErrPLTFull       = errors.New("no PLT slot left")
	ErrNoPLT         = errors.New("module has no PLT section")
	ErrInterworking  = errors.New("unsupported ARM/Thumb interworking branch")
	ErrBadTarget     = errors.New("relocation target outside its section")
	ErrBadSymbol     = errors.New("symbol cannot be relocated against")
)

// RelocError is one relocation that could not be applied.
type RelocError struct {
	Section string // the relocation section
	Index   int    // the relocation's index in it
	Offset  uint64 // in the target section
	Type    string // as readelf names it
	Symbol  string
	Value   uint64 // the value that did not fit, when that is the problem
	Kind    error
	Detail  string
	// Kernel is the kernel's own message for the failure, where klpresolve
	// knows it (x86_64's __write_relocate_add()), for the kernel's
	// generation (LinkOptions.Generation).
	Kernel string
	// says writes Kernel once the relocation section's index and the
	// relocation's are known.
	says func(relsec, idx int) string
}

func (e *RelocError) Error() string {
	s := fmt.Sprintf("%s+%#x: %s against %s: %v", e.Section, e.Offset, e.Type, e.Symbol, e.Kind)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *RelocError) Unwrap() error { return e.Kind }

// Diagnostic is the failure as a diag.Diagnostic of kind "link" in file
// (the module's), with the kernel's message where it is known.
func (e *RelocError) Diagnostic(file string) diag.Diagnostic {
	return diag.Diagnostic{Kind: diag.KindLink, Severity: diag.Error, Message: "link: " + e.Error(), Kernel: e.Kernel, Err: e,
		Location: diag.Location{File: file, Section: e.Section, Offset: e.Offset, Symbol: e.Symbol}}
}

// Resolver gives the address of a symbol the module does not define (an
// undefined symbol, or a .klp.sym livepatch symbol), or false.
type Resolver func(name string) (uint64, bool)

// LinkOptions say where a module goes and how to resolve what it needs.
type LinkOptions struct {
	// Base and InitBase are the load addresses of the core and init
	// regions. A Base of 0 is where the kernel's module_alloc() starts
	// looking: MODULES_VADDR on x86_64 (0xffffffffc0000000) and arm
	// (0xbf000000); on arm64 _etext - 128 MiB (KernelEtext), or
	// MODULES_VADDR (0xffff800000000000) when that is not known; on s390
	// a typical MODULES_VADDR (0x3ff80000000: the boot code computes the
	// real one from the machine, which a loaded module's address shows). An
	// InitBase of 0 is module_alloc()'s next allocation: past core's
	// pages and the guard page vmalloc leaves after them. Both must be
	// page-aligned, and each region must end within the address space
	// (32 bits for arm): Link returns ErrBadBase otherwise.
	Base, InitBase uint64
	// KernelEtext is the kernel's _etext, which arm64's default Base
	// depends on (0: not known).
	KernelEtext uint64
	// At places named sections at given addresses (tests use it to match
	// GNU ld's placement).
	At map[string]uint64
	// Resolve gives undefined symbols' addresses.
	Resolve Resolver
	// ForcePLT sends every branch that has a PLT slot through the PLT,
	// in range or not: a debug knob so that small fixtures exercise
	// emission.
	ForcePLT bool
	// PageSize is the kernel's PAGE_SIZE (0: DefaultPageSize, 4 KiB, or
	// 64 KiB on ppc64, as Debian's and RHEL's ppc64le kernels have):
	// each group of sections starts on a page (strict_align()), init
	// follows core's pages and a guard page, and arm64's default Base is
	// rounded up to a page. arm64 kernels may have 16 or 64 KiB pages
	// (CONFIG_ARM64_16K_PAGES, CONFIG_ARM64_64K_PAGES: RHEL's kernel-64k),
	// ppc64 ones 4 KiB; other sizes are ErrBadPageSize.
	PageSize uint64
	// Erratum843419, NoModuleUnload and NoRandomizeBase are as for
	// Count. Without KASLR an arm64 module has no PLT slot for a branch,
	// so one out of range fails with ErrPLTFull, as the kernel's
	// module_emit_plt_entry() fails the load (-ENOEXEC).
	Erratum843419   bool
	NoModuleUnload  bool
	NoRandomizeBase bool
	// Generation is the kernel's generation, whose rules the link
	// follows (kgen.Unknown: Linux 6.1's). From 6.12 the module is laid
	// out by kind of memory (Placed.Mem), each kind its own allocation:
	// MOD_TEXT at Base, the others each past the one before and a guard
	// page, in the kernel's order (the init ones from InitBase when it is
	// given), unless MemBase places them.
	Generation kgen.Generation
	// MemBase places kinds of module memory (Generation 6.12 and later)
	// at given addresses, where a booted kernel put them; a kind it does
	// not name follows the one before.
	MemBase map[MemType]uint64
	// NoKallsymsAll lays core out as a kernel without
	// CONFIG_KALLSYMS_ALL does (Debian's arm64 6.1): the symbols
	// layout_symtab() keeps at core's end are a module's code symbols
	// only (all of a livepatch module's still), so core is smaller and
	// init follows it sooner (Image.CoreSize).
	NoKallsymsAll bool
	// NoExpoline links as an s390 kernel without expolines does
	// (CONFIG_EXPOLINE off, or nospec_disable: nospec=off, or a machine
	// with etokens where the kernel turns them off): no __jump_r1 thunk,
	// and PLT entries end in br %r1. See Options.NoExpoline.
	NoExpoline bool
	// ARMUnwindText: an arm kernel of 7.2 or later with CONFIG_ARM_UNWIND
	// and without CONFIG_VMSPLIT_3G makes the module's unwind sections
	// code, laid out with its text (armUnwindAsText).
	ARMUnwindText bool
	// Kernel gives the address of any symbol of the kernel image,
	// exported or not, for what an architecture's loader takes from the
	// kernel itself rather than through the module's symbols: powerpc's
	// kernel TOC (.TOC.), which its mprofile _mcount stubs are relative
	// to, and ftrace_caller and ftrace_regs_caller, which
	// module_finalize() makes stubs for (nil: none known; a call to
	// _mcount then fails to link, as the stub cannot be written); arm's
	// fixed PLT slots, ftrace_caller and __gnu_mcount_nc
	// (prealloc_fixed(); nil: Resolve is asked, which knows exports
	// only).
	Kernel Resolver
	// PercpuBase is the address of the module's per-cpu area, which
	// percpu_modalloc() takes from the kernel's reserved per-cpu chunk
	// for its .data..percpu section (the loader does not load that
	// section with the module): simplify_symbols() makes a symbol defined
	// there PercpuBase (aligned up for the section, as the allocation
	// is) plus its offset. 0: where a module's area starts
	// when no module loaded before it has one, the reserved chunk's start
	// (the kernel's __per_cpu_end, from Kernel, aligned for the section:
	// 0x35000 on Debian's amd64 6.1, whose per-cpu symbols count from 0);
	// a module that does not come first is placed first fit after those
	// that came before it, so its real area is the one /proc/kallsyms
	// shows for its per-cpu symbols once loaded.
	PercpuBase uint64
	// SkipSections leaves the relocation sections named here unapplied
	// (the caller applies them, e.g. livepatch sections resolved apart).
	SkipSections func(name string) bool
}

// Image is a linked module.
type Image struct {
	Module   *Module
	syms     []symInfo
	Sections []*Placed // in layout order
	PageSize uint64    // the kernel's PAGE_SIZE it was laid out with
	// CoreSize is the size of core's allocation from its base
	// (LinkOptions.Base): its sections, each group page-aligned, and the
	// symbols kallsyms keeps for the module (layout_symtab()), as
	// /proc/modules shows it once the module's init is freed.
	CoreSize uint64
	// ByMemType: the module was laid out by kind of memory
	// (Placed.Mem), as Linux 6.4 and later lay modules out.
	ByMemType bool
	coreBase  uint64
	end       uint64 // where the last block's pages end (memLayout), or 0
	// Expoline: an s390 module's PLT has the expoline thunk, its last
	// entry (counted in PLTCoreMax and PLTCoreUsed).
	Expoline bool
	// PLT and GOT use: entries emitted and slots available.
	PLTCoreUsed, PLTCoreMax int
	PLTInitUsed, PLTInitMax int
	GOTUsed, GOTMax         int
	// Percpu and PercpuSize are the module's per-cpu area, where its
	// .data..percpu symbols are (LinkOptions.PercpuBase); 0 if it has none.
	Percpu, PercpuSize uint64
	// PercpuTemplate is the per-cpu section as relocated, where the
	// kernel relocates it (7.2 and later; nil before, or without one).
	PercpuTemplate *Placed
	// Relocs is how many relocations were applied; Errors those that
	// could not be (the module does not link when there are any).
	Relocs     int
	ApplyTime  time.Duration // applying them (not counting or layout)
	Errors     []*RelocError
	Unresolved []string // distinct undefined symbols the resolver did not know
}

// OK reports whether every relocation was applied.
func (img *Image) OK() bool { return len(img.Errors) == 0 }

// Linked reports whether the module links: every relocation applied and
// every undefined symbol resolved (insmod refuses a module with an
// unknown symbol even if no relocation uses it).
func (img *Image) Linked() bool { return img.OK() && len(img.Unresolved) == 0 }

// Next is where module_alloc() would place the next allocation after the
// image (another module loaded after it): past the last page of its last
// region (core to CoreSize: its symbols after its sections) and the guard
// page vmalloc leaves after it, as Init follows Core.
func (img *Image) Next() uint64 {
	end := max(img.end, img.coreBase+img.CoreSize)
	for _, p := range img.Sections {
		end = max(end, p.Addr+p.Size)
	}
	page := img.PageSize
	if page == 0 { // an Image not made by Link
		page = DefaultPageSize
	}
	return (end+page-1)&^(page-1) + page
}

// Section returns the placed section called name, or nil.
func (img *Image) Section(name string) *Placed {
	for _, p := range img.Sections {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// ELF returns the linked image as an ELF file: every loaded section, its
// relocations applied, with sh_addr its load address, and the module's
// symbols at their final addresses (SHN_ABS). It has no program headers:
// it is for inspection (objdump -D, readelf) and comparison, not for
// loading.
func (img *Image) ELF() []byte { return img.builder().Bytes() }

// WriteELF writes ELF's file to w, the sections' data as they are, without
// a copy of the whole in memory.
func (img *Image) WriteELF(w io.Writer) error {
	_, err := img.builder().WriteTo(w)
	return err
}

// builder is the linked image as an ELF file to write.
func (img *Image) builder() *elfobj.Builder {
	f := img.Module.f
	b := &elfobj.Builder{Type: elf.ET_EXEC, Class: f.Class, Order: f.Order, Machine: f.Machine, Flags: f.Flags}
	for _, p := range img.Sections {
		flags := elf.SHF_ALLOC
		typ := elf.SHT_PROGBITS
		if p.Index >= 0 {
			s := &f.Sections[p.Index]
			flags = s.Flags &^ elf.SHF_INFO_LINK
			if s.Type == elf.SHT_NOBITS && (p.zero || isZero(p.Data)) {
				typ = elf.SHT_NOBITS
			}
		} else {
			flags = p.Flags // a GOT, s390's PLT (code: objdump -d shows it)
		}
		bs := elfobj.BuildSection{Name: p.Name, Type: typ, Flags: flags, Addr: p.Addr, Addralign: p.Align}
		if typ == elf.SHT_NOBITS {
			bs.Size = p.Size
		} else {
			bs.Data = p.Data
		}
		b.AddSection(bs)
	}
	for _, local := range []bool{true, false} { // locals first, as ELF wants
		// (from 1: entry 0 is the null symbol; a symbol table may be
		// empty, without it)
		for i := 1; i < len(f.Symbols); i++ {
			s := &f.Symbols[i]
			if s.Name == "" || s.Type() == elf.STT_SECTION || s.Type() == elf.STT_FILE || (s.Bind() == elf.STB_LOCAL) != local {
				continue
			}
			if v, ok := img.SymbolAddr(uint32(i)); ok {
				b.AddSymbol(elfobj.BuildSymbol{Name: s.Name, Value: v, Size: s.Size, Info: s.Info, Other: s.Other, Shndx: uint16(elf.SHN_ABS)})
			}
		}
	}
	return b
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// reloc is one relocation being applied: the arch functions read it and
// write loc.
type reloc struct {
	r      elfobj.Reloc
	loc    []byte // the bytes at the place, to the end of the section
	P      uint64 // the place's address
	S      uint64 // the symbol's address
	A      int64  // the addend (RELA; REL architectures decode it)
	region Region
	plt    bool // the branch may take a PLT entry (a symbol outside its section)
}

// linker is one Link call's state: nothing is shared between calls.
type linker struct {
	m      *Module
	opts   *LinkOptions
	img    *Image
	placed []*Placed // by section index
	syms   []symInfo // each symbol, resolved
	// pcpu is the per-cpu section's index (0: none), and percpu the
	// address of its copy (LinkOptions.PercpuBase).
	pcpu   int
	percpu uint64
	// template is the per-cpu section's template, made where 7.2
	// relocates it (target).
	template *Placed
	plt      [2]*pltArea
	got      *gotArea
	s390     *s390Linker  // s390's GOT and PLT
	ppc64    *ppc64Linker // powerpc's stubs and TOC
	// sec is the section being relocated, for the rare relocation that
	// rewrites bytes before its place (x86_64's mov -> lea).
	sec []byte
	// order is the order its relocations are applied in, when not the
	// file's (powerpc sorts each section first).
	order []int
	// replay: the section's deferred relocations are being applied, in
	// the kernel's order (errDefer); deferred are they (indices in the
	// section), and errs where the section's failures start.
	replay   bool
	deferred []int
	errs     int
}

// errDefer is an architecture's apply function saying that the
// relocation takes a PLT entry (or arm64's ADRP veneer), which the
// kernel hands out in the order it applies the section's relocations in
// (arch.order), not the file's: applySection applies it, with the
// section's others that did, after the rest, in that order. Modules
// within branch range of their targets never get here, and pay nothing
// for the sort.
var errDefer = errors.New("deferred to the kernel's order")

// percpuSetup finds the module's per-cpu section and where its area is
// (LinkOptions.PercpuBase): percpu_modalloc() aligns it for the section.
func (l *linker) percpuSetup() {
	s := l.m.f.SectionByName(percpuSection)
	if s == nil || s.Flags&elf.SHF_ALLOC == 0 {
		return
	}
	base := l.opts.PercpuBase
	if base == 0 && l.opts.Kernel != nil {
		base, _ = l.opts.Kernel("__per_cpu_end")
	}
	align := max(s.Addralign, 1)
	l.pcpu, l.percpu = s.Index, (base+align-1)&^(align-1)
	l.img.Percpu, l.img.PercpuSize = l.percpu, s.Size
}

// target is where relocation section s applies: its target section as
// laid out, or nil where the loader does not apply it (a section it does
// not load). From 7.2, apply_relocations() also applies the per-cpu
// section's relocations, to its template (which percpu_modcopy() then
// copies to each CPU's area): the template is in the loader's copy of the
// file, at an address only the booted kernel knows, and klpresolve puts
// it at the per-cpu area's (Image.PercpuTemplate).
func (l *linker) target(s *elfobj.Section) *Placed {
	if int(s.Info) >= len(l.placed) {
		return nil
	}
	if p := l.placed[s.Info]; p != nil {
		return p
	}
	if l.pcpu == 0 || int(s.Info) != l.pcpu || l.opts.Generation < kgen.Linux7_2 {
		return nil
	}
	if l.template == nil {
		sec := &l.m.f.Sections[l.pcpu]
		l.template = &Placed{Index: l.pcpu, Name: sec.Name, Region: Core, Addr: l.percpu, Size: sec.Size, Align: max(sec.Addralign, 1),
			Flags: sec.Flags, zero: sec.Type == elf.SHT_NOBITS, src: l.m.f.SectionData(sec)}
		l.img.PercpuTemplate = l.template
	}
	return l.template
}

// DefaultBase is where Link places m's core when opts.Base is 0: where
// the architecture's module_alloc() starts, which on arm64 depends on the
// kernel's _etext (opts.KernelEtext, 0: not known) and page size
// (opts.PageSize).
func (m *Module) DefaultBase(opts LinkOptions) uint64 {
	return m.arch.moduleArea(opts.KernelEtext, opts.pageSize(m.arch))
}

// PageSizes are the PAGE_SIZE values kernels of machine m can be built
// with, which LinkOptions.PageSize may give, the default first (nil: a
// machine modplt does not link).
func PageSizes(m elf.Machine) []uint64 {
	if a := archFor(m); a != nil {
		return a.pageSizes()
	}
	return nil
}

// frobPLT is module_frob_arch_sections() of the architectures whose
// module linker script makes .plt and .init.plt (arm, arm64) or that
// take none (x86_64): the kernel-mode count, and the PLT placeholders
// made NOBITS, executable, L1-cache aligned, of the counted size.
func frobPLT(m *Module, opts *LinkOptions, fr *frobbed) error {
	var err error
	if fr.counts, err = m.Count(Options{Erratum843419: opts.Erratum843419, NoModuleUnload: opts.NoModuleUnload, NoRandomizeBase: opts.NoRandomizeBase, Generation: opts.Generation}); err != nil {
		return err
	}
	for r, name := range []string{".plt", ".init.plt"} {
		if s := m.f.SectionByName(name); s != nil && m.arch.pltEntry != 0 {
			fr.sizes[s.Index] = []uint64{fr.counts.PLTSizeCore, fr.counts.PLTSizeInit}[r]
			fr.aligns[s.Index] = 64 // L1_CACHE_BYTES
			fr.flags[s.Index] = elf.SHF_ALLOC | elf.SHF_EXECINSTR
		}
	}
	return nil
}

// pageSize is the kernel's PAGE_SIZE the options give: a's first (its
// distributions' usual one) when they give none.
func (o *LinkOptions) pageSize(a *arch) uint64 {
	if o.PageSize == 0 {
		return a.pageSizes()[0]
	}
	return o.PageSize
}

// Link lays m out and applies every relocation that applies to a loaded
// section, as the kernel's apply_relocate_add()/apply_relocate() for the
// architecture would, emitting PLT and GOT entries as needed. The error is
// for input Link cannot work with; relocations that fail are listed in
// Image.Errors.
func (m *Module) Link(opts LinkOptions) (*Image, error) {
	a := m.arch
	f := m.f
	page := opts.pageSize(a)
	if sizes := a.pageSizes(); !slices.Contains(sizes, page) {
		return nil, fmt.Errorf("%s: %w: %d (%s kernels have %v)", f.Name, ErrBadPageSize, page, a.name, sizes)
	}
	if opts.Base == 0 {
		opts.Base = m.DefaultBase(opts)
	}
	fr := &frobbed{sizes: map[int]uint64{}, aligns: map[int]uint64{}, flags: map[int]elf.SectionFlag{}, counts: &Counts{}}
	frob := a.frob
	if frob == nil {
		frob = frobPLT
	}
	if err := frob(m, &opts, fr); err != nil {
		return nil, err
	}
	sizes, aligns, flags, reserve, counts := fr.sizes, fr.aligns, fr.flags, fr.reserve, fr.counts
	var err error
	for _, sc := range counts.Sections {
		if sc.Align != 0 {
			if t := f.SectionByName(sc.Target); t != nil {
				aligns[t.Index] = max(aligns[t.Index], sc.Align)
			}
		}
	}
	var placed []*Placed
	var coreSize, end uint64
	if usesMemTypes(opts.Generation) {
		placed, coreSize, end, err = m.memLayout(opts.Generation, opts.Base, opts.InitBase, page, reserve, sizes, aligns, flags, opts.At, !opts.NoModuleUnload, !opts.NoKallsymsAll, opts.MemBase)
	} else {
		placed, coreSize, err = m.layout(opts.Base, opts.InitBase, page, reserve, sizes, aligns, flags, opts.At, !opts.NoModuleUnload, !opts.NoKallsymsAll)
	}
	if err != nil {
		return nil, err
	}
	l := &linker{m: m, opts: &opts, img: &Image{Module: m, Sections: placed, PageSize: page, CoreSize: coreSize, coreBase: opts.Base, end: end, ByMemType: usesMemTypes(opts.Generation)},
		placed: make([]*Placed, len(f.Sections)), syms: make([]symInfo, len(f.Symbols))}
	for _, p := range placed {
		l.placed[p.Index] = p
	}
	l.percpuSetup()
	if a.pltEntry != 0 {
		for r, name := range []string{".plt", ".init.plt"} {
			if s := f.SectionByName(name); s != nil && l.placed[s.Index] != nil {
				max := []int{counts.PLTCore, counts.PLTInit}[r]
				l.plt[r] = newPLTArea(l.placed[s.Index], max)
			}
		}
		l.img.PLTCoreMax, l.img.PLTInitMax = counts.PLTCore, counts.PLTInit
	}
	if a.setup != nil {
		if err := a.setup(l, fr); err != nil {
			return nil, err
		}
	}
	// simplify_symbols(): every symbol is resolved before any relocation
	// (an unresolved one fails the load even if nothing refers to it).
	for i := range f.Symbols {
		l.symbol(uint32(i))
	}
	if err := l.applyAll(); err != nil {
		return nil, err
	}
	l.img.syms = l.syms
	for r, area := range l.plt {
		if area != nil {
			if r == int(Core) {
				l.img.PLTCoreUsed = area.used
			} else {
				l.img.PLTInitUsed = area.used
			}
		}
	}
	sort.Strings(l.img.Unresolved)
	return l.img, nil
}

// applyAll is the relocation loop, written once for every architecture:
// for each relocation section of the loader's type whose target is
// loaded, compute the place and the symbol's address, and let the
// architecture's apply function compute, range-check and encode. The
// sections go in the kernel's order: apply_relocations() walks them by
// index and leaves livepatch's (SHF_RELA_LIVEPATCH) to
// klp_apply_section_relocs(), which runs from the patch's init, after
// module_finalize() (the order matters where entries are handed out as
// relocations are applied: arm64's and arm's PLT entries, powerpc's
// stubs).
func (l *linker) applyAll() error {
	a, f := l.m.arch, l.m.f
	var normal, live []int
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != a.relType || (l.opts.SkipSections != nil && l.opts.SkipSections(s.Name)) {
			continue
		}
		if l.target(s) == nil {
			continue // not loaded (debug info): the kernel skips it too
		}
		if s.Flags&shfRelaLivepatch != 0 {
			live = append(live, i)
		} else {
			normal = append(normal, i)
		}
	}
	apply := func(ri int) error {
		s := &f.Sections[ri]
		p := l.target(s)
		// A section's bytes are copied just before its first relocations
		// are applied, while they are still in the cache.
		p.fill()
		start := time.Now()
		err := l.applySection(s, p)
		l.img.ApplyTime += time.Since(start)
		return err
	}
	for _, ri := range normal {
		if err := apply(ri); err != nil {
			return err
		}
	}
	if a.finalize != nil {
		a.finalize(l)
	}
	for _, ri := range live {
		if err := apply(ri); err != nil {
			return err
		}
	}
	for _, p := range l.img.Sections {
		p.fill()
	}
	if l.template != nil {
		l.template.fill()
	}
	return nil
}

// applySection applies the relocation section s to dst.
func (l *linker) applySection(s *elfobj.Section, dst *Placed) error {
	f := l.m.f
	syms := l.syms
	t, err := f.RelocTable(s)
	if err != nil {
		return err
	}
	if dst.zero {
		// apply_relocations() would write into the zeroed memory; no
		// assembler emits relocations against a SHT_NOBITS section, and
		// its bytes are not made (layout): each one is an error.
		for j := range t.Len() {
			r, err := t.Reloc(j)
			if err != nil {
				return err
			}
			l.fail(s, j, r, ErrBadTarget, r.Offset, fmt.Sprintf("section %s is SHT_NOBITS: it has no bytes to relocate", dst.Name))
		}
		return nil
	}
	l.order = nil
	if l.ppc64 != nil {
		// powerpc: the section as the kernel sorted it (fail names each
		// relocation by its index in the file).
		if l.order = l.ppc64.t.order[s.Index]; l.order != nil {
			t = t.Reordered(l.order)
		}
	}
	applied := 0
	l.deferred, l.errs = l.deferred[:0], len(l.img.Errors)
	l.sec = dst.Data
	fast := t.IsRelaLE64()
	var rc reloc
	for j := range t.Len() {
		r, ok := elfobj.Reloc{}, false
		if fast {
			r, ok = t.RelaLE64(j) // inlined: the common case
		}
		if !ok {
			var err error
			if r, err = t.Reloc(j); err != nil {
				return err
			}
		}
		if r.Offset > uint64(len(dst.Data)) {
			l.fail(s, j, r, ErrBadTarget, r.Offset, fmt.Sprintf("section %s is %d bytes", dst.Name, len(dst.Data)))
			continue
		}
		si := &syms[r.Sym] // one load for address, state and section
		if si.state != 1 {
			l.fail(s, j, r, ErrUnresolved, 0, "")
			continue
		}
		// rc's fields are assigned one by one: a reloc{...} literal is
		// built in a stack temporary by narrow stores and copied into rc
		// with 16-byte loads, which the CPU cannot forward from those
		// stores (that stall was half of this loop's time).
		rc.r, rc.loc, rc.P, rc.S, rc.A = r, dst.Data[r.Offset:], dst.Addr+r.Offset, si.val, r.Addend
		rc.region, rc.plt = dst.Region, uint32(si.shndx) != s.Info
		if err := l.apply(&rc); err != nil {
			if err == errDefer {
				l.deferred = append(l.deferred, j)
				continue
			}
			l.failWith(s, j, r, err)
			continue
		}
		applied++
	}
	if len(l.deferred) > 0 {
		n, err := l.replayDeferred(s, &t, dst)
		if err != nil {
			return err
		}
		applied += n
	}
	l.img.Relocs += applied
	return nil
}

// replayDeferred applies the relocations of t that apply deferred
// (l.deferred), in the order the kernel applies t in, and returns how many
// it applied; the section's failures stay in the file's order.
func (l *linker) replayDeferred(s *elfobj.Section, t *elfobj.RelocTable, dst *Placed) (int, error) {
	deferred := l.deferred
	order := deferred
	var all []int
	if l.m.arch.order != nil {
		var err error
		if all, err = l.m.arch.order(l, t); err != nil {
			return 0, err
		}
	}
	if all != nil {
		want := make([]bool, t.Len())
		for _, j := range deferred {
			want[j] = true
		}
		order = order[:0]
		for _, j := range all {
			if want[j] {
				order = append(order, j)
			}
		}
	}
	l.replay = true
	defer func() {
		l.replay = false
		slices.SortStableFunc(l.img.Errors[l.errs:], func(x, y *RelocError) int { return cmp.Compare(x.Index, y.Index) })
	}()
	applied := 0
	var rc reloc
	for _, j := range order {
		r, err := t.Reloc(j)
		if err != nil {
			return applied, err
		}
		si := &l.syms[r.Sym]
		rc.r, rc.loc, rc.P, rc.S, rc.A = r, dst.Data[r.Offset:], dst.Addr+r.Offset, si.val, r.Addend
		rc.region, rc.plt = dst.Region, uint32(si.shndx) != s.Info
		if err := l.apply(&rc); err != nil {
			l.failWith(s, j, r, err)
			continue
		}
		applied++
	}
	return applied, nil
}

// relKey is a relocation as module_frob_arch_sections() sorts it: its
// index in the file, what cmp_rel() (arm) and cmp_rela() (arm64) compare,
// and (arm64) whether it is a branch that needs a PLT.
type relKey struct {
	i        int
	typ, sym uint32
	addend   int64
	plt      bool
}

// kernelSort sorts keys[:n] by type, symbol and addend with lib/sort.c's
// heapsort (internal/ksort: its order of equal keys, which decides what
// is a twin), as the kernel sorts relocations in place, and returns the
// file's indices in the order keys are then in.
func kernelSort(keys []relKey, n int) []int {
	ksort.Sort(keys[:n], func(x, y *relKey) int {
		if x.typ != y.typ {
			return cmp.Compare(x.typ, y.typ)
		}
		if x.sym != y.sym {
			return cmp.Compare(x.sym, y.sym)
		}
		return cmp.Compare(x.addend, y.addend)
	})
	order := make([]int, len(keys))
	for k := range keys {
		order[k] = keys[k].i
	}
	return order
}

// failWith records relocation j of s as not applied, for err.
func (l *linker) failWith(s *elfobj.Section, j int, r elfobj.Reloc, err error) {
	if re, ok := err.(*RelocError); ok {
		l.fail(s, j, r, re.Kind, re.Value, re.Detail)
		if re.says != nil {
			last := l.img.Errors[len(l.img.Errors)-1]
			last.Kernel = re.says(s.Index, last.Index)
		}
	} else {
		l.fail(s, j, r, err, 0, "")
	}
}

// apply applies rc with the architecture's apply function.
func (l *linker) apply(rc *reloc) error { return l.m.arch.apply(l, rc) }

// fail records relocation j of s as not applied (j in the order
// applied: l.order maps it back to the file's).
func (l *linker) fail(s *elfobj.Section, j int, r elfobj.Reloc, kind error, value uint64, detail string) {
	f := l.m.f
	if l.order != nil {
		j = l.order[j]
	}
	l.img.Errors = append(l.img.Errors, &RelocError{Section: s.Name, Index: j, Offset: r.Offset,
		Type: elfobj.RelocTypeName(l.m.arch.machine, r.Type), Symbol: symName(f, r.Sym), Value: value, Kind: kind, Detail: detail})
}

// rangeErr reports a value that does not fit.
func rangeErr(v uint64, detail string) error {
	return &RelocError{Kind: ErrOutOfRange, Value: v, Detail: detail}
}

func symName(f *elfobj.File, i uint32) string {
	s := &f.Symbols[i]
	if s.Name == "" && s.Type() == elf.STT_SECTION && int(s.Shndx) < len(f.Sections) {
		return f.Sections[s.Shndx].Name
	}
	return s.Name
}

// symbol returns symbol i's address: simplify_symbols().
func (l *linker) symbol(i uint32) (uint64, bool) {
	switch l.syms[i].state {
	case 1:
		return l.syms[i].val, true
	case 2:
		return 0, false
	}
	f := l.m.f
	s := &f.Symbols[i]
	var v uint64
	ok := true
	switch {
	case s.Shndx == uint16(elf.SHN_UNDEF) || s.Shndx == shnLivepatch:
		if i == 0 {
			v = 0 // the null symbol: relocations against "nothing"
			break
		}
		name, lookup := s.Name, true
		if s.Shndx == uint16(elf.SHN_UNDEF) { // (a livepatch symbol keeps its name)
			name, lookup = l.m.arch.lookupName(s.Name)
		}
		if !lookup {
			// _GLOBAL_OFFSET_TABLE_: s390's is SHN_ABS, value 0 (its GOT
			// relocations find the GOT without it); on x86_64, a PIE
			// module's reference to its own GOT (Garnier's series made
			// it SHN_ABS): the GOT the linker added, if any. powerpc's
			// .TOC. is the module's r2 (find_dot_toc()).
			switch {
			case l.got != nil:
				v = l.got.p.Addr
			case l.ppc64 != nil:
				v = l.ppc64.r2
			}
			break
		}
		if l.opts.Resolve != nil {
			v, ok = l.opts.Resolve(name)
		} else {
			ok = false
		}
		if !ok && s.Bind() == elf.STB_WEAK {
			v, ok = 0, true // an unresolved weak symbol is 0
		}
		if !ok {
			l.img.Unresolved = append(l.img.Unresolved, name)
		}
	case s.Shndx == uint16(elf.SHN_ABS):
		v = s.Value
	case s.Shndx == uint16(elf.SHN_COMMON):
		ok = false // "Common symbol: ... please compile with -fno-common"
	case l.pcpu != 0 && int(s.Shndx) == l.pcpu:
		v = l.percpu + s.Value
	case int(s.Shndx) < len(l.placed) && l.placed[s.Shndx] != nil:
		v = l.placed[s.Shndx].Addr + s.Value
	default:
		ok = false // in a section that is not loaded
	}
	l.syms[i] = symInfo{val: v, state: 1, shndx: s.Shndx}
	if !ok {
		l.syms[i].state = 2
	}
	return v, ok
}

// SymbolAddr is symbol i's final address, when it was resolved.
func (img *Image) SymbolAddr(i uint32) (uint64, bool) {
	if int(i) >= len(img.syms) || img.syms[i].state != 1 {
		return 0, false
	}
	return img.syms[i].val, true
}

// symInfo is a symbol as the relocation loop needs it.
type symInfo struct {
	val   uint64
	shndx uint16
	state uint8 // 0 unknown, 1 resolved, 2 failed
}

// shnLivepatch is SHN_LIVEPATCH: a .klp.sym symbol, resolved by name.
const shnLivepatch = 0xff20

// shfRelaLivepatch is SHF_RELA_LIVEPATCH: a .klp.rela section, which
// livepatch applies rather than the module loader.
const shfRelaLivepatch = 0x00100000

// SymbolAddrByName is the final address of the module's first symbol
// named name (symbol table order), when the link resolved it.
func (img *Image) SymbolAddrByName(name string) (uint64, bool) {
	f := img.Module.f
	for i := range f.Symbols {
		if f.Symbols[i].Name == name {
			return img.SymbolAddr(uint32(i))
		}
	}
	return 0, false
}

// Export is a symbol the linked module exports, at its laid-out address.
type Export struct {
	Name string
	Addr uint64
	GPL  bool // EXPORT_SYMBOL_GPL (__ksymtab_gpl)
}

// Exports lists what the module exports (its __ksymtab and __ksymtab_gpl
// entries, in the order verify_exported_symbols() walks them) at their
// laid-out addresses. An entry whose symbol the module does not define as
// global or weak, or whose address the link did not settle (a section
// not loaded), is left out.
func (img *Image) Exports() []Export {
	f := img.Module.f
	defined := map[string]uint32{}
	for i := range f.Symbols {
		s := &f.Symbols[i]
		if b := s.Bind(); s.Name != "" && s.Shndx != uint16(elf.SHN_UNDEF) && (b == elf.STB_GLOBAL || b == elf.STB_WEAK) {
			defined[s.Name] = uint32(s.Index)
		}
	}
	var out []Export
	for _, e := range f.Exports() {
		i, ok := defined[e.Name]
		if !ok {
			continue
		}
		if v, ok := img.SymbolAddr(i); ok {
			out = append(out, Export{Name: e.Name, Addr: v, GPL: e.GPL})
		}
	}
	return out
}
