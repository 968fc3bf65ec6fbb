// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"debug/elf"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/klpresolve/klpresolve/cfi"
	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/modname"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/symvers"
)

// Resolver resolves a module's symbols against a kernel's: .klp.sym
// livepatch symbols with livepatch's rules (object, name, sympos), others
// as the loader's find_symbol() does: among the exported symbols, vmlinux
// first, then loaded modules (kallsyms.Index.FindExport), vmlinux's
// GPL-only ones only with gplOK (modplt.Module.GPLCompatible).
// Neither Find nor FindExport builds diagnostics: the linker reports a
// missing symbol its own way, and a miss with Lookup's nearest names
// scanned every symbol of the kernel (62 scans for one undefined name,
// 62 ms of a 67 ms run).
func Resolver(ix *kallsyms.Index, gplOK bool) modplt.Resolver {
	return func(name string) (uint64, bool) {
		if strings.HasPrefix(name, klp.SymPrefix) {
			sn, n := klp.ParseSymbolName(name)
			if n != 3 {
				return 0, false
			}
			s, ok := ix.Find(sn.Object, sn.Name, sn.Pos)
			return s.Address, ok
		}
		if strings.Contains(name, ":") {
			return 0, false
		}
		s, ok := ix.FindExport(name, gplOK)
		return s.Address, ok
	}
}

// ErrArchMismatch: the module was built for another architecture than
// the kernel whose symbols it is checked against. Names alone would
// resolve (vfs_read is in every kernel), and the answer would be about
// the wrong kernel.
var ErrArchMismatch = errors.New("the module and the kernel are for different architectures")

// CheckArch returns an error wrapping ErrArchMismatch when the kernel of
// ix is known to be built for another architecture than arch (a module's:
// klp.Module.Arch, modplt.Module.Arch). A kernel whose architecture ix
// cannot tell (kallsyms.Index.Arch) passes.
func CheckArch(arch string, ix *kallsyms.Index) error {
	ka, evidence := ix.Arch()
	if ka == "" || ka == arch {
		return nil
	}
	return fmt.Errorf("%s: %w: the module is %s, the kernel is %s (its vmlinux has %s)", ix.Source(), ErrArchMismatch, arch, ka, evidence)
}

// CodeOnly reports whether ordinary symbols are unresolved against ix
// while ix lists no data symbols (kallsyms.Index.ListsData: a kallsyms
// without CONFIG_KALLSYMS_ALL), which may be why (Report.CodeOnly).
func CodeOnly(ix *kallsyms.Index, unresolved []string) bool {
	return len(unresolved) > 0 && !ix.ListsData()
}

// UnloadedDepends returns, when some of unresolved are ordinary symbols
// (not .klp.sym ones), the modules the module depends on that ix does not
// have (Report.UnloadedDepends), named as the kernel names them
// (underscores for dashes). depends is the module's .modinfo depends=
// value: the modules whose exports it uses, comma-separated, which
// modprobe loads first and insmod does not. Their exports are not
// in ix, which may be why the symbols are unresolved (a System.map lists
// no module at all).
func UnloadedDepends(depends string, ix *kallsyms.Index, unresolved []string) []string {
	ordinary := false
	for _, u := range unresolved {
		if !strings.HasPrefix(u, klp.SymPrefix) {
			ordinary = true
			break
		}
	}
	if !ordinary {
		return nil
	}
	var out []string
	for _, d := range dependsNames(depends) {
		if !ix.HasObject(d) {
			out = append(out, d)
		}
	}
	return out
}

// Depends is the modules m depends on (.modinfo depends=: those whose
// exports it uses, which modpost lists and modprobe loads first), named
// as the kernel names them, in order, each once.
func Depends(m *klp.Module) []string { return dependsNames(m.ModInfo("depends")) }

