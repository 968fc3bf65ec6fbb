// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/pipeline"
)

func newInfoCmd(a *app) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "info PATCH.ko",
		Short: "Describe a livepatch module without a kernel",
		Example: `  klpresolve info fix.ko
  klpresolve info fix.ko.zst --format json | jq '.funcs[].name'`,
		Long: `Describes what PATCH.ko asks of a kernel, without one: its livepatch relocation
sections (object, the section they patch, how many relocations), the livepatch symbols
they use, the klp_objects it declares and the functions it patches (from a static
klp_patch, klp-build's .init.klp_funcs or kpatch-build's .kpatch.funcs), and what the
kernel would refuse on every kernel (a malformed name, a section for a module the patch
declares no object for, a function declared twice, no livepatch=Y...).

Exit status: 0 nothing is refused on every kernel, 1 something is, 2 unusable input.`,
		Args: needArgs(1, 1, "one livepatch module, PATCH.ko"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			m, err := openModule(a, args[0], klp.Parse)
			if err != nil {
				return err
			}
			info := moduleInfo(m)
			if format == "json" {
				err = writeJSON(a, info.Errors == 0, info)
			} else {
				writeInfoText(a.stdout, info)
			}
			if err != nil {
				return err
			}
			if info.Errors > 0 {
				return &exitError{exitFailed, errReported}
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return c
}

// infoOut is what info reports (also its JSON form).
type infoOut struct {
	Module      string `json:"module"`
	Name        string `json:"name"` // as the kernel names it
	Arch        string `json:"arch"`
	BigEndian   bool   `json:"big_endian,omitempty"`
	Format      string `json:"format"`
	Livepatch   bool   `json:"livepatch"` // .modinfo livepatch=Y
	Compression string `json:"compression,omitempty"`
	// Vermagic is .modinfo's vermagic (the kernel build it was made for);
	// SymbolVersions the entries of its __versions section (null without
	// one), which --symvers checks against a kernel's Module.symvers.
	Vermagic       string `json:"vermagic,omitempty"`
	SymbolVersions *int   `json:"symbol_versions"`
	// Signature is the appended module signature (null: unsigned).
	Signature *signatureJSON `json:"signature"`
	// Depends: the modules it depends on (pipeline.Depends), which
	// modprobe loads first.
	Depends    []string       `json:"depends,omitempty"`
	Sections   []infoSection  `json:"sections"`
	Symbols    []string       `json:"symbols"` // distinct livepatch symbols, in first use
	Objects    []string       `json:"objects,omitempty"`
	FuncSource string         `json:"func_source,omitempty"`
	Funcs      []infoFunc     `json:"funcs"`
	Callbacks  []infoCallback `json:"callbacks,omitempty"`
	Refused    *problemJSON   `json:"refused,omitempty"` // the module as a whole, on every kernel (klp.Module.Refused)
	Warnings   []string       `json:"warnings,omitempty"`
	// Errors counts what every kernel refuses: failed sections,
	// relocations and functions, and Refused.
	Errors int `json:"errors"`
}

type infoSection struct {
	Name        string       `json:"name"`
	Object      string       `json:"object"`
	Target      string       `json:"target"`
	Relocations int          `json:"relocations"`
	Error       *problemJSON `json:"error,omitempty"` // the section's, or its first relocation's
	// ErrorSymbol is the symbol of the relocation Error is about ("" for
	// the section's own).
	ErrorSymbol string `json:"error_symbol,omitempty"`
}

// infoCallback is a klp_callbacks entry: livepatch calls Func When it
// (un)patches Object.
type infoCallback struct {
	Object string `json:"object"`
	When   string `json:"when"` // pre_patch, post_patch, pre_unpatch, post_unpatch
	Func   string `json:"func"`
}

type infoFunc struct {
	Object   string       `json:"object"`
	Name     string       `json:"name"`
	Sympos   uint64       `json:"sympos"`
	Declared string       `json:"declared"`
	Error    *problemJSON `json:"error,omitempty"`
}

// problemJSON is a failure in the JSON reports: the kernel's message (or
// what happens where it says nothing), its klp.RelocError.Kind, the help.
type problemJSON struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	Help  string `json:"help,omitempty"`
}

