// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

// Status of one relocation against one kernel.
type Status string

const (
	Resolved Status = "resolved"
	// Deferred: the section's module is not loaded in this kernel; the
	// kernel applies it when that module loads (klp_module_coming()).
	Deferred Status = "deferred"
	Failed   Status = "error"
)

// Result is one relocation's answer.
type Result struct {
	Section string // relocation section (or ".kpatch.dynrelas")
	Index   int
	Offset  uint64
	Type    string
	Symbol  string // as written in the module
	Object  string
	Name    string
	Pos     uint64
	Status  Status
	Address uint64
	Err     *RelocError // when Status is Failed
}

// Resolution is a module resolved against one kernel.
type Resolution struct {
	Module   *Module
	Source   string // the kallsyms input
	Results  []Result
	Resolved int // relocations
	Deferred int
	Errors   int
	// Funcs are the patched functions (Module.Funcs) looked up, and
	// their counts.
	Funcs                                  []FuncResult
	FuncResolved, FuncDeferred, FuncErrors int
	// DeferredObjects lists the modules whose sections (or kpatch's
	// patched functions) wait for them.
	DeferredObjects []string
	// Unanswered lists the modules whose symbols a .klp.rela.vmlinux (or
	// a loaded module's) section uses, where the kernel's symbol list
	// lists no module at all (a System.map, a kernel image): whether
	// they are loaded when the patch loads, which these relocations need,
	// it cannot say. Their relocations count as deferred; with the
	// module's file (Targets), its symbols are checked.
	Unanswered []string
	// BuiltIn lists the deferred objects that look built into this
	// kernel, whose sections would wait for them forever (see BuiltIn).
	BuiltIn []BuiltIn
	// InitRefs are the indexes in Results of the relocations resolved to
	// vmlinux's init memory, which the kernel frees after boot: the
	// patched code would use freed memory. The kernel applies them
	// without a word.
	InitRefs []int
	// Checked lists the deferred objects checked against their module's
	// file (ResolveOptions.Targets), in name order. A deferred relocation
	// or patched function of such an object that will not resolve when
	// the module loads is Failed, with the error the kernel will give
	// then (or ErrLoadOrder); one that will stays Deferred.
	Checked []CheckedObject
	// LoadErr is set when the kernel refuses the module as a whole, the
	// first reason in load_module()'s order: ErrNoSymbols or
	// ErrNoModuleStruct (the module loader, on every kernel),
	// ErrNoLivepatch (the module loader, on this kernel), ErrWriteExec
	// (on every kernel with CONFIG_STRICT_MODULE_RWX, which is assumed
	// unless ResolveOptions.Config says otherwise), ErrNoPLTSection for
	// an arm64 module without .text.ftrace_trampoline (module_finalize(),
	// with module PLTs and dynamic ftrace, assumed likewise),
	// ErrDuplicateExport
	// (on this kernel) or ErrNotMarked (klp_enable_patch(), on every
	// kernel). The relocations and functions are resolved all the same,
	// to show what else would fail.
	LoadErr *RelocError
	// LoadErrStage is where in load_module() the kernel meets LoadErr.
	LoadErrStage LoadStage

	// answers is Resolve's memo of each module symbol's lookup, kept
	// for ResolveOptions.Reuse.
	answers []answer
}

// answer is Resolve's memo of one module symbol: each distinct symbol is
// looked up once, however many relocations use it.
type answer struct {
	done bool
	addr uint64
	err  *RelocError
	// unanswered: a module the symbol list cannot say is loaded (it
	// lists none).
	unanswered bool
}

// LoadStage is where in the module loader's work (load_module(), then the
// module's init) a refusal of the whole module comes: it decides which of
// several failures insmod reports.
type LoadStage uint8

// The stages, in the loader's order.
const (
	// StageSetup: the loader's first checks, of the file's sections
	// (setup_load_info() on 6.1, elf_validity_cache_copy() later: symbol
	// table, struct module, .modinfo, extended versions), before it checks
	// module_layout's version and the vermagic.
	StageSetup LoadStage = iota + 1
	// StageLayout: check_modinfo() and layout_and_allocate(), before the
	// module's symbols are resolved (simplify_symbols()).
	StageLayout
	// StageFinalize: post_relocation() (module_finalize()) and
	// complete_formation(), after the loader's own relocations.
	StageFinalize
	// StageInit: klp_enable_patch(), from the module's init, before
	// livepatch applies its relocations.
	StageInit
)

// CheckedObject is a deferred object checked against its module's file.
type CheckedObject struct {
	Object string
	Path   string // the module's file (Target.Path)
	// OK and Failed count its relocations and patched functions that
	// resolve, and that fail, when the module loads.
	OK, Failed int
}

