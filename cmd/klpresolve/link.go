// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
	"github.com/klpresolve/klpresolve/symvers"
)

// parseAddr reads flag's address: hexadecimal with 0x, or decimal.
func parseAddr(flag, s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, &exitError{exitUsage, fmt.Errorf("%s %q: not an address such as 0xffffffffc0000000", flag, s)}
	}
	return v, nil
}

// parsePageSize reads --page-size: bytes, or kibibytes with a K or KiB
// suffix (4K, 16K, 64K). Which sizes an architecture's kernels have is
// modplt.Link's to say (modplt.ErrBadPageSize).
func parsePageSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	u, mult := strings.ToUpper(s), uint64(1)
	for _, suffix := range []string{"KIB", "K"} {
		if strings.HasSuffix(u, suffix) {
			u, mult = strings.TrimSuffix(u, suffix), 1024
			break
		}
	}
	v, err := strconv.ParseUint(u, 10, 32)
	if err != nil || v == 0 || v*mult&(v*mult-1) != 0 {
		return 0, &exitError{exitUsage, fmt.Errorf("bad page size %q: give a power of two, e.g. 4K, 16K or 64K", s)}
	}
	return v * mult, nil
}

// checkPageSize refuses a --page-size that kernels of m's architecture
// do not have, before any kernel is read (check would otherwise fail
// every kernel for it).
func checkPageSize(m *klp.Module, size uint64) error {
	sizes := modplt.PageSizes(m.Machine)
	if sizes == nil || size == 0 || slices.Contains(sizes, size) {
		return nil // Link says what is wrong with a module it cannot link
	}
	return &exitError{exitUsage, fmt.Errorf("%w: %d: %s kernels have %v", modplt.ErrBadPageSize, size, m.Arch, sizes)}
}

// linkFlags are the flags that say how the kernel was built, for a link:
// --erratum-843419, --no-kaslr, --no-expoline and --page-size, which the main job (with
// --link), link and check (with --link) take alike.
type linkFlags struct {
	erratum, noKASLR, noExpoline bool
	pageSize                     string
}

// add registers the flags on c; prefix opens each help text.
func (f *linkFlags) add(c *cobra.Command, prefix string) {
	c.Flags().BoolVar(&f.erratum, "erratum-843419", false, prefix+"arm64: work around Cortex-A53 erratum 843419")
	addNoKASLRFlag(c, &f.noKASLR, prefix+"arm64: link as for a kernel")
	addNoExpolineFlag(c, &f.noExpoline, prefix+"link")
	c.Flags().StringVar(&f.pageSize, "page-size", "", prefix+"the kernel's page size: 4K, 16K or 64K (default: the kernel's)")
}

// given reports whether any of the flags was given.
func (f *linkFlags) given() bool { return f.erratum || f.noKASLR || f.noExpoline || f.pageSize != "" }

// apply sets what the flags say in lo; a bad --page-size is exit 2.
func (f *linkFlags) apply(lo *modplt.LinkOptions) error {
	size, err := parsePageSize(f.pageSize)
	if err != nil {
		return err
	}
	lo.Erratum843419, lo.NoRandomizeBase, lo.NoExpoline, lo.PageSize = f.erratum, f.noKASLR, f.noExpoline, size
	return nil
}