func problemOf(e *klp.RelocError) *problemJSON {
	return &problemJSON{Error: e.Kernel, Kind: e.Kind(), Help: e.Hint}
}

// archText is how the text names a module's architecture: the kernel's
// name, and "big-endian" after it for a big-endian module (a
// CONFIG_CPU_BIG_ENDIAN kernel has the same name and loads only those).
func archText(arch string, big bool) string {
	if big {
		return arch + " big-endian"
	}
	return arch
}

// signatureJSON is a klp.Signature.
type signatureJSON struct {
	Bytes   int    `json:"bytes"`
	Problem string `json:"problem,omitempty"`
}

// problem is a static failure (klp.StaticError) in the JSON reports.
func problem(err error) *problemJSON { return problemOf(klp.StaticError(err)) }

func moduleInfo(m *klp.Module) *infoOut {
	out := &infoOut{Module: m.Path, Name: m.KernelName(), Arch: m.Arch, BigEndian: elfobj.BigEndian(m.ByteOrder), Format: string(m.Format), Livepatch: m.Livepatch,
		Compression: string(m.Compression), Sections: []infoSection{}, Symbols: []string{}, Funcs: []infoFunc{},
		Objects: m.Objects, FuncSource: string(m.FuncSource), Warnings: m.Warnings}
	for _, c := range m.Callbacks {
		out.Callbacks = append(out.Callbacks, infoCallback{Object: c.Object, When: c.When, Func: c.Func})
	}
	out.Vermagic = m.ModInfo("vermagic")
	if s := m.Signature; s != nil {
		out.Signature = &signatureJSON{Bytes: s.Bytes, Problem: s.Problem}
	}
	out.Depends = pipeline.Depends(m)
	if v, err := m.Versions(); err != nil {
		out.Warnings = append(out.Warnings, err.Error())
	} else if v.HasVersions {
		n := len(v.Versions)
		out.SymbolVersions = &n
	}
	seen := map[string]bool{}
	for _, s := range m.Sections {
		is := infoSection{Name: s.Name, Object: s.Object, Target: s.Target, Relocations: len(s.Relocs)}
		switch {
		case s.Err != nil:
			is.Error = problem(s.Err)
			out.Errors++
		default:
			for _, r := range s.Relocs {
				if r.Err != nil {
					is.Error, is.ErrorSymbol = problem(r.Err), r.Symbol
					out.Errors++
					break
				}
			}
		}
		for _, r := range s.Relocs {
			if !seen[r.Symbol] {
				seen[r.Symbol] = true
				out.Symbols = append(out.Symbols, r.Symbol)
			}
		}
		out.Sections = append(out.Sections, is)
	}
	if m.Kpatch != nil {
		for _, d := range m.Kpatch.Dynrelas {
			if n := klp.FormatSymbolName(d.Object, d.Name, d.Pos); !seen[n] {
				seen[n] = true
				out.Symbols = append(out.Symbols, n)
			}
		}
	}
	for _, f := range m.Funcs {
		fi := infoFunc{Object: f.Object, Name: f.Name, Sympos: f.Pos, Declared: fmt.Sprintf("%s+%#x", f.Section, f.Offset)}
		if f.Err != nil {
			fi.Error = problem(f.Err)
			out.Errors++
		}
		out.Funcs = append(out.Funcs, fi)
	}
	if e := m.Refused(); e != nil {
		out.Refused = problemOf(e)
		out.Errors++
	}
	return out
}