// ResolveOptions are Resolve's choices.
type ResolveOptions struct {
	// Targets are modules' symbols read from their files, by module
	// name. The deferred relocations and patched functions of an object
	// that the kernel's symbol list lacks are checked against its target
	// (see Target); an object without one stays deferred, unchecked. The
	// patched functions of a loaded object with a target are checked
	// for an ftrace call site.
	Targets map[string]*Target
	// Config, when set, is what the kernel's build configuration says of
	// the loader's whole-module checks; without it, CONFIG_LIVEPATCH is
	// told from the kernel's symbols and CONFIG_STRICT_MODULE_RWX is
	// assumed (see Resolution.LoadErr).
	Config *KernelConfig
	// Ftrace, when set, are the kernel's ftrace call sites, read against
	// the same symbols: a patched function of vmlinux or of a loaded
	// module without one fails as klp_patch_func() fails it
	// (ErrNotTraceable).
	Ftrace *ftrace.Sites
	// Generation is the kernel's generation, whose loader rules judge
	// the module (kgen.Unknown: Linux 6.1's).
	Generation kgen.Generation
	// ModuleStructSize, when not 0, is the size of the kernel's struct
	// module, which a 6.12 or later loader wants of the module's
	// .gnu.linkonce.this_module (ErrBadModuleStruct); one of the
	// kernel's own modules tells it (Module.ModuleStructSize), and
	// ModuleStructFrom names that file.
	ModuleStructSize uint64
	ModuleStructFrom string
	// Reuse, when not nil, is an earlier Resolution the caller is done
	// with: Resolve writes this one into its memory and returns it. A
	// loop over many kernels then allocates its records once, not the
	// Results of each kernel (about 140 bytes a relocation) for the
	// garbage collector to reclaim. Nothing of what Reuse held may be
	// used after the call, and concurrent calls need one each.
	Reuse *Resolution
}

// KernelConfig is what a kernel's build configuration (its .config, as
// /boot/config-RELEASE) decides of the module loader's checks of a whole
// module.
type KernelConfig struct {
	// File is the configuration's file, named in the errors it decides.
	File string
	// Livepatch: CONFIG_LIVEPATCH. Without it check_modinfo_livepatch()
	// refuses every livepatch module (ErrNoLivepatch).
	Livepatch bool
	// StrictModuleRWX: CONFIG_STRICT_MODULE_RWX. Only with it does
	// module_enforce_rwx_sections() refuse a section both writable and
	// executable (ErrWriteExec).
	StrictModuleRWX bool
	// ModulePLTs: CONFIG_ARM_MODULE_PLTS or CONFIG_ARM64_MODULE_PLTS.
	// Only with it does arm's or arm64's module_frob_arch_sections()
	// refuse a module without .plt or .init.plt (ErrNoPLTSection).
	ModulePLTs bool
	// DynamicFtrace: CONFIG_DYNAMIC_FTRACE. With it and module PLTs,
	// arm64's module_finalize() refuses a module without
	// .text.ftrace_trampoline (ErrNoPLTSection).
	DynamicFtrace bool
}

// BuiltIn is a deferred object that looks built into the kernel: every
// symbol the patch names in it is in vmlinux (kallsyms and System.map list
// a built-in module's symbols as vmlinux's). A built-in module has no
// struct module: klp_find_object_module() never finds it and
// klp_module_coming() never runs for it, so livepatch would never apply
// its relocations nor patch its functions, and say nothing. (The kernel
// defers it all the same; Status stays Deferred.)
type BuiltIn struct {
	Object string
	// Names are the object's symbols the patch names (its deferred
	// relocations' .klp.sym symbols, and its patched functions),
	// distinct and sorted; vmlinux has every one.
	Names []string
}

// FuncResult is a patched function looked up: the address of the code
// it replaces, or why it cannot be found.
type FuncResult struct {
	Func
	Status  Status
	Address uint64
	Err     *RelocError // when Status is Failed
}

// OK reports whether nothing failed, relocations and patched functions
// (deferred is allowed unless strict).
func (r *Resolution) OK(strict bool) bool {
	return r.LoadErr == nil && r.Errors == 0 && r.FuncErrors == 0 && (!strict || r.Deferred+r.FuncDeferred == 0)
}