// dependsNames splits a .modinfo depends= value into module names as the
// kernel names them: modpost writes file names (i2c-algo-bit), the
// kernel KBUILD_MODNAME, dashes made underscores (i2c_algo_bit).
func dependsNames(depends string) []string {
	var out []string
	for d := range strings.SplitSeq(depends, ",") {
		d = modname.Of(strings.TrimSpace(d))
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// KernelPageSize is an arm64 kernel's PAGE_SIZE as its symbols show it:
// arch/arm64/kernel/vmlinux.lds.S puts swapper_pg_dir one page after
// reserved_pg_dir (and asserts it: RESERVED_SWAPPER_OFFSET is PAGE_SIZE).
// It is 0 when ix does not list both (another architecture, or a kallsyms
// without CONFIG_KALLSYMS_ALL) or they are not 4, 16 or 64 KiB apart.
func KernelPageSize(ix *kallsyms.Index) uint64 {
	reserved, ok1 := ix.Find(kallsyms.Vmlinux, "reserved_pg_dir", 0)
	swapper, ok2 := ix.Find(kallsyms.Vmlinux, "swapper_pg_dir", 0)
	if !ok1 || !ok2 || swapper.Address < reserved.Address {
		return 0
	}
	if d := swapper.Address - reserved.Address; slices.Contains(modplt.PageSizes(elf.EM_AARCH64), d) {
		return d
	}
	return 0
}

// kernelLinkOptions fills in what lo leaves to the kernel's symbols: its
// _etext (KernelEtext), where the module's machine has a choice of
// page sizes its PAGE_SIZE (KernelPageSize), and the lookup of any
// vmlinux symbol (Kernel: powerpc's kernel TOC and ftrace entry points).
func kernelLinkOptions(machine elf.Machine, ix *kallsyms.Index, lo modplt.LinkOptions) modplt.LinkOptions {
	if lo.KernelEtext == 0 {
		lo.KernelEtext = KernelEtext(ix)
	}
	if sizes := modplt.PageSizes(machine); lo.PageSize == 0 && len(sizes) > 1 {
		if p := KernelPageSize(ix); slices.Contains(sizes, p) {
			lo.PageSize = p
		}
	}
	if !ix.ListsData() {
		// A kallsyms of code only: the kernel has no CONFIG_KALLSYMS_ALL,
		// and keeps only a module's code symbols (a System.map lists data
		// whatever the configuration: the default, all, stands).
		lo.NoKallsymsAll = true
	}
	if machine == elf.EM_S390 && !lo.NoExpoline && !S390Expolines(ix) {
		// No expoline thunks in the kernel: no CONFIG_EXPOLINE (Debian's
		// s390x), so no __jump_r1 thunk in a module's PLT either.
		lo.NoExpoline = true
	}
	if lo.Kernel == nil {
		lo.Kernel = func(name string) (uint64, bool) {
			s, ok := ix.Find(kallsyms.Vmlinux, name, 0)
			return s.Address, ok
		}
	}
	return lo
}

// S390Expolines reports whether an s390 kernel was built with
// CONFIG_EXPOLINE, from its symbols: such a kernel has the thunks its
// indirect branches and returns go through (__s390_indirect_jump_r14 and
// the like, code, so every kallsyms lists them). Whether the running
// kernel then turned them off (nospec, or a machine with etokens) the
// symbols cannot say: --no-expoline does.
func S390Expolines(ix *kallsyms.Index) bool {
	for _, name := range elfobj.ThunkSymbols(elf.EM_S390) {
		if _, ok := ix.Find(kallsyms.Vmlinux, name, 1); ok {
			return true
		}
	}
	return false
}

// KernelEtext is the kernel's _etext from ix (0 when ix does not list it:
// a kallsyms without CONFIG_KALLSYMS_ALL may not), for
// modplt.LinkOptions.KernelEtext: arm64 loads modules in the 128 MiB below
// it.
func KernelEtext(ix *kallsyms.Index) uint64 {
	s, ok := ix.Find(kallsyms.Vmlinux, "_etext", 0)
	if !ok {
		return 0
	}
	return s.Address
}

// Options shape a Run.
type Options struct {
	// Link links the whole module after resolving it, and records it in a
	// CFI shadow where the kernel keeps one (CFIShadow).
	Link bool
	// Kernel is the generation whose rules judge the kernel, and how it
	// was told (TellGeneration); with none, Run tells it from the
	// kernel's symbols alone.
	Kernel kgen.Evidence
	// CFIShadow records a linked module in a CFI shadow whatever the
	// kernel: only kernels 5.13 to 6.0 kept one (kernel/cfi.c's
	// cfi_shadow, CONFIG_CFI_CLANG_SHADOW), and Run records one only for
	// them otherwise.
	CFIShadow bool
	// LinkOptions are passed to modplt (Resolve and SkipSections are set
	// by Run; KernelEtext, Kernel and, on arm64, PageSize come from the
	// kernel's symbols when unset: KernelEtext, KernelPageSize).
	LinkOptions modplt.LinkOptions
	// Modules, when set, are module files: what the patch defers to a
	// module the kernel's symbol list lacks is checked against the
	// module's file (klp.Target), as the kernel will resolve it when the
	// module loads; and the modules it depends on that the kernel's
	// symbols lack are laid out from theirs (Report.Dependencies).
	Modules *ModuleFiles
	// Symvers, when set, is the kernel build's Module.symvers: the
	// module's symbol versions and namespace imports are checked against
	// it as the loader checks them (Report.Versions).
	Symvers *symvers.Table
	// Vermagic, when set, is the kernel's VERMAGIC_STRING (every module
	// of its build has it: ModuleFiles.Vermagic reads it): the module's
	// .modinfo vermagic is checked against it as the loader checks it
	// (Report.Vermagic).
	Vermagic string
	// Config, when set, is what the kernel's configuration says of the
	// loader's checks of a whole module (klp.ResolveOptions.Config;
	// Config.Apply sets it).
	Config *klp.KernelConfig
	// Ftrace, when set, are the kernel's ftrace call sites, read against
	// the index Run is given (ftrace.Open): a patched function without
	// one fails (klp.ResolveOptions.Ftrace).
	Ftrace *ftrace.Sites
	// Reuse, when not nil, is an earlier Report's Resolution the caller
	// is done with, whose memory the new one is written into
	// (klp.ResolveOptions.Reuse): a loop over kernels then allocates
	// its records once. Fleet keeps one for each worker, in place of
	// FleetOptions.Run's.
	Reuse *klp.Resolution
}

// Report is one module against one kernel.
type Report struct {
	Resolution *klp.Resolution
	// Image is the linked module, with Options.Link (nil for a module
	// without a symbol table: Resolution.LoadErr refuses it first).
	Image *modplt.Image
	// Dependencies, with Options.Modules: the modules the module depends
	// on that the kernel's symbols lack, laid out first as modprobe loads
	// them (Link with module files); linked or not, their exports resolve the module's
	// symbols.
	Dependencies []Dependency
	CFI          *CFIReport // when linked and recorded
	// CFINote, when linked and not recorded in a CFI shadow, says why.
	CFINote string
	// Kernel is the generation whose rules judged the kernel, and how it
	// was told.
	Kernel kgen.Evidence
	// LoaderMissing, when not linked: the module's ordinary undefined
	// symbols (not .klp.sym, not weak) that the loader's find_symbol()
	// would not find in this kernel (nor among the Dependencies'
	// exports), which insmod refuses with "Unknown
	// symbol"; sorted. OK does not count them (the main job resolves
	// livepatch relocations); linking checks them with the rest of the
	// module (Image.Unresolved).
	LoaderMissing []string
	// Explanation is why the unresolved names (Image.Unresolved, or
	// LoaderMissing) may be unresolved.
	Explanation
	// Unchecked, with Options.Modules: the modules the patch defers to
	// that have no file there, sorted; OtherBuild: the loaded modules
	// whose file there is not their build (klp.Target.Matches), which
	// were not checked against it.
	Unchecked, OtherBuild []string
	// Versions, with Options.Symvers: the module's symbol versions
	// checked as a kernel with CONFIG_MODVERSIONS checks them; OK fails
	// on a symbol it refuses.
	Versions *symvers.Report
	// Vermagic, with Options.Vermagic: the module's vermagic checked
	// against the kernel's, as check_modinfo() checks it; OK fails when
	// the loader refuses it.
	Vermagic *symvers.Magic
	// AlreadyLoaded: the kernel's symbols list a module of the patch's
	// own name, so insmod of this file fails with "File exists" until
	// that one is removed (add_unformed_module(): -EEXIST). A note: OK
	// does not count it (a patch may be checked where it is loaded).
	AlreadyLoaded bool
	// Times of the phases.
	ResolveTime, LinkTime time.Duration
}

// Explanation says why a module's ordinary symbols may not resolve
// against a kernel (Explain).
type Explanation struct {
	// NotExported: of the unresolved names, those the kernel has but does
	// not export to this module.
	NotExported map[string]Hidden
	// CodeOnly: some ordinary symbols did not resolve, and the kernel's
	// symbol list has no data symbols (kallsyms.Index.ListsData: a
	// kallsyms without CONFIG_KALLSYMS_ALL), which may be why.
	CodeOnly bool
	// UnloadedDepends: some ordinary symbols did not resolve, and these
	// modules, which the module depends on (.modinfo depends=), are not in
	// the kernel's symbols, which may be why: modprobe would load them
	// first (see UnloadedDepends).
	UnloadedDepends []string
	// NoModules: the kernel's symbols list no module at all (a
	// System.map never does), which is why UnloadedDepends are not
	// there.
	NoModules bool
}

// Explain says why the names m left unresolved against ix (a link's
// Image.Unresolved, or Report.LoaderMissing) may be unresolved:
// NotExported, CodeOnly and UnloadedDepends for m's license and depends=.
func Explain(m *klp.Module, ix *kallsyms.Index, unresolved []string) Explanation {
	return Explanation{
		NotExported:     NotExported(ix, unresolved, modplt.GPLCompatible(m.ModInfo("license"))),
		CodeOnly:        CodeOnly(ix, unresolved),
		UnloadedDepends: UnloadedDepends(m.ModInfo("depends"), ix, unresolved),
		NoModules:       !listsModules(ix),
	}
}

// listsModules reports whether ix lists a module (pseudo-modules aside).
func listsModules(ix *kallsyms.Index) bool { return ix.ListsModules() }

// Hidden is a symbol the kernel has but the loader does not give the
// module: find_symbol() sees exports only, and GPL-only exports only for
// GPL-compatible modules. insmod reports either as "Unknown symbol".
type Hidden struct {
	kallsyms.Symbol
	// GPLOnly: vmlinux exports it with EXPORT_SYMBOL_GPL, and the
	// module's license is not GPL-compatible.
	GPLOnly bool
}

// Why says why the loader does not give the module the symbol.
func (h Hidden) Why() string {
	if h.GPLOnly {
		return h.Object + " exports it with EXPORT_SYMBOL_GPL, and this module's license is not GPL-compatible"
	}
	return fmt.Sprintf("%s has it at %#x, %c, but does not export it", h.Object, h.Address, h.Type)
}

// NotExported returns, of the names the linker left unresolved, those
// the kernel has all the same (see Hidden), each with the first symbol
// of that name (vmlinux first). gplOK is the module's
// (modplt.Module.GPLCompatible). livepatch's .klp.sym names are not among
// them.
func NotExported(ix *kallsyms.Index, unresolved []string, gplOK bool) map[string]Hidden {
	var out map[string]Hidden
	for _, u := range unresolved {
		if strings.HasPrefix(u, klp.SymPrefix) {
			continue
		}
		if s, ok := ix.FindName(u); ok {
			if out == nil {
				out = map[string]Hidden{}
			}
			out[u] = Hidden{Symbol: s, GPLOnly: !gplOK && ix.GPLOnly(u)}
		}
	}
	return out
}

// loaderMissing lists f's ordinary undefined symbols that find (the
// kernel's exports to the module: loaderResolver) does not have
// (see Report.LoaderMissing), under the names the loader looks them up by
// (modplt.LookupName). Weak ones are left out (simplify_symbols() takes 0
// for them).
func loaderMissing(m *klp.Module, find modplt.Resolver) []string {
	var out []string
	for _, name := range m.Undefined() {
		if _, ok := find(name); !ok {
			out = append(out, name)
		}
	}
	return out
}

// OK reports whether the module resolved (and, when linked, linked, and
// with Options.Symvers and a kernel's vermagic, whether the loader takes
// its symbol versions and vermagic): whether Diagnostics(strict) has no
// error.
func (r *Report) OK(strict bool) bool {
	_, failed := diag.FirstError(r.Diagnostics(strict))
	return !failed
}

// Run resolves m against ix and, with opts.Link, links it and records it
// in a CFI shadow. m may be shared by concurrent Runs.
func Run(m *klp.Module, ix *kallsyms.Index, opts Options) (*Report, error) {
	if err := CheckArch(m.Arch, ix); err != nil {
		return nil, err
	}
	t0 := time.Now()
	rep := &Report{Kernel: opts.Kernel}
	if rep.Kernel.Generation == kgen.Unknown {
		rep.Kernel = TellGeneration(ix, GenerationHints{})
	}
	opts.LinkOptions.Generation = rep.Kernel.Generation
	ro := klp.ResolveOptions{Config: opts.Config, Ftrace: opts.Ftrace, Generation: rep.Kernel.Generation, Reuse: opts.Reuse}
	if opts.Modules != nil {
		var err error
		if ro.Targets, rep.Unchecked, rep.OtherBuild, err = opts.Modules.targetsFor(m, ix); err != nil {
			return nil, err
		}
		if ro.ModuleStructSize, ro.ModuleStructFrom, err = opts.Modules.ModuleStruct(); err != nil {
			return nil, err
		}
	}
	rep.Resolution = m.Resolve(ix, ro)
	rep.AlreadyLoaded = m.KernelName() != kallsyms.Vmlinux && ix.HasObject(m.KernelName())
	var err error
	if rep.Versions, rep.Vermagic, err = CheckVersions(m, opts.Symvers, opts.Vermagic, rep.Kernel.Generation); err != nil {
		return nil, err
	}
	if !opts.Link {
		// The loader's view without a link: what vmlinux, the loaded
		// modules and (with Modules) the dependencies modprobe loads
		// first export.
		find, deps, _, err := loaderResolver(m, ix, opts.LinkOptions, opts.Modules)
		if err != nil {
			return nil, err
		}
		rep.Dependencies = deps
		rep.LoaderMissing = loaderMissing(m, find)
		rep.Explanation = Explain(m, ix, rep.LoaderMissing)
		rep.Explanation.LaidOut(deps)
		rep.ResolveTime = time.Since(t0)
		return rep, nil
	}
	rep.ResolveTime = time.Since(t0)
	if m.Refusal(klp.ErrNoSymbols) != nil || m.Machine == elf.EM_PPC64 && m.Refusal(klp.ErrNoPLTSection) != nil {
		// Nothing to link: the loader refuses the module before its
		// layout (Resolution.LoadErr says so), and there is no table or
		// stub section to link with. (arm's PLT sections missing, the
		// link shows what needed them.)
		return rep, nil
	}
	t1 := time.Now()
	img, deps, err := Link(m, rep.Resolution, ix, opts.LinkOptions, opts.Modules)
	if err != nil {
		return nil, err
	}
	rep.Image, rep.Dependencies = img, deps
	rep.Explanation = Explain(m, ix, img.Unresolved)
	rep.Explanation.LaidOut(deps)
	if opts.CFIShadow || rep.Kernel.CFIShadow() {
		if rep.CFI, err = recordCFI(img); err != nil {
			return nil, err
		}
	} else {
		rep.CFINote = fmt.Sprintf("not recorded in a CFI shadow: %s keeps none (kernel/cfi.c's shadow is 5.13-6.0's; kCFI checks each call's type instead)", rep.Kernel.Name())
	}
	rep.LinkTime = time.Since(t1)
	return rep, nil
}

// CheckVersions checks, as the module loader of generation g will, m's
// symbol versions and namespace imports against t (when not nil) and its
// vermagic against kernel, the kernel's VERMAGIC_STRING (when not "").
func CheckVersions(m *klp.Module, t *symvers.Table, kernel string, g kgen.Generation) (*symvers.Report, *symvers.Magic, error) {
	if t == nil && kernel == "" {
		return nil, nil, nil
	}
	sm, err := m.Versions()
	if err != nil {
		return nil, nil, err
	}
	var rep *symvers.Report
	var magic *symvers.Magic
	if t != nil {
		rep = t.Check(sm, g)
	}
	if kernel != "" {
		magic = symvers.CheckVermagic(sm, kernel)
	}
	return rep, magic, nil
}

// Link links m against ix as the kernel's module loader and livepatch
// would (lo's Resolve and SkipSections are set here, and its KernelEtext
// and arm64 PageSize from ix when 0): ordinary undefined symbols among
// what the loader gives the module (Resolver), .klp.sym ones with
// livepatch's rules. The .klp.rela sections of objects that are not
// loaded (res.DeferredObjects) are left unapplied, as klp_module_coming()
// applies them when the object loads, and their symbols are not counted
// unresolved.
//
// With module files mf (nil: none), the modules m depends on (.modinfo
// depends=, and theirs) that ix does not list are laid out first from
// their files, as modprobe loads them, from the module area's start up,
// and m after them unless lo.Base is set; m's symbols then resolve among
// their exports too, after vmlinux's, as find_symbol() looks. The
// dependencies are returned in load order; one without a file in mf has
// a nil Image, and its exports stay unresolved.
func Link(m *klp.Module, res *klp.Resolution, ix *kallsyms.Index, lo modplt.LinkOptions, mf *ModuleFiles) (*modplt.Image, []Dependency, error) {
	mod, err := m.LinkModule()
	if err != nil {
		return nil, nil, err
	}
	deferred := map[string]bool{}
	for _, o := range res.DeferredObjects {
		deferred[o] = true
	}
	skip := map[string]bool{}
	for _, s := range m.Sections {
		if deferred[s.Object] {
			skip[s.Name] = true
		}
	}
	lo = kernelLinkOptions(m.Machine, ix, lo)
	find, deps, next, err := loaderResolver(m, ix, lo, mf)
	if err != nil {
		return nil, nil, err
	}
	lo.Resolve = find
	if lo.Base == 0 {
		lo.Base = next.base
	}
	if lo.PercpuBase == 0 {
		lo.PercpuBase = next.percpu
	}
	lo.SkipSections = func(name string) bool { return skip[name] }
	img, err := mod.Link(lo)
	if err != nil {
		return nil, nil, err
	}
	var unresolved []string
	for _, u := range img.Unresolved {
		if sn, n := klp.ParseSymbolName(u); n == 3 && deferred[sn.Object] {
			continue
		}
		unresolved = append(unresolved, u)
	}
	img.Unresolved = unresolved
	return img, deps, nil
}

// CFIReport is how the linked module sits in a CFI shadow.
type CFIReport struct {
	TextStart, TextEnd uint64
	CheckFn            uint64 // __cfi_check, or the start of the text
	CheckFnSymbol      bool   // the module defines __cfi_check
	Pages              int    // pages the shadow covers
	Shadowed           bool
	Reason             string
	// Pointers are the function pointers the module stores (absolute
	// 64- or 32-bit relocations in its data to function symbols);
	// Unknown lists those that land on no page the shadow, the slow path
	// or the kernel's text knows. The slow path, find_module_check_fn(),
	// finds any address __module_address() does: anywhere in the
	// module's core or init layout (a module's struct points at its
	// init_module, in .init.text).
	Pointers int
	Unknown  []string
}

// recordCFI records img's core text in a fresh shadow, as
// cfi_module_add() would, and checks the function pointers it stores.
func recordCFI(img *modplt.Image) (*CFIReport, error) {
	m := img.Module
	rep := &CFIReport{TextStart: ^uint64(0)}
	for _, p := range img.Sections {
		// (s390's GOT and PLT open the text group: its text starts at
		// core's base, as its core_layout does.)
		if p.Flags&elf.SHF_EXECINSTR == 0 || p.Region != modplt.Core || p.Size == 0 {
			continue
		}
		rep.TextStart = min(rep.TextStart, p.Addr)
		rep.TextEnd = max(rep.TextEnd, p.Addr+p.Size)
	}
	if rep.TextEnd == 0 {
		rep.TextStart = 0
		rep.Reason = "no core text"
		return rep, nil
	}
	rep.CheckFn = rep.TextStart
	if v, ok := img.SymbolAddrByName("__cfi_check"); ok {
		rep.CheckFn, rep.CheckFnSymbol = v, true
	}
	// One module, one update: the smallest backlog, and no shadow memory
	// made ahead (faulting in the 1.8 MB a default Set keeps ready took
	// 4 ms, most of a one-shot link).
	// The shadow's pages are the kernel's (PAGE_SHIFT), as the layout's.
	page := max(img.PageSize, modplt.DefaultPageSize)
	set, err := cfi.New(cfi.Options{Reclaim: cfi.Synchronous, MaxPending: 1, Lazy: true, PageShift: uint(bits.TrailingZeros64(page))})
	if err != nil {
		return nil, err
	}
	defer set.Close()
	res, err := set.Add(cfi.Module{Name: m.Name, TextStart: rep.TextStart, TextEnd: rep.TextEnd, CheckFn: rep.CheckFn})
	if err != nil {
		return nil, err
	}
	rep.Pages, rep.Shadowed, rep.Reason = res.Pages, res.Shadowed, res.Reason
	// A pointer is known to find_check_fn() when it is a kernel function
	// (is_kernel_text()) or lies in the module: its text in the shadow
	// just made, the rest of its core and init layout through
	// __module_address() (within_module_core(), within_module_init()).
	var lo, hi [2]uint64
	lo[0], lo[1] = ^uint64(0), ^uint64(0)
	for _, p := range img.Sections {
		r := p.Region
		lo[r], hi[r] = min(lo[r], p.Addr), max(hi[r], p.Addr+p.Size)
	}
	inModule := func(a uint64) bool {
		return (a >= lo[modplt.Core] && a < hi[modplt.Core]) || (a >= lo[modplt.Init] && a < hi[modplt.Init])
	}
	for _, fp := range img.FunctionPointers() {
		rep.Pointers++
		if fp.External || inModule(fp.Target) {
			continue
		}
		rep.Unknown = append(rep.Unknown, fmt.Sprintf("%s+%#x -> %s (%#x)", fp.Section, fp.Offset, fp.Symbol, fp.Target))
	}
	return rep, nil
}