func writeInfoText(w io.Writer, in *infoOut) {
	fmt.Fprintf(w, "module %s (name %s): format %s, arch %s, livepatch=%s\n", in.Module, in.Name, in.Format, archText(in.Arch, in.BigEndian), yesNo(in.Livepatch))
	if in.Vermagic != "" || in.SymbolVersions != nil {
		fmt.Fprintf(w, "built for: vermagic %q", in.Vermagic)
		if in.Vermagic != "" {
			fmt.Fprint(w, " (check it with --vermagic, or --modules)")
		}
		if in.SymbolVersions != nil {
			fmt.Fprintf(w, ", %s (check them with --symvers)", count(*in.SymbolVersions, "symbol version", "symbol versions"))
		}
		fmt.Fprintln(w)
	}
	switch s := in.Signature; {
	case s == nil:
		fmt.Fprintln(w, "signature: none (a kernel that enforces module signatures refuses it: \"Loading of unsigned module is rejected\")")
	case s.Problem == "":
		fmt.Fprintf(w, "signature: PKCS#7, %d bytes (whether a kernel trusts its key, only that kernel can tell)\n", s.Bytes)
	default:
		fmt.Fprintf(w, "signature: malformed (%s)\n", s.Problem)
	}
	if len(in.Depends) > 0 {
		fmt.Fprintf(w, "depends on: %s (modprobe loads them first; --modules lays them out from their files)\n", strings.Join(in.Depends, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(in.Sections) > 0 {
		fmt.Fprintf(tw, "livepatch sections (%d):\n", len(in.Sections))
		for _, s := range in.Sections {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Name, orDash(s.Object), count(s.Relocations, "relocation", "relocations"))
		}
	}
	tw.Flush()
	if len(in.Symbols) > 0 {
		fmt.Fprintf(w, "livepatch symbols (%d): %s\n", len(in.Symbols), strings.Join(in.Symbols, " "))
	}
	if in.Objects != nil {
		fmt.Fprintf(w, "objects (%s): %s\n", in.FuncSource, strings.Join(in.Objects, ", "))
	}
	if len(in.Funcs) > 0 {
		fmt.Fprintf(tw, "patched functions (%s, %d):\n", in.FuncSource, len(in.Funcs))
		for _, f := range in.Funcs {
			fmt.Fprintf(tw, "  %s:%s,%d\tdeclared at %s\n", f.Object, f.Name, f.Sympos, f.Declared)
		}
		tw.Flush()
	} else {
		fmt.Fprintln(w, "patched functions: none found (a static klp_patch, .init.klp_funcs or .kpatch.funcs)")
	}
	if len(in.Callbacks) > 0 {
		fmt.Fprintf(w, "callbacks (%d):\n", len(in.Callbacks))
		for _, c := range in.Callbacks {
			fmt.Fprintf(w, "  %s %s: %s\n", c.Object, c.When, c.Func)
		}
	}
	problemLines := func(what string, p *problemJSON) {
		fmt.Fprintf(w, "error: %s\n  kernel: %s\n", what, p.Error)
		if p.Help != "" {
			fmt.Fprintf(w, "  help: %s\n", p.Help)
		}
	}
	for _, s := range in.Sections {
		switch {
		case s.Error != nil && s.ErrorSymbol != "":
			problemLines(fmt.Sprintf("section %s, relocation against %s", s.Name, s.ErrorSymbol), s.Error)
		case s.Error != nil:
			problemLines("section "+s.Name, s.Error)
		}
	}
	for _, f := range in.Funcs {
		if f.Error != nil {
			problemLines(fmt.Sprintf("patched function %s:%s,%d (declared at %s)", f.Object, f.Name, f.Sympos, f.Declared), f.Error)
		}
	}
	if in.Refused != nil {
		what := "the kernel refuses the module"
		if in.Refused.Kind == "not_livepatch" {
			what = "nothing for livepatch in the module"
		}
		problemLines(what, in.Refused)
	}
	for _, warn := range in.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if in.Errors > 0 {
		fmt.Fprintf(w, "FAILED: %s on every kernel\n", count(in.Errors, "problem", "problems"))
	} else {
		fmt.Fprintln(w, "OK: nothing refused on every kernel; resolve it against one to know the rest")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
