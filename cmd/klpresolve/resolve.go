// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
)

type resolveOpts struct {
	format  string
	strict  bool
	stats   bool
	maxTime time.Duration
	link    bool
	base    string
	out     string
	kbuild  linkFlags
	modules []string
	symvers string
	magic   string
	kernel  installedFlags
	ftrace  string
	cfi     bool
}

// addResolveFlags makes the root command the main job:
// klpresolve PATCH.ko [--kallsyms PATH] [--format text|json] [--strict] [--stats].
// newResolveCmd is the main job by name, for scripts that spell every
// verb out: "klpresolve resolve PATCH.ko" is "klpresolve PATCH.ko".
func newResolveCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "resolve PATCH.ko",
		Short: "The main job by name (klpresolve PATCH.ko)",
		Long: `resolve is the main job, by name: klpresolve resolve PATCH.ko is
klpresolve PATCH.ko, with the same flags, output and exit status
(klpresolve --help says them).`,
		Example: `  klpresolve resolve fix.ko --kallsyms System.map-6.1.0-57-amd64`,
		Args:    needArgs(1, 1, "one livepatch module, PATCH.ko"),
	}
	addResolveFlags(c, a)
	return c
}

func addResolveFlags(root *cobra.Command, a *app) {
	o := &resolveOpts{}
	root.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	root.Flags().BoolVar(&o.strict, "strict", false, "treat deferred relocations (module not loaded) as failures")
	root.Flags().BoolVar(&o.stats, "stats", false, "print the time of each phase to stderr")
	root.Flags().DurationVar(&o.maxTime, "max-time", 0, "stop, and exit 3, when the work has not finished within this (e.g. 2s)")
	root.Flags().BoolVar(&o.link, "link", false, "also link the whole module, and record it in a CFI shadow where kept")
	root.Flags().BoolVar(&o.cfi, "cfi-shadow", false, "with --link: record the module in a CFI shadow whatever the kernel")
	root.Flags().StringVar(&o.base, "base", "", "with --link: core load address (default: where the module allocator starts)")
	root.Flags().StringVarP(&o.out, "output", "o", "", "with --link: write the linked image (ELF, sections at their load addresses)")
	o.kbuild.add(root, "with --link: ")
	addModulesFlag(root, &o.modules)
	addSymversFlag(root, &o.symvers)
	addVermagicFlag(root, &o.magic, true)
	o.kernel.add(root)
	root.Flags().StringVar(&o.ftrace, "ftrace", "", "the kernel's ftrace call sites: vmlinux, vmlinuz or tracefs's list")
	root.RunE = func(cmd *cobra.Command, args []string) error {
		return a.resolve(cmd, args[0], o)
	}
}

