package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/internal/bench"
)

func newBenchCmd(a *app) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure klpresolve beside the kernel's algorithms, in one run",
	}
	c.PersistentFlags().StringVar(&format, "format", "text", "output format: text or json")
	report := func(r *bench.Report) error {
		if format == "json" {
			return writeJSON(a, r)
		}
		r.WriteText(a.stdout)
		return nil
	}
	c.AddCommand(&cobra.Command{
		Use:   "kallsyms [--kallsyms PATH] [--format json]",
		Short: "Parse/index, lookup and snapshot figures, beside the naive parser and the kernel's lookups",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r, err := bench.Kallsyms(a.kallsymsPath())
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench kallsyms: %w", err)}
			}
			return report(r)
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "resolve PATCH.ko [--kallsyms PATH] [--format json]",
		Short: "Resolve-phase cost per relocation, beside the kernel's old linear walk",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r, err := bench.Resolve(args[0], a.kallsymsPath())
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench resolve: %w", err)}
			}
			return report(r)
		},
	})
	var repo, corpus string
	allCmd := &cobra.Command{
		Use:   "all [--format json] [--corpus DIR]",
		Short: "Every benchmark on its standard input, in one report (JSON for CI to store and compare)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			all, err := bench.RunAll(repo, corpus)
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench all: %w", err)}
			}
			if format == "json" {
				return writeJSON(a, all)
			}
			for _, r := range all.Reports {
				r.WriteText(a.stdout)
			}
			for _, s := range all.Skipped {
				fmt.Fprintf(a.stdout, "skipped: %s\n", s)
			}
			return nil
		},
	}
	allCmd.Flags().StringVar(&repo, "repo", ".", "the klpresolve repository (for its fixtures)")
	allCmd.Flags().StringVar(&corpus, "corpus", "../shared/corpus", "the shared corpus of real kernel data")
	c.AddCommand(allCmd)
	var co bench.CFIOptions
	var hold time.Duration
	cfiCmd := &cobra.Command{
		Use:   "cfi [--modules N] [--readers R] [--hold DURATION] [--runs N] [--format json]",
		Short: "CFI shadow updates in synchronous and deferred reclamation, with readers holding their sections",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if cmd.Flags().Changed("hold") {
				co.Holds = []time.Duration{hold}
			}
			r, err := bench.CFI(co)
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench cfi: %w", err)}
			}
			return report(r)
		},
	}
	cfiCmd.Flags().IntVar(&co.Modules, "modules", 200, "module adds per run")
	cfiCmd.Flags().IntVar(&co.Readers, "readers", 2, "reader goroutines looking up continuously")
	cfiCmd.Flags().IntVar(&co.Runs, "runs", 3, "runs per mode and hold time; the median run is reported")
	cfiCmd.Flags().DurationVar(&hold, "hold", 0, "one read-side section length (default: runs 0, 100us and 1ms)")
	c.AddCommand(cfiCmd)
	c.AddCommand(&cobra.Command{
		Use:   "link MODULE.ko [--format json]",
		Short: "Link a module (undefined symbols at made-up addresses near it): relocations applied per second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r, err := bench.Link(args[0])
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench link: %w", err)}
			}
			return report(r)
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "plt MODULE.ko [--format json]",
		Short: "PLT counting in kernel and optimal mode, beside a port of Linux 6.1's algorithm",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r, err := bench.PLT(args[0])
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("bench plt: %w", err)}
			}
			return report(r)
		},
	})
	return c
}