func newLinkCmd(a *app) *cobra.Command {
	var format, base, initBase, percpuBase, out, symversPath, magic, ftracePath string
	var strict bool
	var opts modplt.LinkOptions
	var lf linkFlags
	var modules []string
	var installed installedFlags
	c := &cobra.Command{
		Use:   "link MODULE.ko",
		Short: "Lay a module out and apply its relocations, as the kernel would",
		Example: `  klpresolve link fix.ko --kallsyms System.map-6.1.0-57-amd64 -o fix.linked
  klpresolve link btrfs.ko --kallsyms System.map-6.1.0-57-arm64 \
    --base 0xffff800001000000 --format json
  # The kernel as installed under a root: its map, modules and Module.symvers
  klpresolve link fix.ko --root roots/6.1.0-57 --format json`,
		Long: `Lays MODULE.ko out as the kernel's loader does (core and init; text, read-only,
ro-after-init, data), resolves its undefined symbols against the kernel's symbols
(.klp.sym livepatch symbols with livepatch's rules, the .klp.rela sections of modules
that are not loaded left for when they load; the others among the exported
symbols, as the loader's find_symbol(): vmlinux's __ksymtab_ entries, listed by a
System.map or a CONFIG_KALLSYMS_ALL kallsyms (the GPL-only ones for GPL-compatible
licenses only), and modules' upper-case type letters; a name the kernel has but does
not give the module is reported so), and applies every relocation with the architecture's
apply_relocate_add() rules and range checks, emitting PLT entries for branches out of
range (arm64, arm) and a GOT for PIE-built x86_64 modules. With -o it writes the linked
image: an ELF whose sections sit at their load addresses. With --modules, the modules
it depends on (.modinfo depends=, and theirs) that the kernel's symbols lack (a
System.map lists none) are laid out first from their files, as modprobe loads them, and
its symbols resolve among their exports too. --symvers also checks its
symbol versions against the kernel build's Module.symvers, and its vermagic against the
kernel's (--vermagic, or that of the first --modules file), as the loader will. --root
takes all of them from a kernel installed under a filesystem root, as check --root
finds them.

Exit status: 0 the module links, 1 it does not (a relocation or symbol failed, or the
loader refuses a symbol version, its vermagic or the module as a whole), 2 unusable input.`,
		Args: needArgs(1, 1, "one module, MODULE.ko"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if err := imageToFile(out); err != nil {
				return err
			}
			kf, err := installed.files(a, cmd, modules, symversPath, magic)
			if err != nil {
				return err
			}
			if opts.Base, err = parseAddr("--base", base); err != nil {
				return err
			}
			if opts.InitBase, err = parseAddr("--init-base", initBase); err != nil {
				return err
			}
			if opts.PercpuBase, err = parseAddr("--percpu-base", percpuBase); err != nil {
				return err
			}
			if err := lf.apply(&opts); err != nil {
				return err
			}
			opts = kf.linkOptions(opts)
			m, err := openModule(a, args[0], klp.Parse)
			if err != nil {
				return err
			}
			ix, err := a.openIndex()
			if err != nil {
				return err
			}
			if err := pipeline.CheckArch(m.Arch, ix); err != nil {
				return &exitError{exitUsage, err}
			}
			gen := a.generationOf(ix, kf)
			opts.Generation = gen.Generation
			// As the loader and then livepatch would: the .klp.rela sections
			// of objects that are not loaded wait for them (pipeline.Link).
			ro := klp.ResolveOptions{Config: kf.loaderConfig(), Generation: gen.Generation}
			if kf.modules != nil {
				if ro.ModuleStructSize, ro.ModuleStructFrom, err = kf.modules.ModuleStruct(); err != nil {
					return &exitError{exitUsage, fmt.Errorf("--modules: %w", err)}
				}
			}
			var ft *ftraceJSON
			if ro.Ftrace, ft, err = openFtrace(a, ftracePath, kf.kernel, ix); err != nil {
				return err
			}
			res := m.Resolve(ix, ro)
			img, deps, err := pipeline.Link(m, res, ix, opts, kf.modules)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			if out != "" {
				if err := a.temps.Write(out, img.WriteELF); err != nil {
					return &exitError{exitUsage, err}
				}
			}
			why := pipeline.Explain(m, ix, img.Unresolved)
			why.LaidOut(deps)
			versions, vermagic, err := pipeline.CheckVersions(m, kf.symvers, kf.magic, gen.Generation)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			loads := (versions == nil || versions.OK()) && (vermagic == nil || vermagic.OK()) && res.LoadErr == nil
			// klp_enable_patch() fails a patched function it cannot
			// trace (--ftrace); --strict fails what waits for a module.
			funcErrs := patchedFuncErrors(res)
			waits := strict && res.Deferred+res.FuncDeferred > 0
			loads = loads && len(funcErrs) == 0 && !waits
			if format == "json" {
				j := linkReport(img, why)
				j.Kernel = kernelJSON(&installed, kf.kernel)
				j.KernelRules = rulesOf(gen)
				j.Dependencies = dependenciesJSON(deps)
				j.Modversions = versionsJSON(versions)
				j.Vermagic = vermagicJSON(vermagic, kf.magicFrom)
				if res.LoadErr != nil {
					j.LoadError = problemOf(res.LoadErr)
				}
				j.OK = j.OK && loads
				err = writeJSON(a, j.OK, j)
			} else {
				if l := kernelLine(&installed, kf.kernel); l != "" {
					fmt.Fprintln(a.stdout, l)
				}
				rulesLines(a.stdout, gen)
				if l := ft.line(); l != "" {
					fmt.Fprintln(a.stdout, l)
				}
				for _, e := range funcErrs {
					fmt.Fprintf(a.stdout, "error: %s\n", e)
				}
				if waits {
					fmt.Fprintf(a.stdout, "error: %s wait for modules that are not loaded (--strict): %s\n",
						count(res.Deferred+res.FuncDeferred, "relocation or patched function", "relocations and patched functions"), strings.Join(res.DeferredObjects, ", "))
				}
				writeDependencies(a.stdout, deps)
				var more []string
				if len(funcErrs) > 0 {
					more = append(more, count(len(funcErrs), "patched function fails", "patched functions fail"))
				}
				if waits {
					more = append(more, "waits for modules that are not loaded (--strict)")
				}
				writeLinkText(a, img, why.NotExported, out, whyNotes(why, ix.Source()), res.LoadErr, versions, vermagic, kf.magicFrom, more...)
			}
			if err != nil {
				return err
			}
			if !img.Linked() || !loads {
				return &exitError{exitFailed, errReported}
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	c.Flags().StringVar(&base, "base", "", "core load address (default: where the module allocator starts)")
	c.Flags().StringVar(&initBase, "init-base", "", "init load address (default: past core and its vmalloc guard page)")
	c.Flags().StringVar(&percpuBase, "percpu-base", "", "address of the module's per-cpu area (default: after __per_cpu_end)")
	c.Flags().StringVarP(&out, "output", "o", "", "write the linked image (ELF, sections at their load addresses)")
	lf.add(c, "")
	c.Flags().BoolVar(&opts.ForcePLT, "force-plt", false, "debug: send every branch that has a PLT slot through the PLT")
	_ = c.Flags().MarkHidden("force-plt") // a debug knob
	c.Flags().BoolVar(&strict, "strict", false, "treat what waits for a module that is not loaded as a failure")
	c.Flags().StringVar(&ftracePath, "ftrace", "", "the kernel's ftrace call sites: vmlinux, vmlinuz or tracefs's list")
	addSymversFlag(c, &symversPath)
	addVermagicFlag(c, &magic, true)
	installed.add(c)
	c.Flags().StringArrayVar(&modules, "modules", nil, "module files or folders: dependencies are laid out first from them")
	return c
}

type linkJSON struct {
	Module string `json:"module"`
	// Kernel (--root): the installed kernel the module was linked against.
	Kernel *installedJSON `json:"kernel,omitempty"`
	// KernelRules: the generation whose rules linked it (omitted where
	// linkReport is the main job's part, which says it once).
	KernelRules *rulesJSON    `json:"kernel_rules,omitempty"`
	Arch        string        `json:"arch"`
	BigEndian   bool          `json:"big_endian,omitempty"`
	OK          bool          `json:"ok"`
	Sections    []sectionJSON `json:"sections"`
	// PageSize is the kernel's page size the module was laid out with
	// (--page-size, or an arm64 kernel's own from its symbols).
	PageSize uint64 `json:"page_size"`
	// CoreSize is the size of the module's core allocation, as
	// /proc/modules shows it once the module is loaded.
	CoreSize uint64 `json:"core_size"`
	// Percpu is the address of the module's per-cpu area (--percpu-base;
	// "" without .data..percpu).
	Percpu     string      `json:"percpu,omitempty"`
	Relocs     int         `json:"relocations_applied"`
	Errors     []errorJSON `json:"errors"`
	Unresolved []string    `json:"unresolved"`
	// NotExported: unresolved names the kernel has but does not export.
	NotExported []notExportedJSON `json:"not_exported"`
	PLTCore     [2]int            `json:"plt_core_used_max"`
	PLTInit     [2]int            `json:"plt_init_used_max"`
	GOT         [2]int            `json:"got_used_max"`
	// Modversions (link --symvers): the module's symbol versions checked;
	// OK is false when the loader refuses one.
	Modversions *versionsOut `json:"modversions,omitempty"`
	// Vermagic (link --vermagic): the module's vermagic checked; OK is
	// false when the loader refuses it.
	Vermagic *vermagicOut `json:"vermagic,omitempty"`
	// LoadError: the loader refuses the module as a whole
	// (klp.Resolution.LoadErr); OK is false.
	LoadError *problemJSON `json:"load_error,omitempty"`
	// KallsymsCodeOnly: the symbol list has no data symbols, which may be
	// why some did not resolve (pipeline.Report.CodeOnly).
	KallsymsCodeOnly bool `json:"kallsyms_code_only,omitempty"`
	// UnloadedDepends: modules the module depends on (.modinfo depends=)
	// that the symbol list does not have, which may be why some did not
	// resolve (pipeline.Report.UnloadedDepends).
	UnloadedDepends []string `json:"unloaded_depends,omitempty"`
	// Dependencies (--modules): the modules laid out before it.
	Dependencies []dependencyJSON `json:"dependencies,omitempty"`
}

type notExportedJSON struct {
	Name    string `json:"name"`
	Object  string `json:"object"`
	Address string `json:"address"`
	Type    string `json:"type"`
	// GPLOnly: exported to GPL-compatible modules only, and this
	// module's license is not one.
	GPLOnly bool `json:"gpl_only"`
}

// notExportedList is hidden, in the order of unresolved.
func notExportedList(unresolved []string, hidden map[string]pipeline.Hidden) []notExportedJSON {
	out := []notExportedJSON{}
	for _, u := range unresolved {
		if h, ok := hidden[u]; ok {
			out = append(out, notExportedJSON{u, h.Object, fmt.Sprintf("%#x", h.Address), string(h.Type), h.GPLOnly})
		}
	}
	return out
}

// unresolvedLine says why an unresolved name did not resolve when the
// kernel has it (Hidden.Why).
func unresolvedLine(u string, hidden map[string]pipeline.Hidden) string {
	if h, ok := hidden[u]; ok {
		return fmt.Sprintf("unresolved: %s (%s: insmod says \"Unknown symbol\")", u, h.Why())
	}
	return "unresolved: " + u
}

type sectionJSON struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	// Memory: the kind of module memory (MOD_TEXT, ...) where the kernel
	// lays modules out by kind (6.4 and later).
	Memory  string `json:"memory,omitempty"`
	Address string `json:"address"`
	Size    uint64 `json:"size"`
}

type errorJSON struct {
	Section string `json:"section"`
	Offset  string `json:"offset"`
	Type    string `json:"type"`
	Symbol  string `json:"symbol"`
	Error   string `json:"error"`
	// Kernel is the kernel's own message, where klpresolve knows it.
	Kernel string `json:"kernel,omitempty"`
}

func linkReport(img *modplt.Image, why pipeline.Explanation) linkJSON {
	j := linkJSON{Module: img.Module.Name, Arch: img.Module.Arch, BigEndian: elfobj.BigEndian(img.Module.ByteOrder), OK: img.Linked(),
		PageSize: img.PageSize, CoreSize: img.CoreSize, Relocs: img.Relocs, Errors: []errorJSON{}, Unresolved: img.Unresolved,
		PLTCore: [2]int{img.PLTCoreUsed, img.PLTCoreMax}, PLTInit: [2]int{img.PLTInitUsed, img.PLTInitMax},
		GOT: [2]int{img.GOTUsed, img.GOTMax}, NotExported: notExportedList(img.Unresolved, why.NotExported),
		KallsymsCodeOnly: why.CodeOnly, UnloadedDepends: why.UnloadedDepends}
	if j.Unresolved == nil {
		j.Unresolved = []string{}
	}
	if img.PercpuSize > 0 {
		j.Percpu = fmt.Sprintf("%#x", img.Percpu)
	}
	for _, p := range img.Sections {
		mem := ""
		if img.ByMemType {
			mem = p.Mem.String()
		}
		j.Sections = append(j.Sections, sectionJSON{p.Name, p.Region.String(), mem, fmt.Sprintf("%#x", p.Addr), p.Size})
	}
	for _, e := range img.Errors {
		j.Errors = append(j.Errors, errorJSON{e.Section, fmt.Sprintf("%#x", e.Offset), e.Type, e.Symbol, e.Error(), e.Kernel})
	}
	return j
}

// writeLinkText prints link's report; why are notes on why the
// unresolved symbols may be unresolved (codeOnlyNote, dependsNote);
// versions, with --symvers, the symbol versions checked.
func writeLinkText(a *app, img *modplt.Image, hidden map[string]pipeline.Hidden, out string, why []string, loadErr *klp.RelocError, versions *symvers.Report, vermagic *symvers.Magic, magicFrom string, more ...string) {
	m := img.Module
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	if img.ByMemType {
		// 6.4 and later: each kind of memory an allocation of its own.
		fmt.Fprintf(tw, "SECTION\tMEMORY\tADDRESS\tSIZE\n")
		for _, p := range img.Sections {
			fmt.Fprintf(tw, "%s\t%s\t%#x\t%#x\n", p.Name, p.Mem, p.Addr, p.Size)
		}
	} else {
		fmt.Fprintf(tw, "SECTION\tREGION\tADDRESS\tSIZE\n")
		for _, p := range img.Sections {
			fmt.Fprintf(tw, "%s\t%s\t%#x\t%#x\n", p.Name, p.Region, p.Addr, p.Size)
		}
	}
	tw.Flush()
	if img.PageSize != modplt.DefaultPageSize {
		// Given, or an arm64 kernel's own (pipeline.KernelPageSize).
		fmt.Fprintf(a.stdout, "page size: %d KiB\n", img.PageSize>>10)
	}
	if img.PercpuSize > 0 {
		// Not loaded with the module (modplt.LinkOptions.PercpuBase).
		fmt.Fprintf(a.stdout, ".data..percpu: per-cpu area at %#x, %#x bytes\n", img.Percpu, img.PercpuSize)
	}
	switch {
	case m.Arch == "s390" && img.GOTMax+img.PLTCoreMax > 0:
		thunk := ""
		if img.Expoline {
			thunk = " (the expoline thunk's included)"
		}
		fmt.Fprintf(a.stdout, "GOT: %d of %s; PLT: %d of %s%s\n", img.GOTUsed, count(img.GOTMax, "slot", "slots"), img.PLTCoreUsed, count(img.PLTCoreMax, "entry", "entries"), thunk)
	case m.Arch == "ppc64":
		fmt.Fprintf(a.stdout, "stubs: %d of %s (the last one ends stub_for_addr()'s search)\n", img.PLTCoreUsed, count(img.PLTCoreMax, "entry", "entries"))
	case img.PLTCoreMax+img.PLTInitMax > 0:
		fmt.Fprintf(a.stdout, "PLT: .plt %d of %s, .init.plt %d of %d\n", img.PLTCoreUsed, count(img.PLTCoreMax, "entry", "entries"), img.PLTInitUsed, img.PLTInitMax)
	case img.GOTMax > 0:
		fmt.Fprintf(a.stdout, "GOT: %d of %s (the others relaxed to lea)\n", img.GOTUsed, count(img.GOTMax, "entry", "entries"))
	}
	for _, s := range img.Unresolved {
		fmt.Fprintln(a.stdout, unresolvedLine(s, hidden))
	}
	for _, n := range why {
		fmt.Fprintln(a.stdout, n)
	}
	for i, e := range img.Errors {
		if i == 20 {
			fmt.Fprintf(a.stdout, "... and %d more errors (--format json lists them all)\n", len(img.Errors)-i)
			break
		}
		fmt.Fprintf(a.stdout, "error: %v\n", e)
		if e.Kernel != "" {
			fmt.Fprintf(a.stdout, "  kernel: %s\n", e.Kernel)
		}
	}
	if out != "" {
		fmt.Fprintf(a.stdout, "wrote %s\n", out)
	}
	if loadErr != nil {
		writeRefusal(a.stdout, loadErr)
	}
	writeVersions(a.stdout, versions)
	writeVermagic(a.stdout, vermagic, magicFrom)
	refused := refusals(versions, vermagic)
	if loadErr != nil {
		refused += "; " + loadErr.Err.Error()
	}
	for _, r := range more {
		refused += "; " + r
	}
	arch := archText(m.Arch, elfobj.BigEndian(m.ByteOrder))
	switch {
	case img.Linked() && refused == "":
		fmt.Fprintf(a.stdout, "OK: %s (%s) links: %s applied\n", m.Name, arch, count(img.Relocs, "relocation", "relocations"))
	case img.Linked():
		fmt.Fprintf(a.stdout, "FAILED: %s (%s) links: %s applied%s\n", m.Name, arch, count(img.Relocs, "relocation", "relocations"), refused)
	default:
		fmt.Fprintf(a.stdout, "FAILED: %s (%s): %s applied, %d failed, %s%s\n", m.Name, arch, count(img.Relocs, "relocation", "relocations"), len(img.Errors), count(len(img.Unresolved), "unresolved symbol", "unresolved symbols"), refused)
	}
}

// patchedFuncErrors are the patched functions that fail, in the kernel's
// words (a function without an ftrace call site, with --ftrace).
func patchedFuncErrors(res *klp.Resolution) []string {
	var out []string
	for _, f := range res.Funcs {
		if f.Err != nil {
			out = append(out, fmt.Sprintf("patched function %s:%s: %s", f.Object, f.Name, f.Err.Kernel))
		}
	}
	return out
}