// Resolve answers every livepatch relocation and every patched function
// of m against ix, as the kernel would when the patch (and later each
// patched module) loads, and checks what the kernel would refuse of the
// module as a whole. Each distinct symbol is looked up once. The deferred
// relocations and patched functions of the objects opts.Targets has are
// checked against them; the zero ResolveOptions checks none. It is safe
// to call concurrently on one module with different indexes.
func (m *Module) Resolve(ix *kallsyms.Index, opts ResolveOptions) *Resolution {
	res := opts.Reuse
	if res == nil {
		res = &Resolution{}
	}
	// Every field of a Result is written below, so the memory reused
	// needs no clearing; the memo does.
	*res = Resolution{Module: m, Source: ix.Source(), Results: slices.Grow(res.Results[:0], m.NumRelocs()),
		answers: append(res.answers[:0], make([]answer, len(m.elf.Symbols))...)}
	ix.Expect(m.NumRelocs() + len(m.Funcs))
	listsModules := ix.ListsModules()
	unanswered := map[string]bool{}
	cache := res.answers               // by symbol index
	var checked map[uint32]*RelocError // a target's answers, by symbol index
	deferred := map[string]bool{}
	tally := map[string]*CheckedObject{}
	countChecked := func(object string, failed bool) {
		c := tally[object]
		if c == nil {
			c = &CheckedObject{Object: object, Path: opts.Targets[object].Path}
			tally[object] = c
		}
		if failed {
			c.Failed++
		} else {
			c.OK++
		}
	}
	types := typeNames{machine: m.Machine}
	for _, s := range m.Sections {
		deferredSection := s.Err == nil && s.Object != kallsyms.Vmlinux && !ix.HasObject(s.Object)
		for i := range s.Relocs {
			r := &s.Relocs[i]
			// Filled in place, field by field: a Result is 136 bytes, and
			// a Result{...} literal is built in a stack temporary by
			// narrow stores and then copied with 16-byte loads that the
			// CPU cannot forward from them (that stall was half of
			// Resolve's time; copying twice cost more than the lookups).
			res.Results = slices.Grow(res.Results, 1)[:len(res.Results)+1]
			out := &res.Results[len(res.Results)-1]
			out.Section, out.Index, out.Offset, out.Type, out.Symbol = s.Name, r.Index, r.Offset, types.name(r.Type), r.Symbol
			out.Object, out.Name, out.Pos = r.Sym.Object, r.Sym.Name, r.Sym.Pos
			out.Address, out.Err = 0, nil
			switch {
			case s.Err != nil:
				out.Status, out.Err = Failed, m.relocErr(s, r, s.Err)
			case r.Err != nil:
				out.Status, out.Err = Failed, m.relocErr(s, r, r.Err)
				m.notMarkedMessage(out.Err, r, opts.Generation)
			case deferredSection:
				out.Status = Deferred
				deferred[s.Object] = true
				if t := opts.Targets[s.Object]; t != nil {
					if checked == nil {
						checked = map[uint32]*RelocError{}
					}
					e, done := checked[r.SymIndex]
					if !done {
						_, e = m.checkTarget(t, s, r)
						checked[r.SymIndex] = e
					}
					if e != nil {
						// (looked up once per symbol: this relocation's place)
						c := *e
						c.Section, c.Index, c.Offset = s.Name, r.Index, r.Offset
						out.Status, out.Err = Failed, &c
					}
					countChecked(s.Object, e != nil)
				}
			default:
				a := cache[r.SymIndex]
				if !a.done {
					a.done = true
					sym, err := ix.LookupListed(r.Sym.Object, r.Sym.Name, r.Sym.Pos)
					switch {
					case err != nil && errors.Is(err, kallsyms.ErrNoObject) && !listsModules && r.Sym.Object != kallsyms.Vmlinux:
						// A System.map or an image lists no module: it
						// cannot say whether this one is loaded when the
						// patch loads; its file, where given, says whether
						// it has the symbol.
						a.unanswered = true
						if t := opts.Targets[r.Sym.Object]; t != nil {
							if _, e := m.checkTarget(t, s, r); e != nil {
								a.err, a.unanswered = e, false
							}
						}
					case err != nil:
						a.err = m.lookupErr(s, r, err)
					default:
						a.addr = sym.Address
					}
					cache[r.SymIndex] = a
				}
				if a.unanswered {
					out.Status = Deferred
					unanswered[r.Sym.Object] = true
				} else if a.err != nil {
					// (looked up once per symbol: this relocation's place)
					e := *a.err
					e.Section, e.Index, e.Offset = s.Name, r.Index, r.Offset
					out.Status, out.Err = Failed, &e
				} else {
					out.Status, out.Address = Resolved, a.addr
				}
			}
			res.count(out.Status)
		}
	}
	if m.Kpatch != nil {
		m.resolveKpatch(ix, res, deferred)
	}
	reg := regionsOf(ix)
	for i := range res.Results {
		if r := &res.Results[i]; r.Status == Resolved && r.Object == kallsyms.Vmlinux && reg.inInitMemory(r.Address) {
			res.InitRefs = append(res.InitRefs, i)
		}
	}
	for _, fn := range m.Funcs {
		fr := m.resolveFunc(ix, fn, reg)
		if fr.Status == Resolved && opts.Ftrace != nil {
			if e := m.checkSites(opts.Ftrace, fn, fr.Address); e != nil {
				fr.Status, fr.Address, fr.Err = Failed, 0, e
			}
		}
		switch t := opts.Targets[fn.Object]; {
		case t == nil:
		case fr.Status == Deferred:
			if e := m.checkFunc(t, fn); e != nil {
				fr.Status, fr.Err = Failed, e
				deferred[fn.Object] = true // its other functions wait for it all the same
			}
			countChecked(fn.Object, fr.Err != nil)
		case fr.Status == Resolved && fn.Object != kallsyms.Vmlinux:
			// Loaded: the file tells whether it can be traced.
			if e := m.checkLoadedFunc(t, fn); e != nil {
				fr.Status, fr.Address, fr.Err = Failed, 0, e
			}
		}
		switch fr.Status {
		case Resolved:
			res.FuncResolved++
		case Deferred:
			res.FuncDeferred++
			deferred[fn.Object] = true
		default:
			res.FuncErrors++
		}
		res.Funcs = append(res.Funcs, fr)
	}
	for o := range deferred {
		res.DeferredObjects = append(res.DeferredObjects, o)
	}
	slices.Sort(res.DeferredObjects)
	for o := range unanswered {
		res.Unanswered = append(res.Unanswered, o)
	}
	slices.Sort(res.Unanswered)
	for _, c := range tally {
		res.Checked = append(res.Checked, *c)
	}
	slices.SortFunc(res.Checked, func(a, b CheckedObject) int { return strings.Compare(a.Object, b.Object) })
	res.BuiltIn = builtIn(ix, res, deferred)
	// In load_module()'s order: setup_load_info() (6.1) or
	// elf_validity_cache_copy(), check_modinfo(),
	// module_frob_arch_sections() and module_enforce_rwx_sections()
	// (layout_and_allocate()), check_export_symbol_sections() (7.2),
	// module_finalize() (post_relocation()), verify_exported_symbols()
	// (complete_formation()), then klp_enable_patch() from the module's
	// init.
	g := opts.Generation
	// loadStages are the checks' stages, one each.
	loadStages := [...]LoadStage{StageSetup, StageLayout, StageLayout, StageLayout, StageLayout, StageFinalize, StageFinalize, StageInit}
	for i, check := range [len(loadStages)]func() *RelocError{
		func() *RelocError { return m.elfRefusal(g, &opts) },
		func() *RelocError { return m.checkLivepatchSupport(ix, opts.Config) },
		func() *RelocError { return m.refusesPLTSection(opts.Config, g) },
		func() *RelocError { return m.checkWriteExec(opts.Config) },
		func() *RelocError { return m.checkExportSections(g) },
		func() *RelocError { return m.refusesFtracePLT(opts.Config, g) },
		func() *RelocError { return m.checkExports(ix, g) },
		func() *RelocError { return cmp.Or(m.notMarked, m.notLivepatch) },
	} {
		if res.LoadErr = check(); res.LoadErr != nil {
			res.LoadErrStage = loadStages[i]
			break
		}
	}
	return res
}