func (a *app) resolve(cmd *cobra.Command, path string, o *resolveOpts) error {
	if err := checkFormat(o.format); err != nil {
		return err
	}
	// Usage first: before the kernel's symbols are read.
	if !o.link && (o.out != "" || o.base != "" || o.cfi || o.kbuild.given()) {
		return &exitError{exitUsage, errors.New("-o, --base, --cfi-shadow, --erratum-843419, --no-kaslr and --page-size need --link")}
	}
	var po pipeline.Options
	if err := o.kbuild.apply(&po.LinkOptions); err != nil {
		return err
	}
	if err := imageToFile(o.out); err != nil {
		return err
	}
	if err := a.oneStdin(path); err != nil {
		return err
	}
	// The work --max-time bounds: reading the inputs, resolving, linking.
	var (
		kf             *buildFiles
		ix             *kallsyms.Index
		m              *klp.Module
		ft             *ftraceJSON
		rep            *pipeline.Report
		t0, t1, t2, t3 time.Time
		st             stage
	)
	err := withDeadline(cmd.Context(), o.maxTime, &st, func(ctx context.Context) error {
		var err error
		st.set("reading the kernel's files")
		if kf, err = o.kernel.files(a, cmd, o.modules, o.symvers, o.magic); err != nil {
			return err
		}
		if kf.config != nil {
			po = kf.config.Apply(po)
		}
		t0 = time.Now()
		st.set("reading the kernel's symbols (" + a.kallsymsPath() + ")")
		if ix, err = a.openIndex(); err != nil {
			return err
		}
		t1 = time.Now()
		st.set("reading " + path)
		if m, err = openModule(a, path, klp.Parse); err != nil {
			return err
		}
		t2 = time.Now()
		ix.Expect(m.NumRelocs() + len(m.Funcs)) // before the first lookup
		// A module for another architecture says so before its call sites
		// are read against the kernel's symbols.
		if err := pipeline.CheckArch(m.Arch, ix); err != nil {
			return &exitError{exitUsage, err}
		}
		po.Kernel, po.CFIShadow = a.generationOf(ix, kf), o.cfi
		st.set("reading the ftrace call sites")
		if po.Ftrace, ft, err = openFtrace(a, o.ftrace, kf.kernel, ix); err != nil {
			return err
		}
		po.Modules, po.Symvers, po.Vermagic = kf.modules, kf.symvers, kf.magic
		if o.link {
			po.Link = true
			if po.LinkOptions.Base, err = parseAddr("--base", o.base); err != nil {
				return err
			}
		}
		st.set("resolving " + path)
		rep, err = pipeline.Run(m, ix, po)
		if errors.Is(err, modplt.ErrUnsupportedArch) {
			return &exitError{exitUsage, fmt.Errorf("%w (without --link the livepatch relocations and patched functions resolve all the same)", err)}
		} else if err != nil {
			return &exitError{exitUsage, err}
		}
		t3 = time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	res := rep.Resolution
	// Everything the check found, in the loader's order: the verdict, the
	// JSON's diagnostics and the text's errors come from it.
	ds := rep.Diagnostics(o.strict)
	ok := !hasError(ds)
	if o.stats {
		fmt.Fprintf(a.stderr, "stats: read+index kallsyms %v (%s), read module %v (%s), resolve %v, link %v, total %v\n",
			t1.Sub(t0).Round(time.Microsecond), count(ix.Len(), "symbol", "symbols"), t2.Sub(t1).Round(time.Microsecond), count(m.NumRelocs(), "relocation", "relocations"),
			rep.ResolveTime.Round(time.Microsecond), rep.LinkTime.Round(time.Microsecond), t3.Sub(t0).Round(time.Microsecond))
	}
	if o.out != "" && rep.Image != nil {
		if err := a.temps.Write(o.out, rep.Image.WriteELF); err != nil {
			return &exitError{exitUsage, err}
		}
	}
	if o.format == "json" {
		j := jsonResolution(res)
		j.Kernel = kernelJSON(&o.kernel, kf.kernel)
		j.KernelRules, j.KallsymsImage = rulesOf(rep.Kernel), imageOf(ix)
		j.Ftrace = ft
		j.Summary.OK = ok
		j.Diagnostics = diagnosticsJSON(ds)
		if po.Modules != nil {
			u := append([]string{}, rep.Unchecked...)
			j.Unchecked, j.OtherBuild = &u, rep.OtherBuild
		}
		if rep.Image == nil {
			j.LoaderUnresolved = append([]string{}, rep.LoaderMissing...)
			j.LoaderNotExported = notExportedList(rep.LoaderMissing, rep.NotExported)
			j.KallsymsCodeOnly = rep.CodeOnly
			j.UnloadedDepends = rep.UnloadedDepends
			j.Dependencies = dependenciesJSON(rep.Dependencies)
		} else {
			lj := linkReport(rep.Image, rep.Explanation)
			lj.Dependencies = dependenciesJSON(rep.Dependencies)
			j.Link = &lj
			j.CFI, j.CFINote = cfiJSON(rep.CFI), rep.CFINote
		}
		j.AlreadyLoaded = rep.AlreadyLoaded
		j.Modversions = versionsJSON(rep.Versions)
		j.Vermagic = vermagicJSON(rep.Vermagic, kf.magicFrom)
		err = writeJSON(a, ok, j)
	} else {
		writeResolution(a.stdout, rep, ds, symbolsLine(a.kallsymsPath(), ix), kernelLine(&o.kernel, kf.kernel), ft.line())
		if rep.Image != nil {
			writeLinkSummary(a.stdout, rep, o.out)
		}
		writeVersions(a.stdout, rep.Versions)
		writeVermagic(a.stdout, rep.Vermagic, kf.magicFrom)
		writeVerdict(a.stdout, rep, ok)
	}
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{exitFailed, errReported}
	}
	return nil
}

// writeLinkSummary is the link and cfi part of the text report.
func writeLinkSummary(w io.Writer, rep *pipeline.Report, out string) {
	img, c := rep.Image, rep.CFI
	writeDependencies(w, rep.Dependencies)
	fmt.Fprintf(w, "link: %s applied, %d failed, %s", count(img.Relocs, "relocation", "relocations"), len(img.Errors), count(len(img.Unresolved), "unresolved symbol", "unresolved symbols"))
	switch {
	case img.Module.Arch == "s390" && img.GOTMax+img.PLTCoreMax > 0:
		fmt.Fprintf(w, "; GOT %d/%d, PLT %d/%d", img.GOTUsed, img.GOTMax, img.PLTCoreUsed, img.PLTCoreMax)
	case img.Module.Arch == "ppc64":
		fmt.Fprintf(w, "; stubs %d/%d", img.PLTCoreUsed, img.PLTCoreMax)
	case img.PLTCoreMax+img.PLTInitMax > 0:
		fmt.Fprintf(w, "; PLT .plt %d/%d, .init.plt %d/%d", img.PLTCoreUsed, img.PLTCoreMax, img.PLTInitUsed, img.PLTInitMax)
	case img.GOTMax > 0:
		fmt.Fprintf(w, "; GOT %d/%d", img.GOTUsed, img.GOTMax)
	}
	if img.PageSize != modplt.DefaultPageSize {
		fmt.Fprintf(w, "; %d KiB pages", img.PageSize>>10)
	}
	fmt.Fprintln(w)
	for _, u := range img.Unresolved {
		fmt.Fprintf(w, "  %s\n", unresolvedLine(u, rep.NotExported))
	}
	for _, n := range whyNotes(rep.Explanation, rep.Resolution.Source) {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for i, e := range img.Errors {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more (--format json lists them all)\n", len(img.Errors)-i)
			break
		}
		fmt.Fprintf(w, "  link error: %v\n", e)
		if e.Kernel != "" {
			fmt.Fprintf(w, "    kernel: %s\n", e.Kernel)
		}
	}
	if rep.CFINote != "" {
		fmt.Fprintf(w, "cfi: %s; --cfi-shadow records it anyway\n", rep.CFINote)
	}
	if c != nil {
		how := "start of text (no __cfi_check)"
		if c.CheckFnSymbol {
			how = "__cfi_check"
		}
		fmt.Fprintf(w, "cfi: text %s-%s, %s in the shadow, check function %s (%s)", hex(c.TextStart), hex(c.TextEnd), count(c.Pages, "page", "pages"), hex(c.CheckFn), how)
		if c.Reason != "" {
			fmt.Fprintf(w, "; %s", c.Reason)
		}
		fmt.Fprintf(w, "; %s in data, %d on no known page\n", count(c.Pointers, "function pointer", "function pointers"), len(c.Unknown))
		for _, u := range c.Unknown {
			fmt.Fprintf(w, "  cfi: function pointer on no known page: %s\n", u)
		}
	}
	if out != "" {
		fmt.Fprintf(w, "wrote %s\n", out)
	}
}

type cfiOut struct {
	TextStart     string   `json:"text_start"`
	TextEnd       string   `json:"text_end"`
	CheckFn       string   `json:"check_function"`
	CheckFnSymbol bool     `json:"check_function_is_cfi_check"`
	Pages         int      `json:"pages"`
	Shadowed      bool     `json:"shadowed"`
	Reason        string   `json:"reason,omitempty"`
	Pointers      int      `json:"function_pointers"`
	Unknown       []string `json:"unknown_pointers"`
}

func cfiJSON(c *pipeline.CFIReport) *cfiOut {
	if c == nil {
		return nil
	}
	o := &cfiOut{hex(c.TextStart), hex(c.TextEnd), hex(c.CheckFn), c.CheckFnSymbol, c.Pages, c.Shadowed, c.Reason, c.Pointers, c.Unknown}
	if o.Unknown == nil {
		o.Unknown = []string{}
	}
	return o
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

type jsonReloc struct {
	Section string  `json:"section"`
	Offset  string  `json:"offset"`
	Type    string  `json:"type"`
	Symbol  string  `json:"symbol"`
	Object  string  `json:"object"`
	Name    string  `json:"name"`
	Sympos  uint64  `json:"sympos"`
	Address *string `json:"address"`
	Status  string  `json:"status"`
	// InitMemory: resolved to vmlinux's init memory, freed after boot
	// (klp.Resolution.InitRefs).
	InitMemory bool    `json:"init_memory,omitempty"`
	Error      *string `json:"error"`
	Kind       string  `json:"kind,omitempty"` // klp.RelocError.Kind, on errors
	Help       *string `json:"help,omitempty"`
}

type jsonFunc struct {
	Name   string `json:"name"`
	Object string `json:"object"`
	Sympos uint64 `json:"sympos"`
	// Declared is where the module declares it: section+offset.
	Declared string  `json:"declared"`
	Address  *string `json:"address"`
	Status   string  `json:"status"`
	Error    *string `json:"error"`
	Kind     string  `json:"kind,omitempty"`
	Help     *string `json:"help,omitempty"`
}

type jsonOut struct {
	Module    string `json:"module"`
	Name      string `json:"name,omitempty"`
	Arch      string `json:"arch"`
	BigEndian bool   `json:"big_endian,omitempty"`
	Format    string `json:"format"`
	Kallsyms  string `json:"kallsyms"`
	// KallsymsImage: the kernel image whose own kallsyms table the
	// symbols are.
	KallsymsImage *imageJSON `json:"kallsyms_image,omitempty"`
	// KernelRules: the generation whose rules judged the kernel.
	KernelRules *rulesJSON `json:"kernel_rules"`
	// Kernel (--root): the installed kernel the report is of.
	Kernel *installedJSON `json:"kernel,omitempty"`
	// Ftrace: the ftrace call sites the patched functions were checked
	// against (--ftrace, or the --root kernel's).
	Ftrace      *ftraceJSON `json:"ftrace,omitempty"`
	Relocations []jsonReloc `json:"relocations"`
	// FuncSource says where the module declares the functions it
	// patches (klp.FuncSource); Funcs are they, looked up.
	FuncSource string `json:"func_source,omitempty"`
	// LoadError: the kernel refuses the module as a whole
	// (klp.Resolution.LoadErr).
	LoadError *problemJSON `json:"load_error,omitempty"`
	Funcs     []jsonFunc   `json:"funcs,omitempty"`
	Deferred  []string     `json:"deferred_objects"`
	// Unanswered: modules whose symbols relocations applied at the
	// patch's load use, where the symbol list lists no module
	// (klp.Resolution.Unanswered).
	Unanswered []string `json:"unanswered_objects,omitempty"`
	// BuiltIn: the deferred objects that look built into the kernel
	// (klp.BuiltIn), whose relocations would never apply.
	BuiltIn []builtInJSON `json:"builtin_objects,omitempty"`
	// Checked (with --modules): the deferred objects checked against
	// their module's file (klp.Resolution.Checked); Unchecked: those with
	// no file there.
	Checked []checkedJSON `json:"checked_objects,omitempty"`
	// (a pointer: [] with --modules, left out without.) OtherBuild: the
	// loaded modules whose file there is another build, not used.
	Unchecked  *[]string `json:"unchecked_objects,omitempty"`
	OtherBuild []string  `json:"other_build_modules,omitempty"`
	Warnings   []string  `json:"warnings,omitempty"`
	// LoaderUnresolved (without --link): the ordinary undefined symbols
	// the module loader would not find; LoaderNotExported: those of them
	// the kernel has but does not export to the module.
	LoaderUnresolved  []string          `json:"loader_unresolved,omitempty"`
	LoaderNotExported []notExportedJSON `json:"loader_not_exported,omitempty"`
	// AlreadyLoaded: a module of the patch's name is loaded
	// (pipeline.Report.AlreadyLoaded).
	AlreadyLoaded bool `json:"already_loaded,omitempty"`
	// KallsymsCodeOnly (without --link; with it, link's): the symbol list
	// has no data symbols, which may be why some did not resolve.
	KallsymsCodeOnly bool `json:"kallsyms_code_only,omitempty"`
	// UnloadedDepends (without --link; with it, link's): modules the
	// module depends on (.modinfo depends=) that the symbol list does not
	// have, which may be why some did not resolve.
	UnloadedDepends []string `json:"unloaded_depends,omitempty"`
	// Dependencies (without --link, with --modules; with it, link's): the
	// modules the module depends on that the symbol list does not have,
	// laid out from their files as modprobe loads them, whose exports
	// the loader will then find.
	Dependencies []dependencyJSON `json:"dependencies,omitempty"`
	Link         *linkJSON        `json:"link,omitempty"`
	CFI          *cfiOut          `json:"cfi,omitempty"`
	// CFINote (with --link): why the module was not recorded in a CFI
	// shadow (the kernel keeps none).
	CFINote string `json:"cfi_note,omitempty"`
	// Modversions (with --symvers): the module's symbol versions checked.
	Modversions *versionsOut `json:"modversions,omitempty"`
	// Vermagic (with --vermagic, or a vermagic in the --modules files):
	// the module's vermagic checked against the kernel's.
	Vermagic *vermagicOut `json:"vermagic,omitempty"`
	// Diagnostics: everything the check found, once each, errors first
	// in the loader's order (pipeline.Report.Diagnostics).
	Diagnostics []diagnosticJSON `json:"diagnostics"`
	Summary     struct {
		// OK is the verdict the exit status gives (0 when true): every
		// relocation resolved (deferred ones too, without --strict), with
		// --link the module linked, and with --symvers the loader takes
		// its symbol versions.
		OK       bool `json:"ok"`
		Resolved int  `json:"resolved"`
		Deferred int  `json:"deferred"`
		Errors   int  `json:"errors"`
		// The patched functions' counts.
		FuncResolved int `json:"func_resolved"`
		FuncDeferred int `json:"func_deferred"`
		FuncErrors   int `json:"func_errors"`
	} `json:"summary"`
}

func jsonResolution(res *klp.Resolution) *jsonOut {
	m := res.Module
	out := &jsonOut{Module: m.Path, Name: m.Name, Arch: m.Arch, BigEndian: elfobj.BigEndian(m.ByteOrder), Format: string(m.Format), Kallsyms: res.Source,
		Relocations: []jsonReloc{}, Deferred: res.DeferredObjects, Unanswered: res.Unanswered, BuiltIn: builtInList(res.BuiltIn), Warnings: m.Warnings}
	if out.Deferred == nil {
		out.Deferred = []string{}
	}
	initRef := map[int]bool{}
	for _, i := range res.InitRefs {
		initRef[i] = true
	}
	for i, r := range res.Results {
		j := jsonReloc{InitMemory: initRef[i], Section: r.Section, Offset: hex(r.Offset), Type: r.Type, Symbol: r.Symbol, Object: r.Object,
			Name: r.Name, Sympos: r.Pos, Status: string(r.Status)}
		if r.Status == klp.Resolved {
			s := hex(r.Address)
			j.Address = &s
		}
		if r.Err != nil {
			j.Error, j.Kind, j.Help = errFields(r.Err)
		}
		out.Relocations = append(out.Relocations, j)
	}
	for _, c := range res.Checked {
		out.Checked = append(out.Checked, checkedJSON{c.Object, c.Path, c.OK, c.Failed})
	}
	out.FuncSource = string(m.FuncSource)
	if e := res.LoadErr; e != nil {
		out.LoadError = problemOf(e)
	}
	for _, f := range res.Funcs {
		j := jsonFunc{Name: f.Name, Object: f.Object, Sympos: f.Pos, Declared: fmt.Sprintf("%s+%#x", f.Section, f.Offset), Status: string(f.Status)}
		if f.Status == klp.Resolved {
			s := hex(f.Address)
			j.Address = &s
		}
		if f.Err != nil {
			j.Error, j.Kind, j.Help = errFields(f.Err)
		}
		out.Funcs = append(out.Funcs, j)
	}
	out.Summary.Resolved, out.Summary.Deferred, out.Summary.Errors = res.Resolved, res.Deferred, res.Errors
	out.Summary.FuncResolved, out.Summary.FuncDeferred, out.Summary.FuncErrors = res.FuncResolved, res.FuncDeferred, res.FuncErrors
	return out
}

// errFields are a failure's error, kind and help (nil when empty) as
// the main job's JSON entries carry them.
func errFields(e *klp.RelocError) (msg *string, kind string, help *string) {
	m, h := e.Kernel, e.Hint
	if h != "" {
		help = &h
	}
	return &m, e.Kind(), help
}

// deferredWhat says what waits for the deferred object o: its
// relocations, its patched functions, or both.
func deferredWhat(res *klp.Resolution, o string) string {
	secObj := map[string]string{".kpatch.dynrelas": ""} // a dynrela's object is its own
	for _, s := range res.Module.Sections {
		secObj[s.Name] = s.Object
	}
	relocs := slices.ContainsFunc(res.Results, func(r klp.Result) bool {
		obj, ok := secObj[r.Section]
		if !ok || obj == "" {
			obj = r.Object
		}
		return r.Status == klp.Deferred && obj == o
	})
	funcs := slices.ContainsFunc(res.Funcs, func(f klp.FuncResult) bool { return f.Status == klp.Deferred && f.Object == o })
	switch {
	case relocs && funcs:
		return "its relocations are applied and its functions patched"
	case funcs:
		return "its functions are patched"
	}
	return "its relocations are applied"
}

// checkedWhat says how a deferred object's check went.
func checkedWhat(c klp.CheckedObject) string {
	n := c.OK + c.Failed
	if c.Failed == 0 {
		return fmt.Sprintf("%s, whichever of %s and the patch loads first", pick(n, "it resolves", fmt.Sprintf("all %d resolve", n)), c.Object)
	}
	return fmt.Sprintf("%d of %d will fail (errors below)", c.Failed, n)
}

// checkedJSON is a klp.CheckedObject.
type checkedJSON struct {
	Object string `json:"object"`
	Path   string `json:"path"`
	OK     int    `json:"ok"`
	Failed int    `json:"failed"`
}

// addModulesFlag is --modules, for the commands that resolve.
func addModulesFlag(c *cobra.Command, paths *[]string) {
	c.Flags().StringArrayVar(paths, "modules", nil, "module files or folders of them (/lib/modules/VERSION); repeatable")
}

// findModules indexes the --modules paths (nil when none).
func findModules(ctx context.Context, paths []string) (*pipeline.ModuleFiles, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	mf, err := pipeline.FindModules(ctx, paths)
	if err != nil {
		return nil, &exitError{exitUsage, fmt.Errorf("--modules: %w", err)}
	}
	return mf, nil
}

// builtInOf returns res's klp.BuiltIn for the deferred object o, if o
// looks built in.
func builtInOf(res *klp.Resolution, o string) (klp.BuiltIn, bool) {
	for _, b := range res.BuiltIn {
		if b.Object == o {
			return b, true
		}
	}
	return klp.BuiltIn{}, false
}

// builtInNote says that a deferred object looks built into the kernel
// (klp.BuiltIn), and what follows: livepatch waits for it forever.
func builtInNote(b klp.BuiltIn) string {
	names := b.Names
	more := ""
	if len(names) > 3 {
		names, more = names[:3], fmt.Sprintf(" and %d more", len(b.Names)-3)
	}
	return fmt.Sprintf("module %s looks built into this kernel (vmlinux has %s%s, which the patch names in %s): a built-in module never loads, so livepatch would never apply %s's relocations nor patch its functions here, and insmod says nothing; for this kernel, build the patch with them as vmlinux's symbols",
		b.Object, strings.Join(names, ", "), more, b.Object, b.Object)
}

// builtInJSON is a klp.BuiltIn in the JSON reports.
type builtInJSON struct {
	Object string   `json:"object"`
	Names  []string `json:"names"`
}

func builtInList(bs []klp.BuiltIn) []builtInJSON {
	var out []builtInJSON
	for _, b := range bs {
		out = append(out, builtInJSON{b.Object, b.Names})
	}
	return out
}

// codeOnlyNote says why data symbols may be unresolved: the symbol list
// has none (kallsyms.Index.ListsData).
func codeOnlyNote(source string) string {
	return "(" + source + " lists code symbols only, as a kallsyms without CONFIG_KALLSYMS_ALL does: data symbols cannot resolve against it; the System.map of the same build lists them)"
}

// dependsNote says why ordinary symbols may be unresolved: modules the
// module depends on (pipeline.Report.UnloadedDepends) are not in source.
func dependsNote(deps []string, source string, noModules bool) string {
	which := source + " does not have"
	if noModules {
		which = source + " does not have (it lists no module at all, as a System.map never does)"
	}
	return fmt.Sprintf("(the module depends on %s (.modinfo depends=), which %s: %s not there to resolve against; modprobe loads a module's dependencies first, insmod does not)",
		strings.Join(deps, ", "), which, pick(len(deps), "its exports are", "their exports are"))
}

// whyNotes are the notes on why symbols may be unresolved against source
// (codeOnlyNote, dependsNote), for the text reports.
func whyNotes(why pipeline.Explanation, source string) []string {
	var out []string
	if why.CodeOnly {
		out = append(out, codeOnlyNote(source))
	}
	if len(why.UnloadedDepends) > 0 {
		out = append(out, dependsNote(why.UnloadedDepends, source, why.NoModules))
	}
	return out
}

// loaderNote lists the ordinary symbols insmod would refuse (the main
// job without --link; check's JUnit report), each with why when the
// kernel has it (hidden).
func loaderNote(missing []string, hidden map[string]pipeline.Hidden) string {
	var b strings.Builder
	fmt.Fprintf(&b, "note: insmod would refuse %s (\"Unknown symbol\"); --link checks the whole module:", count(len(missing), "ordinary symbol", "ordinary symbols"))
	for _, u := range missing {
		b.WriteString("\n  " + unresolvedLine(u, hidden))
	}
	return b.String()
}

// writeResolution prints the text report: the module, the --root
// kernel's line (kernel: kernelLine's, or ""), the kernel symbols (given:
// the --kallsyms path), per section what resolved, deferred objects, and
// every failure with the kernel's message and the help (the totals are
// writeVerdict's).
func writeResolution(w io.Writer, rep *pipeline.Report, ds []diag.Diagnostic, symbols, kernel, ftraceLine string) {
	res := rep.Resolution
	m := res.Module
	name := m.Name
	if name == "" {
		name = "?"
	}
	fmt.Fprintf(w, "module %s (name %s): format %s, arch %s, livepatch=%v\n", m.Path, name, m.Format, archText(m.Arch, elfobj.BigEndian(m.ByteOrder)), yesNo(m.Livepatch))
	if kernel != "" {
		fmt.Fprintln(w, kernel)
	}
	fmt.Fprintf(w, "kernel symbols: %s\n", symbols)
	rulesLines(w, rep.Kernel)
	if ftraceLine != "" {
		fmt.Fprintln(w, ftraceLine)
	}
	for _, warn := range m.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	type tally struct{ ok, def, bad int }
	var order []string
	per := map[string]*tally{}
	for _, r := range res.Results {
		t := per[r.Section]
		if t == nil {
			t = &tally{}
			per[r.Section] = t
			order = append(order, r.Section)
		}
		switch r.Status {
		case klp.Resolved:
			t.ok++
		case klp.Deferred:
			t.def++
		default:
			t.bad++
		}
	}
	var funcsLabel string
	if len(res.Funcs) > 0 {
		// The patched functions get a line of their own, after the
		// sections.
		funcsLabel = fmt.Sprintf("patched functions (%s)", m.FuncSource)
		order = append(order, funcsLabel)
		per[funcsLabel] = &tally{res.FuncResolved, res.FuncDeferred, res.FuncErrors}
	}
	width := 0
	for _, s := range order {
		width = max(width, len(s))
	}
	for _, s := range order {
		t := per[s]
		var parts []string
		if t.ok > 0 {
			parts = append(parts, fmt.Sprintf("%d resolved", t.ok))
		}
		if t.def > 0 {
			parts = append(parts, fmt.Sprintf("%d deferred", t.def))
		}
		if t.bad > 0 {
			parts = append(parts, fmt.Sprintf("%d FAILED", t.bad))
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, s, strings.Join(parts, ", "))
	}
	for _, o := range res.DeferredObjects {
		if b, ok := builtInOf(res, o); ok {
			fmt.Fprintf(w, "warning: %s\n", builtInNote(b))
			continue
		}
		fmt.Fprintf(w, "deferred: module %s is not loaded in this kernel; %s when it loads\n", o, deferredWhat(res, o))
		if i := slices.IndexFunc(res.Checked, func(c klp.CheckedObject) bool { return c.Object == o }); i >= 0 {
			fmt.Fprintf(w, "  checked against %s: %s\n", res.Checked[i].Path, checkedWhat(res.Checked[i]))
		} else if slices.Contains(rep.Unchecked, o) {
			fmt.Fprintf(w, "  unchecked: --modules has no %s.ko\n", o)
		}
	}
	for _, o := range res.Unanswered {
		fmt.Fprintf(w, "unanswered: the kernel symbols list no module (a System.map or a kernel image): relocations applied when the patch loads use module %s's symbols, and resolve only if %s is loaded then; --modules checks them against its file\n", o, o)
	}
	for _, o := range rep.OtherBuild {
		fmt.Fprintf(w, "note: the file --modules has for module %s is another build than the loaded one (its symbols differ from the kernel's lines for %s): its patched functions were not checked against it\n", o, o)
	}
	if n := len(res.InitRefs); n > 0 {
		fmt.Fprintf(w, "warning: %s to vmlinux's init memory, which the kernel frees after boot: the patched code would use freed memory\n", count(n, "relocation refers", "relocations refer"))
		for k, i := range res.InitRefs {
			if k == 5 {
				fmt.Fprintf(w, "  ... and %d more (--format json lists them: init_memory)\n", n-k)
				break
			}
			r := res.Results[i]
			fmt.Fprintf(w, "  %s+%s %s at %s\n", r.Section, hex(r.Offset), r.Symbol, hex(r.Address))
		}
	}
	writeResolveErrors(w, rep, ds)
	if rep.Image == nil {
		// (with --link, writeLinkSummary's)
		writeDependencies(w, rep.Dependencies)
	}
	if len(rep.LoaderMissing) > 0 {
		fmt.Fprintln(w, loaderNote(rep.LoaderMissing, rep.NotExported))
		for _, n := range whyNotes(rep.Explanation, res.Source) {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if rep.AlreadyLoaded {
		name := res.Module.KernelName()
		fmt.Fprintf(w, "note: a module named %s is loaded in this kernel already: insmod of this file fails (\"File exists\") until it is removed (a livepatch is disabled first: echo 0 > /sys/kernel/livepatch/%s/enabled, then rmmod %s); a patch loaded beside it needs another name\n", name, name, name)
	}
}

// writeResolveErrors prints livepatch's errors among ds (rep's
// Diagnostics), in their order: the kernel's refusal of the module, then
// each relocation and each patched function that fails, with the
// kernel's message and the help. (The symbol versions, the vermagic and
// the link have sections of their own.)
func writeResolveErrors(w io.Writer, rep *pipeline.Report, ds []diag.Diagnostic) {
	res := rep.Resolution
	// Each failure's relocation or function, found by its error.
	relocOf, funcOf := map[*klp.RelocError]int{}, map[*klp.RelocError]int{}
	for i := range res.Results {
		if e := res.Results[i].Err; e != nil {
			relocOf[e] = i
		}
	}
	for i := range res.Funcs {
		if e := res.Funcs[i].Err; e != nil {
			funcOf[e] = i
		}
	}
	for _, d := range ds {
		var e *klp.RelocError
		if d.Severity != diag.Error || !errors.As(d.Err, &e) {
			continue
		}
		if e == res.LoadErr {
			writeRefusal(w, e)
		} else if i, ok := funcOf[e]; ok {
			f := res.Funcs[i]
			fmt.Fprintf(w, "error: patched function %s:%s,%d (declared at %s+%s)\n", f.Object, f.Name, f.Pos, f.Section, hex(f.Offset))
			writeErrLines(w, e)
		} else if i, ok := relocOf[e]; ok {
			r := res.Results[i]
			fmt.Fprintf(w, "error: %s+%s %s %s\n", r.Section, hex(r.Offset), r.Type, r.Symbol)
			writeErrLines(w, e)
		}
	}
}

// writeRefusal is the loader's refusal of the whole module
// (klp.Resolution.LoadErr) in the text reports.
func writeRefusal(w io.Writer, e *klp.RelocError) {
	if errors.Is(e, klp.ErrNotLivepatch) {
		fmt.Fprintf(w, "error: nothing for livepatch in the module\n  kernel: %s\n  help: %s\n", e.Kernel, e.Hint)
		return
	}
	fmt.Fprintf(w, "error: the kernel refuses the module\n  kernel: %s\n  help: %s\n", e.Kernel, e.Hint)
}

// writeErrLines are a failure's kernel message and help.
func writeErrLines(w io.Writer, e *klp.RelocError) {
	// A legacy kpatch module's dynrelas are the kpatch core module's
	// (its pr_fmt is "kpatch: "); the rest livepatch's or the loader's.
	who := "livepatch"
	if e.Section == ".kpatch.dynrelas" {
		who = "kpatch"
	}
	for _, line := range strings.Split(e.Kernel, "\n") {
		fmt.Fprintf(w, "  %s: %s\n", who, line)
	}
	if e.Hint != "" {
		fmt.Fprintf(w, "  help: %s\n", e.Hint)
	}
}

// writeVerdict is the text report's last line: OK or FAILED as the exit
// status says (the link's outcome included, with --link), then the
// relocations' counts, and why the module does not link if it does not.
func writeVerdict(w io.Writer, rep *pipeline.Report, ok bool) {
	res := rep.Resolution
	verdict := "OK"
	if !ok {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s: %s: %d resolved, %d deferred, %s", verdict, count(len(res.Results), "relocation", "relocations"), res.Resolved, res.Deferred, count(res.Errors, "error", "errors"))
	if len(res.Funcs) > 0 {
		fmt.Fprintf(w, "; %s: %d resolved, %d deferred, %s", count(len(res.Funcs), "patched function", "patched functions"), res.FuncResolved, res.FuncDeferred, count(res.FuncErrors, "error", "errors"))
	}
	if res.LoadErr != nil {
		fmt.Fprintf(w, "; %v", res.LoadErr.Err)
	}
	if img := rep.Image; img != nil && !img.Linked() {
		fmt.Fprintf(w, "; the module does not link: %d failed, %s", len(img.Errors), count(len(img.Unresolved), "unresolved symbol", "unresolved symbols"))
	}
	fmt.Fprintln(w, refusals(rep.Versions, rep.Vermagic))
}

func yesNo(b bool) string {
	if b {
		return "Y"
	}
	return "N"
}

func newConvertCmd(a *app) *cobra.Command {
	var out, from string
	var symbols []string
	c := &cobra.Command{
		Use:   "convert IN.o -o OUT.ko [--symbol [obj:]name[,pos]...]",
		Short: "Make a livepatch module of an object or of kpatch-build's output",
		Example: `  klpresolve convert fix.o -o fix.ko \
      --kallsyms System.map-6.1.0-57-amd64 \
      --symbol vfs_read --symbol ext4:ext4_iget --symbol type_show,3 \
      --symbol 'nfs:do_open@0xffffffffc0a01230'
  klpresolve convert fix.o -o fix.ko --symbols-from symbols.txt
  klpresolve convert output.o -o livepatch-fix.o`,
		Long: `Moves every relocation against the given symbols into
.klp.rela.<obj>.<sec> sections, and renames the symbols
.klp.sym.<obj>.<name>,<pos> with st_shndx SHN_LIVEPATCH.

A symbol given without ,pos gets its position from --kallsyms: 0 when the
name is unique in its object. An ambiguous name needs a position (the error
lists them), or name@ADDRESS to pick the occurrence at that address.

kpatch-build's intermediate object (output.o, with .kpatch.relocations)
names its own symbols and positions: convert it without --symbol. The
result has what kpatch-build's create-klp-module writes.`,
		Args: needArgs(1, 1, "one relocatable object, OBJ.o"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{exitUsage, errors.New("convert needs -o OUT.ko")}
			}
			if err := a.oneStdin(args[0]); err != nil {
				return err
			}
			if from != "" {
				f, err := os.Open(from)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				items, err := readList(from, f)
				f.Close()
				if err != nil {
					return &exitError{exitUsage, err}
				}
				symbols = append(symbols, items...)
			}
			name, in, err := a.readModule(args[0])
			if err != nil {
				return err
			}
			if m, err := klp.Parse(name, in); err == nil && m.Kpatch != nil && m.Kpatch.Intermediate {
				if len(symbols) > 0 {
					return &exitError{exitUsage, fmt.Errorf("%s is kpatch-build's intermediate object: its livepatch symbols are in .kpatch.symbols; convert it without --symbol", name)}
				}
				return a.convertKpatch(name, in, out, len(m.Kpatch.Relocations))
			}
			if len(symbols) == 0 {
				return &exitError{exitUsage, errors.New("convert needs --symbol or --symbols-from (or kpatch-build's intermediate output.o, which names its own)")}
			}
			var ix *kallsyms.Index
			var syms []klp.ConvertSymbol
			for _, given := range symbols {
				spec, at, hasAt := given, "", false
				if i := strings.LastIndex(given, "@"); i >= 0 {
					spec, at, hasAt = given[:i], given[i+1:], true
				}
				s, err := kallsyms.ParseSpec(spec)
				var se *kallsyms.SpecError
				if hasAt && errors.As(err, &se) {
					se.Spec = given // name the whole argument, address included
				}
				if err != nil {
					return &exitError{exitUsage, err}
				}
				var addr uint64
				switch {
				case hasAt && at == "":
					return &exitError{exitUsage, fmt.Errorf("symbol %q: no address after @", given)}
				case hasAt && strings.Contains(spec, ","):
					return &exitError{exitUsage, fmt.Errorf("symbol %q: both a position and an address; give one", given)}
				case hasAt:
					if addr, err = parseHex(at); err != nil {
						return &exitError{exitUsage, fmt.Errorf("%s: %w", s.Name, err)}
					}
				}
				pos := s.Pos
				if !strings.Contains(spec, ",") {
					if ix == nil {
						if ix, err = a.openIndex(); err != nil {
							return err
						}
					}
					if pos, err = computePos(ix, s, addr, hasAt); err != nil {
						return &exitError{exitFailed, err}
					}
				}
				syms = append(syms, klp.ConvertSymbol{Object: s.Object, Name: s.Name, Pos: pos})
			}
			if ix != nil {
				// Positions counted in another architecture's kernel.
				if f, err := elfobj.ParseHeader(name, in); err == nil {
					if err := pipeline.CheckArch(elfobj.ArchName(f.Machine), ix); err != nil {
						return &exitError{exitUsage, err}
					}
				}
			}
			b, err := klp.Convert(name, in, syms)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			said, err := a.writeOutput(out, func(w io.Writer) error { _, err := w.Write(b); return err })
			if err != nil {
				return err
			}
			distinct := map[string]bool{} // a symbol given twice is converted once
			for _, s := range syms {
				distinct[s.Name] = true
			}
			fmt.Fprintf(said, "wrote %s: %s\n", out, count(len(distinct), "livepatch symbol", "livepatch symbols"))
			// An object compiled alone: kbuild has still to link it
			// with its NAME.mod.o for the loader to take it.
			if m, err := klp.Parse(out, b); err == nil && m.Refusal(klp.ErrNoModuleStruct) != nil {
				fmt.Fprintf(said, "note: it has no .gnu.linkonce.this_module: the module loader refuses it (%q) until kbuild links it with its %s.mod.o\n", m.Refusal(klp.ErrNoModuleStruct).Kernel, m.KernelName())
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "livepatch module to write")
	c.Flags().StringArrayVar(&symbols, "symbol", nil, "symbol to convert: [obj:]name[,pos] or [obj:]name@ADDRESS (repeatable)")
	c.Flags().StringVar(&from, "symbols-from", "", "file of symbol specs, separated by blanks or line ends (# starts a comment line)")
	return c
}

// convertKpatch is convert on kpatch-build's intermediate object: what
// create-klp-module makes of it.
func (a *app) convertKpatch(name string, in []byte, out string, nrel int) error {
	b, err := klp.ConvertKpatch(name, in)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	said, err := a.writeOutput(out, func(w io.Writer) error { _, err := w.Write(b); return err })
	if err != nil {
		return err
	}
	m, err := klp.Parse(out, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(said, "wrote %s: %s in %s, as kpatch-build's create-klp-module writes them\n", out,
		count(nrel, "livepatch relocation", "livepatch relocations"), count(len(m.Sections), ".klp.rela section", ".klp.rela sections"))
	if m.Refusal(klp.ErrNoModuleStruct) == nil && !m.HasSection(".gnu.linkonce.this_module") {
		fmt.Fprintf(said, "note: it is no module yet: kpatch-build links output.o with its livepatch hook (kmod/patch) into the patch module, then converts that module; klpresolve convert does both alike\n")
	}
	return nil
}

// computePos is sympos from the index: 0 when unique, else (hasAt) the
// position of the occurrence at addr.
func computePos(ix *kallsyms.Index, s kallsyms.Spec, addr uint64, hasAt bool) (uint64, error) {
	// Among the symbols the kernel's kallsyms holds, which a System.map
	// may list more of.
	c := ix.CandidatesListed(s.Object, s.Name)
	if len(c) == 0 {
		_, err := ix.LookupListed(s.Object, s.Name, 0)
		return 0, err
	}
	if hasAt {
		for _, x := range c {
			if x.Address == addr {
				if len(c) == 1 {
					return 0, nil
				}
				return uint64(x.Pos), nil
			}
		}
		return 0, fmt.Errorf("%s:%s has no occurrence at %#x", s.Object, s.Name, addr)
	}
	if len(c) == 1 {
		return 0, nil
	}
	_, err := ix.LookupListed(s.Object, s.Name, 0)
	return 0, err
}

// symbolsLine names the kernel symbols a report used: the --kallsyms path
// given, and the text a snapshot was written from (its index's source,
// which error messages name), when that is another file.
// symbolsLine names the kernel's symbols as given (--kallsyms), and
// what they are where the name does not say: a snapshot's source, or a
// kernel image's own kallsyms table.
func symbolsLine(given string, ix *kallsyms.Index) string {
	if given == "-" {
		given = "<stdin>"
	}
	addrs := "link-time addresses"
	if d := ix.Slide(); d != 0 {
		addrs = fmt.Sprintf("addresses moved by the KASLR offset %#x", d)
	}
	if img, ok := ix.Image(); ok {
		rel := ""
		if img.Release != "" {
			rel = " of Linux " + img.Release
		}
		return fmt.Sprintf("%s (the kallsyms table of a %s%s, %d symbols; %s)", given, img.Kind, rel, img.Symbols, addrs)
	}
	if source := ix.Source(); source != given {
		return given + " (snapshot of " + source + ")"
	}
	if ix.Slide() != 0 {
		return given + " (" + addrs + ")"
	}
	return given
}
