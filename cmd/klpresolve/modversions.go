// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/symvers"
)

// addSymversFlag is --symvers, for the commands that load a module.
func addSymversFlag(c *cobra.Command, path *string) {
	c.Flags().StringVar(path, "symvers", "", "the kernel build's Module.symvers: check symbol versions as the loader will")
}

// openSymvers reads the --symvers file (nil when none): unusable input
// is exit 2, before the kernel's symbols are read.
func openSymvers(path string) (*symvers.Table, error) {
	if path == "" {
		return nil, nil
	}
	t, err := symvers.Open(path)
	if err != nil {
		return nil, &exitError{exitUsage, fmt.Errorf("--symvers: %w", err)}
	}
	return t, nil
}

// versionHelp says what a refused symbol means and what to do.
func versionHelp(p *symvers.Problem, source string) string {
	switch {
	case errors.Is(p.Err, symvers.ErrVersionMismatch):
		h := fmt.Sprintf("the module has %#08x for it, %s %#08x: the module was built against another kernel build's headers; rebuild it against this kernel's", p.ModuleCRC, source, p.KernelCRC)
		if p.Symbol == "module_layout" {
			h += "; module_layout stands for the loader's own structures, so the whole load fails at once (-ENOEXEC: insmod says \"Invalid module format\"), before any other symbol"
		}
		return h
	case errors.Is(p.Err, symvers.ErrNoSymbolVersion):
		return fmt.Sprintf("the module's __versions does not list it (%s has %#08x): modpost wrote no CRC for it when the module was built (was it unresolved then?); rebuild it against this kernel's Module.symvers", source, p.KernelCRC)
	case errors.Is(p.Err, symvers.ErrNamespaceNotImported):
		return fmt.Sprintf("the kernel exports it into namespace %s: add MODULE_IMPORT_NS(%s) to the module's source (a kernel built with CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS only warns)", p.Namespace, p.Namespace)
	}
	return ""
}

// versionKind is a refused symbol's kind in JSON.
func versionKind(p *symvers.Problem) string {
	switch {
	case errors.Is(p.Err, symvers.ErrVersionMismatch):
		return "version_mismatch"
	case errors.Is(p.Err, symvers.ErrNoSymbolVersion):
		return "no_symbol_version"
	case errors.Is(p.Err, symvers.ErrNamespaceNotImported):
		return "namespace_not_imported"
	}
	return "other"
}

// writeVersions is the modversions part of the text report (nothing
// without --symvers).
func writeVersions(w io.Writer, v *symvers.Report) {
	if v == nil {
		return
	}
	fmt.Fprintf(w, "modversions: %s checked against %s", count(v.Checked, "symbol", "symbols"), v.Source)
	if v.NoCRCs {
		fmt.Fprint(w, " (its exports carry no CRC: a kernel without CONFIG_MODVERSIONS; namespaces only)")
	}
	switch {
	case !v.OK():
		fmt.Fprintf(w, ": the loader refuses %d\n", len(v.Problems))
	case v.Forced:
		fmt.Fprintln(w, ": the loader takes them only by force")
	default:
		fmt.Fprintln(w, ": the loader takes them all")
	}
	if v.Forced {
		fmt.Fprintln(w, "warning: modversions: the module has no __versions section: a kernel with CONFIG_MODVERSIONS loads it only by force (CONFIG_MODULE_FORCE_LOAD, as Debian's 6.1 is built, which taints it), and refuses it otherwise (-ENOEXEC); build it with Kbuild against this kernel's headers")
	}
	if n := len(v.Unlisted); n > 0 {
		fmt.Fprintf(w, "note: modversions: the module's extended versions (__version_ext_names) do not list %s (first %s): a 7.2 kernel lets them through and warns once (\"no extended symbol version for\")\n", count(n, "symbol", "symbols"), v.Unlisted[0])
	}
	for i := range v.Problems {
		p := &v.Problems[i]
		fmt.Fprintf(w, "error: modversions: %s\n  help: %s\n", p.Message, versionHelp(p, v.Source))
	}
}