// checkExports: verify_exported_symbols(), from complete_formation(),
// refuses a module that exports a name find_symbol() finds already:
// exported by vmlinux (either table) or by any module in the kernel. The
// first of the module's exports found is the error, owner "kernel" for
// vmlinux (module_name(NULL)). Where the index does not list vmlinux's
// exports (a kallsyms without CONFIG_KALLSYMS_ALL), a vmlinux symbol of
// the name proves nothing and is passed over. When a module of this one's
// name is loaded, insmod fails earlier ("File exists",
// add_unformed_module()), and a module found exporting the names is this
// one: nothing is said (pipeline.Report.AlreadyLoaded says it).
func (m *Module) checkExports(ix *kallsyms.Index, g kgen.Generation) *RelocError {
	name := m.KernelName()
	if name != kallsyms.Vmlinux && ix.HasObject(name) {
		return nil
	}
	for _, e := range m.exports {
		if e.GPL && g >= kgen.Linux7_2 {
			continue // find_module_sections(): "ignoring obsolete section __ksymtab_gpl"
		}
		s, ok := ix.FindExport(e.Name, true)
		if !ok || (s.Object == kallsyms.Vmlinux && !ix.ListsExports()) {
			continue
		}
		owner, by := s.Object, "vmlinux exports it"
		if owner == kallsyms.Vmlinux {
			owner = "kernel"
		} else {
			by = "module " + owner + " exports it"
		}
		table := "__ksymtab"
		if e.GPL {
			table = "__ksymtab_gpl"
		}
		return &RelocError{File: m.Path, Section: table, Symbol: e.Name, Err: ErrDuplicateExport,
			Kernel: fmt.Sprintf("%s: exports duplicate symbol %s (owned by %s)", name, e.Name, owner),
			Hint:   fmt.Sprintf("%s already, and a name is exported once in a kernel: drop the module's EXPORT_SYMBOL(%s) (a patch's copy of an exported function is reached through the function it replaces, and needs no export of its own)", by, e.Name)}
	}
	return nil
}

