// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/cmd/klpresolve/internal/bench"
)

func newBenchCmd(a *app) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure klpresolve beside the kernel's own algorithms",
		Example: `  klpresolve bench kallsyms --kallsyms kallsyms-6.18.44-firecracker.txt
  klpresolve bench proc --rounds 40
  klpresolve bench plt btrfs.ko --format json`,
		Long: `Measures klpresolve beside the reference algorithms (the kernel's, a naive parser) in
one run and prints the ratios. What runs in this process runs under the Go runtime's
default collector (GOGC=100), as go test -bench does, not the setting klpresolve's other
commands use for themselves; GOGC in the environment wins, and each report's first line
says what it ran under. The one-shot figures and bench proc time fresh klpresolve
processes, which run as the commands do.`,
		// Alone, bench shows its help; with a name that is no benchmark it
		// is a usage error, not that help with exit status 0.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("bench: unknown benchmark %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return &exitError{exitUsage, fmt.Errorf("%s; see '%s --help'", msg, cmd.CommandPath())}
		},
	}
	c.PersistentFlags().StringVar(&format, "format", "text", "output format: text or json")
	// The in-process groups run under goDefaultGC (see Long): main's
	// one-shot setting sped the references up alone, as they allocate
	// where klpresolve does not (the naive parser 58-66 ms instead of
	// 74-79). "bench once" keeps main's setting: it times a command's work.
	// sub makes one benchmark command: run returns its report.
	sub := func(use, short string, args cobra.PositionalArgs, run func(args []string) (*bench.Report, error)) *cobra.Command {
		name := strings.Fields(use)[0]
		return &cobra.Command{
			Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkFormat(format); err != nil {
					return err
				}
				setGC(goDefaultGC)
				r, err := run(args)
				if err != nil {
					return &exitError{exitUsage, fmt.Errorf("bench %s: %w", name, err)}
				}
				if format == "json" {
					return writeJSON(a, true, r)
				}
				r.WriteText(a.stdout)
				return nil
			},
		}
	}
	c.AddCommand(
		sub("resolve PATCH.ko",
			"Resolve cost per relocation, beside the kernel's old linear walk",
			needArgs(1, 1, "one livepatch module, PATCH.ko"), func(args []string) (*bench.Report, error) { return bench.Resolve(args[0], a.kallsymsPath()) }),
		sub("plt MODULE.ko",
			"PLT counting, beside a port of the kernel's algorithm",
			needArgs(1, 1, "one module, MODULE.ko"), func(args []string) (*bench.Report, error) { return bench.PLT(args[0]) }),
		sub("image",
			"Read a kernel image's kallsyms, beside decompressing it alone",
			needArgs(0, 0, "no arguments"), func([]string) (*bench.Report, error) { return bench.Image(a.kallsymsPath()) }),
		sub("link MODULE.ko",
			"Link a module: relocations applied per second",
			needArgs(1, 1, "one module, MODULE.ko"), func(args []string) (*bench.Report, error) { return bench.Link(args[0]) }),
	)

	var loaded string
	kallsymsCmd := sub("kallsyms",
		"Parse, look up and snapshot, beside a naive parser and the kernel",
		needArgs(0, 0, "no arguments"), func([]string) (*bench.Report, error) {
			if loaded != "" {
				return bench.KallsymsLoaded(a.kallsymsPath(), loaded, onceCmd())
			}
			return bench.Kallsyms(a.kallsymsPath(), onceCmd())
		})
	kallsymsCmd.Flags().StringVar(&loaded, "loaded-modules", "", "also load every module under this folder (kallsyms-loaded)")
	c.AddCommand(kallsymsCmd)

	// once is the child side of the one-shot figures of bench kallsyms:
	// it times one read or one index of a file in this fresh process.
	c.AddCommand(&cobra.Command{
		Use:    "once read|open PATH",
		Short:  "Time one os.ReadFile or kallsyms.Open of PATH (nanoseconds)",
		Args:   cobra.ExactArgs(2),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := bench.Once(args[0], args[1], a.indexOptions())
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench once: %w", err)}
			}
			fmt.Fprintln(a.stdout, d.Nanoseconds())
			return nil
		},
	})

	var procRounds int
	var withProc bool
	procCmd := sub("proc",
		"One-shot 'klpresolve objects' beside 'cat /proc/kallsyms'",
		needArgs(0, 0, "no arguments"), func([]string) (*bench.Report, error) { return runProc(a.kallsymsPath(), procRounds) })
	procCmd.Flags().IntVar(&procRounds, "rounds", 30, "runs of each command")
	c.AddCommand(procCmd)

	var co bench.CFIOptions
	var hold time.Duration
	cfiCmd := sub("cfi",
		"CFI shadow updates, synchronous and deferred, under readers",
		needArgs(0, 0, "no arguments"), func([]string) (*bench.Report, error) { return bench.CFI(co) })
	cfiCmd.PreRun = func(cmd *cobra.Command, args []string) {
		if cmd.Flags().Changed("hold") {
			co.Holds = []time.Duration{hold}
		}
	}
	cfiCmd.Flags().IntVar(&co.Modules, "modules", 200, "module adds per run")
	cfiCmd.Flags().IntVar(&co.Readers, "readers", 2, "reader goroutines looking up continuously")
	cfiCmd.Flags().IntVar(&co.Runs, "runs", 3, "runs per mode and hold time; the median run is reported")
	cfiCmd.Flags().DurationVar(&hold, "hold", 0, "one read-side section length (default: runs 0, 100us and 1ms)")
	c.AddCommand(cfiCmd)

	var corpus string
	var in bench.Inputs
	allCmd := &cobra.Command{
		Use:   "all",
		Short: "Every benchmark, in one report (JSON for CI to compare)",
		Long: `Every benchmark, in one report (JSON for CI to compare). Each input has a
flag; one left unset is taken from the shared corpus under --corpus (the
project's standard inputs, docs/benchmarks.md); --loaded-modules from where
scripts/debian-kernel puts Debian 6.1's amd64 kernel ($KLPRESOLVE_6_1_AMD64,
else /var/tmp/klpresolve-6.1-amd64). A benchmark whose input is absent is
skipped and listed under "skipped".`,
		Args: needArgs(0, 0, "no arguments (the inputs are flags)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			setGC(goDefaultGC)
			in.OneShotCommand = onceCmd()
			all, err := bench.RunAll(benchInputs(cmd, in, corpus))
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench all: %w", err)}
			}
			if withProc {
				if r, err := runProc(a.kallsymsPath(), procRounds); err != nil {
					all.Skipped = append(all.Skipped, "proc: "+err.Error())
				} else {
					all.Reports = append(all.Reports, r)
				}
			}
			if format == "json" {
				return writeJSON(a, true, all)
			}
			var targets int
			var missed []string
			for _, r := range all.Reports {
				r.WriteText(a.stdout)
				for _, f := range r.Figures {
					if f.Target != nil {
						targets++
					}
				}
				for _, m := range r.Missed() {
					missed = append(missed, r.Benchmark+": "+m)
				}
			}
			for _, s := range all.Skipped {
				fmt.Fprintf(a.stdout, "skipped: %s\n", s)
			}
			fmt.Fprintf(a.stdout, "targets: %d met, %d missed", targets-len(missed), len(missed))
			if len(missed) > 0 {
				fmt.Fprintf(a.stdout, " (%s)", strings.Join(missed, ", "))
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	allCmd.Flags().BoolVar(&withProc, "proc", false, "also run 'bench proc' (needs root, or kernel.kptr_restrict=0)")
	allCmd.Flags().IntVar(&procRounds, "rounds", 30, "with --proc: runs of each command")
	allCmd.Flags().StringVar(&corpus, "corpus", "../shared/corpus", "where unset inputs are taken from")
	allCmd.Flags().StringVar(&in.Kallsyms, "kallsyms-file", "", "bench kallsyms's input (default: the corpus's 6.18 kallsyms)")
	allCmd.Flags().StringVar(&in.LoadedModules, "loaded-modules", "", "modules loaded into --patch-kallsyms's kernel (default: Debian 6.1's)")
	allCmd.Flags().StringVar(&in.Patch, "patch", "", "bench resolve's patch (default: testdata/klp/big.ko.zst)")
	allCmd.Flags().StringVar(&in.PatchKallsyms, "patch-kallsyms", "", "what --patch resolves against (default: the corpus's 6.1 amd64 kallsyms)")
	allCmd.Flags().StringSliceVar(&in.PLTModules, "plt", nil, "bench plt's modules (default: the corpus's arm64 amdgpu.ko)")
	allCmd.Flags().StringSliceVar(&in.LinkModules, "link", nil, "bench link's modules (default: the corpus's arm64 amdgpu.ko and amd64 xfs.ko)")
	c.AddCommand(allCmd)
	return c
}

// benchInputs fills the inputs the flags left unset with the project's
// standard ones: the shared corpus's files under corpus, and the
// repository's big patch fixture.
func benchInputs(cmd *cobra.Command, in bench.Inputs, corpus string) bench.Inputs {
	c := func(rel string) string { return filepath.Join(corpus, rel) }
	set := func(flag string) bool { return cmd.Flags().Changed(flag) }
	if !set("kallsyms-file") {
		in.Kallsyms = c("host/kallsyms-6.18.44-firecracker.txt")
	}
	if !set("patch") {
		in.Patch = filepath.Join("testdata", "klp", "big.ko.zst")
	}
	if !set("patch-kallsyms") {
		in.PatchKallsyms = c("amd64/kallsyms-6.1.0-57-amd64.txt")
	}
	if !set("loaded-modules") {
		in.LoadedModules = debian61Modules()
	}
	if !set("plt") {
		in.PLTModules = []string{c("arm64/modules/amdgpu.ko")}
	}
	if !set("link") {
		in.LinkModules = []string{c("arm64/modules/amdgpu.ko"), c("amd64/modules/xfs.ko")}
	}
	return in
}

// debian61Modules is the modules folder of Debian's 6.1 amd64 kernel,
// the corpus's build, where scripts/debian-kernel puts it
// ($KLPRESOLVE_6_1_AMD64, else /var/tmp/klpresolve-6.1-amd64).
func debian61Modules() string {
	dir := os.Getenv("KLPRESOLVE_6_1_AMD64")
	if dir == "" {
		dir = "/var/tmp/klpresolve-6.1-amd64"
	}
	return filepath.Join(dir, "root", "lib", "modules", "6.1.0-57-amd64", "kernel")
}

// onceCmd is the command that runs "bench once" in a fresh process: this
// executable (nil when it cannot be found: the one-shot figures are then
// left out).
func onceCmd() []string {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{self, "bench", "once"}
}

// runProc runs bench proc on path with this executable as the tool.
func runProc(path string, rounds int) (*bench.Report, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return bench.Proc(bench.ProcOptions{
		Tool:      []string{self, "objects", "--kallsyms", path},
		Reference: []string{"cat", path},
		Rounds:    rounds,
		Input:     path,
	})
}