type versionProblemOut struct {
	Symbol    string `json:"symbol"`
	Kind      string `json:"kind"`
	Error     string `json:"error"`
	ModuleCRC string `json:"module_crc,omitempty"`
	KernelCRC string `json:"kernel_crc,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Help      string `json:"help"`
}

type versionsOut struct {
	Symvers  string              `json:"symvers"`
	Checked  int                 `json:"checked"`
	Forced   bool                `json:"forced,omitempty"`
	NoCRCs   bool                `json:"no_crcs,omitempty"`
	Problems []versionProblemOut `json:"problems"`
	// Unlisted: symbols a 7.2 module's extended versions do not list.
	Unlisted []string `json:"unlisted,omitempty"`
}

func versionsJSON(v *symvers.Report) *versionsOut {
	if v == nil {
		return nil
	}
	out := &versionsOut{Symvers: v.Source, Checked: v.Checked, Forced: v.Forced, NoCRCs: v.NoCRCs, Problems: []versionProblemOut{}, Unlisted: v.Unlisted}
	for i := range v.Problems {
		p := &v.Problems[i]
		j := versionProblemOut{Symbol: p.Symbol, Kind: versionKind(p), Error: p.Message, Namespace: p.Namespace, Help: versionHelp(p, v.Source)}
		// The kernel's CRC is known but for a namespace refusal; the
		// module's only where it disagrees.
		if !errors.Is(p.Err, symvers.ErrNamespaceNotImported) {
			j.KernelCRC = fmt.Sprintf("%#08x", p.KernelCRC)
		}
		if errors.Is(p.Err, symvers.ErrVersionMismatch) {
			j.ModuleCRC = fmt.Sprintf("%#08x", p.ModuleCRC)
		}
		out.Problems = append(out.Problems, j)
	}
	return out
}

// addVermagicFlag is --vermagic, for the commands that load a module.
func addVermagicFlag(c *cobra.Command, magic *string, withModules bool) {
	usage := "the kernel's vermagic (modinfo -F vermagic): check the module's against it"
	if withModules {
		usage = "the kernel's vermagic (default: --modules's): check the module's against it"
	}
	c.Flags().StringVar(magic, "vermagic", "", usage)
}

// vermagicSource is where the kernel's vermagic came from: a module
// file, or --vermagic ("").
func vermagicSource(source string) string {
	if source == "" {
		return "--vermagic"
	}
	return source
}

// refusals is what the verdict line adds for what the module loader
// refuses: symbol versions (--symvers) and the vermagic; "" for nothing.
func refusals(versions *symvers.Report, vermagic *symvers.Magic) string {
	s := ""
	if versions != nil && !versions.OK() {
		s = fmt.Sprintf("; the module loader refuses %s (modversions)", count(len(versions.Problems), "symbol", "symbols"))
	}
	if vermagic != nil && !vermagic.OK() {
		s += "; the module loader refuses its vermagic"
	}
	return s
}

// vermagicHelp says what a refused vermagic means and what to do.
func vermagicHelp(g *symvers.Magic) string {
	h := "the module was built against another kernel's headers (its vermagic is their release and configuration): rebuild it against this kernel's"
	if g.ReleaseSkipped {
		h = "the release is not compared (the module has __versions and the kernel CONFIG_MODVERSIONS), so the configurations differ (SMP, preemption, module unloading, modversions, the architecture's part): the module was built against another kernel's headers; rebuild it against this kernel's"
	}
	return h + ". The whole load fails (-ENOEXEC: insmod says \"Invalid module format\"); modprobe --force-vermagic skips the check, tainting the kernel, where it has CONFIG_MODULE_FORCE_LOAD"
}

// writeVermagic is the vermagic part of the text report (nothing without
// a kernel's vermagic).
func writeVermagic(w io.Writer, g *symvers.Magic, source string) {
	if g == nil {
		return
	}
	from := vermagicSource(source)
	if source != "" {
		from = "from " + from
	}
	fmt.Fprintf(w, "vermagic: the kernel's is %q (%s): ", g.Kernel, from)
	switch {
	case g.Forced:
		fmt.Fprintln(w, "the module has none")
		fmt.Fprintln(w, "warning: vermagic: the module has no vermagic: the loader takes it only by force (CONFIG_MODULE_FORCE_LOAD, as Debian's 6.1 is built, which taints the kernel: \"bad vermagic\"), and refuses it otherwise (-ENOEXEC); build it with Kbuild, which writes it")
	case !g.OK():
		fmt.Fprintf(w, "the loader refuses the module's\nerror: vermagic: %s\n  help: %s\n", g.Problem.Message, vermagicHelp(g))
	case g.ReleaseSkipped && g.Module != g.Kernel:
		fmt.Fprintf(w, "the loader takes the module's, %q: it compares what follows the release (the module has __versions and the kernel CONFIG_MODVERSIONS: the symbols' CRCs stand for the rest, which --symvers checks)\n", g.Module)
	default:
		fmt.Fprintln(w, "the loader takes the module's")
	}
}

type vermagicOut struct {
	Module         string  `json:"module"`
	Kernel         string  `json:"kernel"`
	KernelFrom     string  `json:"kernel_from"`
	ReleaseSkipped bool    `json:"release_skipped"`
	Forced         bool    `json:"forced,omitempty"`
	Error          *string `json:"error"`
	Help           string  `json:"help,omitempty"`
}

func vermagicJSON(g *symvers.Magic, source string) *vermagicOut {
	if g == nil {
		return nil
	}
	out := &vermagicOut{Module: g.Module, Kernel: g.Kernel, KernelFrom: vermagicSource(source), ReleaseSkipped: g.ReleaseSkipped, Forced: g.Forced}
	if !g.OK() {
		out.Error, out.Help = &g.Problem.Message, vermagicHelp(g)
	}
	return out
}