// checkLivepatchSupport: check_modinfo_livepatch() (kernel/module/main.c)
// refuses a module with a livepatch modinfo key, whatever its value, when
// the kernel was built without CONFIG_LIVEPATCH. Such a kernel has no
// klp_enable_patch (kernel/livepatch/core.c, a global function, so in
// every kallsyms and System.map of a kernel that has it). A symbol list
// that lacks start_kernel too is no whole kernel's (a test's, or a
// fragment), and says nothing either way. A configuration, when given,
// decides instead of the symbols.
func (m *Module) checkLivepatchSupport(ix *kallsyms.Index, cfg *KernelConfig) *RelocError {
	if !m.marked {
		return nil
	}
	var why string
	switch {
	case cfg != nil && cfg.Livepatch:
		return nil
	case cfg != nil:
		why = "its configuration " + cfg.File + " does not set it"
	default:
		if _, ok := ix.Find(kallsyms.Vmlinux, "klp_enable_patch", 1); ok {
			return nil
		}
		if _, ok := ix.Find(kallsyms.Vmlinux, "start_kernel", 1); !ok {
			return nil
		}
		why = "its symbols have start_kernel but no klp_enable_patch"
		if !ix.KernelKallsyms().All {
			why += ", and its kallsyms holds code only: no CONFIG_KALLSYMS_ALL, which CONFIG_LIVEPATCH depends on"
		}
	}
	return &RelocError{File: m.Path, Section: ".modinfo", Symbol: "livepatch", Err: ErrNoLivepatch,
		Kernel: m.KernelName() + ": module is marked as livepatch module, but livepatch support is disabled",
		Hint:   "this kernel was built without CONFIG_LIVEPATCH (" + why + "): its module loader refuses every livepatch module (insmod: Exec format error), so nothing here can load on it"}
}

// builtIn finds the deferred objects of res that look built into ix's
// kernel (see BuiltIn). Only the symbols a deferred object's relocations
// name in that object are evidence (a .klp.rela.xfs section may name
// vmlinux symbols too), and they must all be in vmlinux: one that is not
// says the module is a module. An object whose names are all in vmlinux
// by chance (a common static name, such as type_show) could be taken for
// built in; the names are given so that a reader can judge.
func builtIn(ix *kallsyms.Index, res *Resolution, deferred map[string]bool) []BuiltIn {
	if len(deferred) == 0 {
		return nil
	}
	names := map[string][]string{}
	for i := range res.Results {
		r := &res.Results[i]
		if r.Status == Deferred && deferred[r.Object] {
			names[r.Object] = append(names[r.Object], r.Name)
		}
	}
	for _, f := range res.Funcs {
		if deferred[f.Object] {
			names[f.Object] = append(names[f.Object], f.Name)
		}
	}
	var out []BuiltIn
	for _, o := range res.DeferredObjects {
		ns := names[o]
		if len(ns) == 0 {
			continue
		}
		slices.Sort(ns)
		ns = slices.Compact(ns)
		inVmlinux := true
		for _, n := range ns {
			if _, ok := ix.Find(kallsyms.Vmlinux, n, 1); !ok {
				inVmlinux = false
				break
			}
		}
		if inVmlinux {
			out = append(out, BuiltIn{Object: o, Names: ns})
		}
	}
	return out
}

func (res *Resolution) add(r Result) {
	res.count(r.Status)
	res.Results = append(res.Results, r)
}

func (res *Resolution) count(s Status) {
	switch s {
	case Resolved:
		res.Resolved++
	case Deferred:
		res.Deferred++
	default:
		res.Errors++
	}
}

// relocErr locates a static error found by the module's own checks.
func (m *Module) relocErr(s *RelaSection, r *Relocation, err error) *RelocError {
	e := StaticError(err)
	e.File, e.Section, e.Index, e.Offset, e.Symbol = m.Path, s.Name, r.Index, r.Offset, r.Symbol
	return e
}

// notMarkedMessage is klp_resolve_symbols()'s message for a symbol not
// marked SHN_LIVEPATCH in the kernel's generation: from 7.2 it says where,
// "at rela sec %u idx %d" (the symbol table's section index, which it
// names so, and the relocation's index in its section).
func (m *Module) notMarkedMessage(e *RelocError, r *Relocation, g kgen.Generation) {
	if g >= kgen.Linux7_2 && errors.Is(e.Err, ErrNotLivepatchSymbol) {
		e.Kernel = fmt.Sprintf("symbol %s at rela sec %d idx %d is not marked as a livepatch symbol", r.Symbol, m.elf.Symtab, r.Index)
	}
}

// StaticError is a failure found from the module alone (a section's,
// relocation's or patched function's Err) as a RelocError, unlocated: a
// *CheckError's kernel line and hint ("(no message: the kernel fails
// silently)" where the kernel says nothing), or the error's text.
func StaticError(err error) *RelocError {
	e := &RelocError{Err: err, Kernel: err.Error()}
	var ce *CheckError
	if errors.As(err, &ce) {
		e.Kernel, e.Hint = ce.Kernel, ce.Hint
		if e.Kernel == "" {
			e.Kernel = "(no message: the kernel fails silently)"
		}
	}
	return e
}

