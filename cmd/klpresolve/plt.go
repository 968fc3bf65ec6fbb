// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/modplt"
)

func newPLTCmd(a *app) *cobra.Command {
	var format, mode string
	var opts modplt.Options
	c := &cobra.Command{
		Use:   "plt MODULE.ko",
		Short: "Count the PLT or GOT entries a module needs",
		Example: `  klpresolve plt btrfs.ko
  klpresolve plt btrfs.ko --mode optimal --erratum-843419 --format json`,
		Long: `Counts, per relocation section, the branches (total, to undefined symbols, into
their own section, with a non-zero addend) and the PLT entries they need, and the
.plt/.init.plt entries and section sizes for the whole module, as Linux 6.1's
module_frob_arch_sections() does (--mode kernel, the default, quirks included) or as
few as suffice when one entry is shared per target across a region (--mode optimal).
For an x86_64 module it counts the GOT entries that GOTPCREL relocations need; for
an s390 one the GOT slots and PLT entries its one GOT and PLT get (a slot or entry per
symbol, for the whole module, and the expoline thunk: --no-expoline without it).

Exit status: 0 counted, 1 the kernel would refuse the module (no .plt section),
2 unusable input.`,
		Args: needArgs(1, 1, "one module, MODULE.ko"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			var err error
			if opts.Mode, err = modplt.ParseMode(mode); err != nil {
				return &exitError{exitUsage, err}
			}
			m, err := openModule(a, args[0], modplt.Parse)
			if err != nil {
				return err
			}
			res, err := m.Count(opts)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			if format == "json" {
				err = writeJSON(a, len(res.Warnings) == 0, res)
			} else {
				writePLTText(a, res)
			}
			if err == nil && len(res.Warnings) > 0 {
				return &exitError{exitFailed, errReported}
			}
			return err
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	c.Flags().StringVar(&mode, "mode", "kernel", "kernel (Linux 6.1's count, quirks included) or optimal")
	c.Flags().BoolVar(&opts.Erratum843419, "erratum-843419", false, "arm64: count as a kernel with the Cortex-A53 erratum 843419 workaround on")
	c.Flags().BoolVar(&opts.NoModuleUnload, "no-module-unload", false, "count as a kernel without CONFIG_MODULE_UNLOAD (.exit sections are init)")
	addNoKASLRFlag(c, &opts.NoRandomizeBase, "arm64: count as a kernel")
	addNoExpolineFlag(c, &opts.NoExpoline, "count")
	return c
}

func writePLTText(a *app, r *modplt.Counts) {
	switch r.Arch {
	case "s390":
		writeS390Counts(a, r)
		return
	case "ppc64":
		writePPC64Counts(a, r)
		return
	}
	got := r.Arch == "x86_64"
	fmt.Fprintf(a.stdout, "%s (%s), %s mode", r.Module, archText(r.Arch, r.BigEndian), r.Mode)
	if r.Erratum843419 {
		fmt.Fprint(a.stdout, ", erratum 843419 workaround")
	}
	if r.NoRandomizeBase {
		fmt.Fprint(a.stdout, ", no KASLR: no branch PLT entries")
	}
	fmt.Fprintln(a.stdout)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	last := "PLT"
	if got {
		last = "GOT"
	}
	fmt.Fprintf(tw, "SECTION\tREGION\tRELOCS\tBRANCHES\tUNDEF\tSAME-SEC\tADDEND!=0\t%s\t\n", last)
	for _, s := range r.Sections {
		if !s.Exec {
			continue // the kernel skips them; their statistics are in the totals
		}
		n := s.PLT
		if got {
			n = s.GOT
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Name, s.Region, s.Relocs, s.Branches, s.Undef, s.SameSection, s.NonZeroAddend, n)
	}
	t := r.Totals
	n := t.PLT
	if got {
		n = t.GOT
	}
	fmt.Fprintf(tw, "all sections\t\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Relocs, t.Branches, t.Undef, t.SameSection, t.NonZeroAddend, n)
	tw.Flush()
	if got {
		fmt.Fprintf(a.stdout, "GOT: %s (x86_64 modules use no PLT)\n", count(r.GOT, "entry", "entries"))
	} else {
		fixed := ""
		if r.FixedPLTs > 0 {
			fixed = fmt.Sprintf(" (%d fixed ftrace slots included)", r.FixedPLTs)
		}
		fmt.Fprintf(a.stdout, ".plt:      %s, sh_size %d%s\n", count(r.PLTCore, "entry", "entries"), r.PLTSizeCore, fixed)
		fmt.Fprintf(a.stdout, ".init.plt: %s, sh_size %d%s\n", count(r.PLTInit, "entry", "entries"), r.PLTSizeInit, fixed)
		if t.Veneers > 0 {
			fmt.Fprintf(a.stdout, "erratum 843419: %d ADRP veneer slots included\n", t.Veneers)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
}

// writePPC64Counts: a powerpc module's stubs, one .stubs section that
// every RELA section's REL24 relocations add to, executable target or
// not.
func writePPC64Counts(a *app, r *modplt.Counts) {
	fmt.Fprintf(a.stdout, "%s (%s), %s mode\n", r.Module, archText(r.Arch, r.BigEndian), r.Mode)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "SECTION\tRELOCS\tREL24\tUNDEF\tSTUBS\t\n")
	for _, s := range r.Sections {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", s.Name, s.Relocs, s.Branches, s.Undef, s.PLT)
	}
	t := r.Totals
	fmt.Fprintf(tw, "all sections\t%d\t%d\t%d\t%d\t\n", t.Relocs, t.Branches, t.Undef, t.PLT)
	tw.Flush()
	fmt.Fprintf(a.stdout, ".stubs: %s, sh_size %d (%d fixed: the search's end and ftrace_caller's and ftrace_regs_caller's)\n", count(r.PLTCore, "stub", "stubs"), r.PLTSizeCore, r.FixedPLTs)
	for _, w := range r.Warnings {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
}

// writeS390Counts: an s390 module's one GOT and PLT, which every RELA
// section's GOT and PLT relocations add to, executable target or not.
func writeS390Counts(a *app, r *modplt.Counts) {
	fmt.Fprintf(a.stdout, "%s (%s), %s mode", r.Module, archText(r.Arch, r.BigEndian), r.Mode)
	if r.NoExpoline {
		fmt.Fprint(a.stdout, ", no expolines")
	}
	fmt.Fprintln(a.stdout)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "SECTION\tREGION\tRELOCS\tGOT/PLT RELOCS\tGOT\tPLT\t\n")
	for _, s := range r.Sections {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t\n", s.Name, s.Region, s.Relocs, s.Candidates, s.GOT, s.PLT)
	}
	t := r.Totals
	fmt.Fprintf(tw, "all sections\t\t%d\t%d\t%d\t%d\t\n", t.Relocs, t.Candidates, t.GOT, t.PLT)
	tw.Flush()
	thunk := ""
	if r.FixedPLTs > 0 {
		thunk = " (the expoline thunk's included)"
	}
	fmt.Fprintf(a.stdout, "GOT: %s, %d bytes; PLT: %s, %d bytes%s; both at the start of core\n",
		count(r.GOT, "slot", "slots"), r.GOT*8, count(r.PLTCore, "entry", "entries"), r.PLTSizeCore, thunk)
}

// addNoExpolineFlag adds --no-expoline (modplt.Options.NoExpoline).
func addNoExpolineFlag(c *cobra.Command, v *bool, verb string) {
	c.Flags().BoolVar(v, "no-expoline", false, "s390: "+verb+" as a kernel without expolines (no __jump_r1 thunk)")
}

// addNoKASLRFlag adds --no-kaslr: an arm64 kernel built without
// CONFIG_RANDOMIZE_BASE, whose 6.1 loader reserves no PLT entry for a
// branch (modplt.Options.NoRandomizeBase). what says what the flag does
// with such a kernel.
func addNoKASLRFlag(c *cobra.Command, v *bool, what string) {
	c.Flags().BoolVar(v, "no-kaslr", false, what+" without KASLR (CONFIG_RANDOMIZE_BASE)")
}