// lookupErr turns a kallsyms lookup failure into a RelocError with the
// message klp_find_object_symbol() prints.
func (m *Module) lookupErr(s *RelaSection, r *Relocation, err error) *RelocError {
	e := &RelocError{File: m.Path, Section: s.Name, Index: r.Index, Offset: r.Offset, Symbol: r.Symbol, Err: err}
	var le *kallsyms.LookupError
	if errors.As(err, &le) {
		if errors.Is(err, kallsyms.ErrNoObject) {
			// The kernel walks the loaded modules and finds nothing.
			e.Kernel = fmt.Sprintf("symbol '%s' not found in symbol table", r.Sym.Name)
			e.Hint = fmt.Sprintf("module %s is not loaded in this kernel", r.Sym.Object)
			if s.Object == kallsyms.Vmlinux {
				e.Hint += "; a .klp.rela.vmlinux section is applied when the patch loads, so a module symbol must be in a .klp.rela." + r.Sym.Object + ".* section"
			}
		} else {
			e.Kernel, e.Hint = le.KernelMessage(), le.Help()
			switch {
			case errors.Is(err, kallsyms.ErrAmbiguous):
				e.Hint += fmt.Sprintf(" (e.g. %s)", FormatSymbolName(r.Sym.Object, r.Sym.Name, 1))
			case errors.Is(err, kallsyms.ErrNoSuchPosition) && le.Count > 0:
				// The build tools count positions in the kernel they
				// build against (kpatch-build's lookup_sympos(),
				// klp-build's objtool klp diff).
				e.Hint += "; a position counts the name's copies in the kernel the patch was built against, and this kernel has fewer: build the patch against this kernel's own build"
			}
		}
	} else {
		e.Kernel = err.Error()
	}
	return e
}

// joinHint puts a, then b when there is one, in one hint.
func joinHint(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// resolveFunc looks a patched function up as klp_init_object_loaded()
// does when its object is loaded: klp_find_object_symbol(obj->name,
// func->old_name, func->old_sympos), whose failure fails the patch. An
// object that is not loaded defers it (klp_module_coming()).
func (m *Module) resolveFunc(ix *kallsyms.Index, fn Func, reg regions) FuncResult {
	fr := FuncResult{Func: fn}
	s, r := fn.where()
	switch {
	case fn.Err != nil:
		fr.Status, fr.Err = Failed, m.relocErr(s, r, fn.Err)
	case fn.Object != kallsyms.Vmlinux && !ix.HasObject(fn.Object):
		fr.Status = Deferred
	default:
		sym, err := ix.LookupListed(fn.Object, fn.Name, fn.Pos)
		if err != nil {
			fr.Status, fr.Err = Failed, m.lookupErr(s, r, err)
			var le *kallsyms.LookupError
			errors.As(err, &le)
			switch {
			case errors.Is(err, kallsyms.ErrAmbiguous):
				// lookupErr's example is a .klp.sym name.
				fr.Err.Hint = le.Help() + " (as the klp_func's old_sympos)"
			case errors.Is(err, kallsyms.ErrNotFound) && le != nil && le.Note == "":
				fr.Err.Hint = joinHint(fmt.Sprintf("livepatch patches a function through its symbol, and this kernel has no function %s in %s: its build inlined it into its callers, or renamed or dropped it. Build the patch against this kernel's own build: where the function is inlined, the build tool patches its callers", fn.Name, fn.Object), fr.Err.Hint)
			}
		} else if fn.Object == kallsyms.Vmlinux && reg.inInitText(sym.Address) {
			// klp_patch_func(): ftrace_location() of freed init code is 0.
			fr.Status, fr.Err = Failed, m.relocErr(s, r, &CheckError{Kind: ErrInitFunction,
				Kernel: fmt.Sprintf("failed to find location for function '%s'", fn.Name),
				Hint:   fmt.Sprintf("%s is at %#x, in vmlinux's init code (%#x-%#x): freed after boot, and ftrace with it, so livepatch cannot patch it; patch what calls it instead", fn.Name, sym.Address, reg.textLo, reg.textHi)})
		} else if t, ok := reg.untraced(sym.Address); fn.Object == kallsyms.Vmlinux && ok {
			// klp_patch_func(): code built without an ftrace call site
			// has no ftrace location.
			fr.Status, fr.Err = Failed, m.relocErr(s, r, &CheckError{Kind: ErrNotTraceable,
				Kernel: fmt.Sprintf("failed to find location for function '%s'", fn.Name),
				Hint:   fmt.Sprintf("%s is at %#x, in vmlinux's %s (%s..%s, %#x-%#x), which is built without ftrace call sites, so livepatch cannot patch it; patch what it calls, or what calls it, instead", fn.Name, sym.Address, t.what, t.start, t.end, t.lo, t.hi)})
		} else {
			fr.Status, fr.Address = Resolved, sym.Address
		}
	}
	return fr
}

// checkSites: klp_patch_func() fails a function for which
// ftrace_location() finds no call site in the kernel's table.
func (m *Module) checkSites(sites *ftrace.Sites, fn Func, addr uint64) *RelocError {
	if sites.Function(kallsyms.Symbol{Name: fn.Name, Object: fn.Object, Address: addr}) != ftrace.NotTraceable {
		return nil
	}
	s, r := fn.where()
	return m.relocErr(s, r, &CheckError{Kind: ErrNotTraceable,
		Kernel: fmt.Sprintf("failed to find location for function '%s'", fn.Name),
		Hint: fmt.Sprintf("%s is at %#x in %s, and the kernel's ftrace call sites (%s) have none in it: notrace code, or a file built without ftrace's flags (as kernel/trace/ is), so livepatch cannot patch it; patch what calls it instead",
			fn.Name, addr, fn.Object, sites.Source())})
}

// where is a patched function as a relocation of its declaration's
// section, for the errors that locate one.
func (fn Func) where() (*RelaSection, *Relocation) {
	return &RelaSection{Name: fn.Section, Object: fn.Object},
		&Relocation{Index: fn.Index, Offset: fn.Offset, RelocSymbol: &RelocSymbol{Symbol: fn.Name, Sym: SymbolName{Object: fn.Object, Name: fn.Name, Pos: fn.Pos}}}
}

// regions are the parts of vmlinux that livepatch cannot use: its init
// memory, which the kernel frees after boot (free_initmem()): init code
// (_sinittext.._einittext, which every kallsyms lists) and all of it
// (__init_begin..__init_end, data symbols that a kallsyms without
// CONFIG_KALLSYMS_ALL lacks); and the code ftrace cannot patch. Empty
// where the kernel's symbols do not say.
type regions struct {
	textLo, textHi, lo, hi uint64
	// percpuLo and percpuHi bound the per-cpu variables' template
	// (__per_cpu_start, __per_cpu_end), which lies in init memory where
	// it has link-time addresses (arm64; x86_64 from Linux 6.15, whose
	// per-cpu symbols are no longer offsets from zero). Code reaches a
	// per-cpu variable through its symbol's address plus the CPU's
	// offset (setup_per_cpu_areas() copies the template out before
	// free_initmem()), so a reference to one is not to freed memory.
	percpuLo, percpuHi uint64
	// noTrace are vmlinux's text sections whose code has no ftrace call
	// site: noinstr code (noinstr is notrace) and the entry code.
	// (.cpuidle.text is not among them: 6.1's __cpuidle is a section
	// alone, traceable; from 6.2 it is noinstr, and lies within
	// .noinstr.text's bounds.)
	noTrace []textRange
}

type textRange struct {
	what, start, end string
	lo, hi           uint64
}

// untraced returns the range of code without ftrace call sites that a is
// in, if any.
func (m regions) untraced(a uint64) (textRange, bool) {
	for _, t := range m.noTrace {
		if a >= t.lo && a < t.hi {
			return t, true
		}
	}
	return textRange{}, false
}

// regionsOf reads ix's regions.
func regionsOf(ix *kallsyms.Index) regions {
	addr := func(name string) uint64 {
		s, ok := ix.Find(kallsyms.Vmlinux, name, 1)
		if !ok {
			return 0
		}
		return s.Address
	}
	m := regions{textLo: addr("_sinittext"), textHi: addr("_einittext"), lo: addr("__init_begin"), hi: addr("__init_end"),
		percpuLo: addr("__per_cpu_start"), percpuHi: addr("__per_cpu_end")}
	if m.textLo >= m.textHi {
		m.textLo, m.textHi = 0, 0
	}
	if m.lo >= m.hi {
		m.lo, m.hi = m.textLo, m.textHi
	}
	for _, t := range []textRange{
		{what: "noinstr code", start: "__noinstr_text_start", end: "__noinstr_text_end"},
		{what: "entry code", start: "__entry_text_start", end: "__entry_text_end"},
	} {
		if t.lo, t.hi = addr(t.start), addr(t.end); t.lo < t.hi {
			m.noTrace = append(m.noTrace, t)
		}
	}
	return m
}

// inInitText reports whether a is vmlinux init code.
func (m regions) inInitText(a uint64) bool { return a >= m.textLo && a < m.textHi }

// inInitMemory reports whether a is in vmlinux's init memory, code or
// data, other than the per-cpu template.
func (m regions) inInitMemory(a uint64) bool {
	if a >= m.percpuLo && a < m.percpuHi {
		return false
	}
	return m.inInitText(a) || a >= m.lo && a < m.hi
}

// where is a dynrela as relocErr and lookupErr locate a failure.
func (d Dynrela) where() (*RelaSection, *Relocation) {
	return &RelaSection{Name: ".kpatch.dynrelas", Object: d.Object},
		&Relocation{Index: d.Index, RelocSymbol: &RelocSymbol{Symbol: d.Name, Sym: SymbolName{Object: d.Object, Name: d.Name, Pos: d.Pos}}}
}

// resolveKpatch resolves a legacy module's dynrelas as kpatch's core
// module does (kpatch_write_relocations(), kmod/core/core.c), each in its
// order: the symbol first (an external one among the kernel's exports,
// find_symbol(), else among the patch module's own symbols; any other in
// its object, kpatch_find_object_symbol(), whose rules are livepatch's),
// then the relocation type, which must be one it applies.
func (m *Module) resolveKpatch(ix *kallsyms.Index, res *Resolution, deferred map[string]bool) {
	for _, d := range m.Kpatch.Dynrelas {
		out := Result{Section: ".kpatch.dynrelas", Index: d.Index, Offset: d.Offset, Type: d.TypeName, Symbol: d.Name,
			Object: d.Object, Name: d.Name, Pos: d.Pos}
		s, r := d.where()
		switch {
		case neverLoads(d.Object):
			// kpatch's core module matched objects by name too.
			out.Status, out.Err = Failed, m.relocErr(s, r, neverLoadsError(d.Object))
			res.add(out)
			continue
		case d.Object != kallsyms.Vmlinux && !ix.HasObject(d.Object):
			out.Status = Deferred
			deferred[d.Object] = true
			res.add(out)
			continue
		case d.External:
			if sym, ok := ix.FindExport(d.Name, true); ok {
				out.Status, out.Address = Resolved, sym.Address
			} else if m.ownSymbol(d.Name, d.Pos) {
				// kpatch_find_external_symbol(): in the patch module
				// itself (another .o of it), where it is once loaded.
				out.Status, out.Object = Resolved, m.KernelName()
			} else {
				out.Status, out.Err = Failed, m.kpatchErr(s, r, fmt.Sprintf("symbol '%s' not found in symbol table", d.Name),
					fmt.Sprintf("%q is external: the kpatch core looks it up among the kernel's exports (vmlinux's and loaded modules'), then in the patch module itself, never among another object's local symbols: export it, or make the dynrela non-external in its object", d.Name))
			}
		default:
			sym, err := ix.LookupListed(d.Object, d.Name, d.Pos)
			if err != nil {
				e := m.lookupErr(s, r, err)
				// kpatch prints the object's name as given: vmlinux
				// is "vmlinux", not livepatch's "(null)".
				e.Kernel = strings.Replace(e.Kernel, "in object '(null)'", "in object 'vmlinux'", 1) + "\nunable to find symbol '" + d.Name + "'"
				out.Status, out.Err = Failed, e
			} else {
				out.Status, out.Address = Resolved, sym.Address
			}
		}
		if out.Status == Resolved && !kpatchAppliesType(m.Machine, d.Type) {
			out.Status, out.Address = Failed, 0
			out.Err = m.relocErr(s, r, &CheckError{Kind: ErrDynrelaType,
				Kernel: fmt.Sprintf("unsupported rela type %d for source %s (%s <- %s)", d.Type, d.Name, d.Dest, d.Name),
				Hint:   "the kpatch core module applies x86_64's R_X86_64_NONE, PC32, PLT32, 32S and 64 dynrelas only; rebuild the patch with kpatch-build as a livepatch module (its .klp.rela sections take every type the kernel's apply_relocate_add() does)"})
		}
		res.add(out)
	}
}

// kpatchAppliesType: kpatch_write_relocations() applies dynrelas of type
// t: x86_64's NONE, 64, PC32, PLT32 and 32S; no other machine's.
func kpatchAppliesType(machine elf.Machine, t uint32) bool {
	if machine != elf.EM_X86_64 {
		return false
	}
	switch elf.R_X86_64(t) {
	case elf.R_X86_64_NONE, elf.R_X86_64_64, elf.R_X86_64_PC32, elf.R_X86_64_PLT32, elf.R_X86_64_32S:
		return true
	}
	return false
}

// ownSymbol: the patch module defines name (its sympos-th, or the only
// one for 0) among the symbols kallsyms keeps of a loaded module, as
// kpatch_find_object_symbol() with the patch module's own name finds it.
func (m *Module) ownSymbol(name string, pos uint64) bool {
	n := 0
	for i := range m.elf.Symbols {
		s := &m.elf.Symbols[i]
		if s.Name == name && s.Shndx != uint16(elf.SHN_UNDEF) && s.Shndx < uint16(elf.SHN_LORESERVE) {
			n++
		}
	}
	return n > 0 && (pos == 0 && n == 1 || pos > 0 && uint64(n) >= pos)
}

// kpatchErr is a dynrela the kpatch core cannot resolve: its message,
// then kpatch_write_relocations()'s.
func (m *Module) kpatchErr(s *RelaSection, r *Relocation, msg, hint string) *RelocError {
	return m.relocErr(s, r, &CheckError{Kind: kallsyms.ErrNotFound, Kernel: msg + "\nunable to find symbol '" + r.Symbol + "'", Hint: hint})
}
