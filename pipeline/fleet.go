// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/internal/par"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/symvers"
)

// KernelResult is one kernel's row of a fleet check.
type KernelResult struct {
	Kernel string // the kallsyms, System.map or snapshot it was read from
	// Release is Kernel.Release: the release KernelsUnder found it as
	// ("" for a symbols file given alone).
	Release string
	// Config is Kernel.Config: the configuration its link options and
	// the loader's checks were taken from ("" when none).
	Config string
	// Generation is the generation whose rules judged it, and how it was
	// told (TellGeneration; FleetOptions.Run.Kernel where given).
	Generation kgen.Evidence
	// Ftrace is Kernel.Ftrace, the ftrace call sites its patched
	// functions were checked against ("" when none); FtraceErr, why
	// they could not be read (then they were not checked: a note, which
	// does not fail the row).
	Ftrace    string
	FtraceErr error
	// Versions and Magic: the module loader's checks of the patch's
	// symbol versions and vermagic (Report.Versions, Report.Vermagic),
	// when the kernel's Module.symvers and vermagic were known (nil: not
	// checked; Versions.Source is the Module.symvers, Magic.Kernel the
	// vermagic). A refusal fails the row.
	Versions *symvers.Report
	Magic    *symvers.Magic
	// VermagicFrom is the module file the kernel's vermagic was read from
	// ("" when given, Kernel.Vermagic).
	VermagicFrom string
	// Livepatch relocations and patched functions (klp.Resolution's
	// counts of both), resolved, deferred and failed (plus link
	// failures, when linking).
	Resolved   int
	Deferred   int
	Errors     int
	FirstError string
	// FirstErrorKind names it for programs: "unreadable",
	// "wrong_architecture" or "unusable" (Err), a failed relocation's
	// klp.RelocError.Kind, "deferred" (strict), or "link".
	FirstErrorKind diag.Kind
	OK             bool
	// LoaderMissing (without Run.Link): the module's ordinary symbols
	// insmod would refuse on this kernel (Report.LoaderMissing); they do
	// not make the row fail.
	LoaderMissing []string
	// CodeOnly: Report.CodeOnly (ordinary symbols unresolved, and the
	// kernel's symbol list has no data symbols).
	CodeOnly bool
	// UnloadedDepends: Report.UnloadedDepends (ordinary symbols
	// unresolved, and modules the module depends on not in the kernel's
	// symbols).
	UnloadedDepends []string
	// NoModules: Explanation.NoModules (the kernel's symbols list no
	// module, as a System.map).
	NoModules bool
	// BuiltIn: the deferred objects that look built into this kernel
	// (klp.Resolution.BuiltIn): their relocations would never apply.
	BuiltIn []klp.BuiltIn
	// InitRefs: how many relocations resolve into vmlinux's init memory,
	// freed after boot (klp.Resolution.InitRefs).
	InitRefs int
	// Diagnostics: Report.Diagnostics(Strict), everything the check
	// found on this kernel in the loader's order; FirstError and
	// FirstErrorKind are its first error's.
	Diagnostics []diag.Diagnostic
	// Err is set when the kernel's symbols could not be read, or are
	// another architecture's (ErrArchMismatch): the row has no counts.
	Err  error
	Time time.Duration
}

// FleetOptions shape a fleet check.
type FleetOptions struct {
	Workers int  // goroutines; 0 means GOMAXPROCS
	Strict  bool // deferred relocations fail
	LTO     bool // kallsyms.Options.LTO
	// NoMap reads each kernel's file instead of mapping it
	// (kallsyms.Options.NoMap): for files that may be rewritten in place
	// while the check runs. Fleet maps text files (kallsyms.Options.MapText)
	// and raw snapshots otherwise.
	NoMap bool
	// MaxSymbols bounds a streamed or compressed symbol list's lines
	// (kallsyms.Options.MaxSymbols; 0: kallsyms.DefaultMaxSymbols).
	MaxSymbols int
	Run        Options
	Progress   func(done, total int) // called after each kernel, from one goroutine at a time
}

// KernelFiles is one Kernel for each symbol file (System.map,
// /proc/kallsyms, a kernel image or a snapshot), with nothing else known
// of it: Fleet's input where there are only symbol files.
func KernelFiles(symbols ...string) []Kernel {
	ks := make([]Kernel, len(symbols))
	for i, p := range symbols {
		ks[i] = Kernel{Symbols: p}
	}
	return ks
}

// Fleet checks m against every kernel in parallel, sharing the parsed
// module, and returns one row per kernel in the order given. Each kernel
// is also checked as the module loader checks a module (its
// Module.symvers, its vermagic) where they are given, and against its
// own modules.
//
// Once ctx is done no further kernel is started: the rows of those left
// have Err set to ctx.Err(), which Fleet also returns (it is nil when
// every kernel was checked). A kernel under way finishes first.
func Fleet(ctx context.Context, m *klp.Module, kernels []Kernel, o FleetOptions) ([]KernelResult, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]KernelResult, len(kernels))
	checked := make([]bool, len(kernels))
	var done atomic.Int64
	var progressMu sync.Mutex
	// What a worker keeps from one kernel to the next.
	type worker struct {
		// arena: each compact snapshot decodes into the memory of the
		// one before it, mapped and faulted in once.
		arena *kallsyms.Arena
		// res: each kernel's Resolution is written into the one
		// before it (klp.ResolveOptions.Reuse), once its row is made.
		res *klp.Resolution
	}
	idle := make(chan *worker, workers)
	for range workers {
		idle <- &worker{arena: new(kallsyms.Arena)}
	}
	defer func() {
		for range workers {
			(<-idle).arena.Close()
		}
	}()
	err := par.ForContext(ctx, workers, len(kernels), func(i int) {
		w := <-idle
		out[i], w.res = checkOne(ctx, m, kernels[i], o, w.arena, w.res)
		idle <- w
		checked[i] = true
		n := int(done.Add(1))
		if o.Progress != nil {
			progressMu.Lock()
			o.Progress(n, len(kernels))
			progressMu.Unlock()
		}
	})
	if err != nil {
		for i, k := range kernels {
			if !checked[i] {
				out[i] = KernelResult{Kernel: k.Symbols, Release: k.Release, Err: err}
			}
		}
	}
	return out, err
}

// checkOne checks m against k, with arena for k's index and reuse
// (nil for none) for its Resolution, which it returns for the next
// kernel's: the row made from it holds nothing of its memory.
func checkOne(ctx context.Context, m *klp.Module, k Kernel, o FleetOptions, arena *kallsyms.Arena, reuse *klp.Resolution) (KernelResult, *klp.Resolution) {
	t := time.Now()
	kr := KernelResult{Kernel: k.Symbols, Release: k.Release, Config: k.Config}
	unreadable := func(err error) KernelResult {
		kr.Err = err
		kr.FirstError, kr.FirstErrorKind = err.Error(), diag.KindUnreadable
		kr.Time = time.Since(t)
		return kr
	}
	run, cfg, magicFrom, err := kernelOptions(ctx, k, o.Run)
	if err != nil {
		return unreadable(err), reuse
	}
	kr.VermagicFrom = magicFrom
	// An index per kernel, for one patch's lookups and then closed: the
	// profile MapText is for (a text file is mapped, not read).
	ix, err := kallsyms.Open(k.Symbols, kallsyms.Options{LTO: o.LTO, MapText: true, NoMap: o.NoMap, MaxSymbols: o.MaxSymbols, Arena: arena})
	if err != nil {
		return unreadable(err), reuse
	}
	// Each kernel's index is released as soon as its row is made: a raw
	// snapshot's mapping is not Go heap, and without Close a check of a
	// thousand of them kept every one mapped (6.4 GB resident).
	defer ix.Close()
	// The patch's lookups, told before the first (a compact snapshot
	// readies its names for many: kallsyms.Index.Expect).
	ix.Expect(m.NumRelocs() + len(m.Funcs))
	if k.Ftrace != "" {
		if run.Ftrace, err = ftrace.Open(k.Ftrace, ix); err != nil {
			kr.FtraceErr = err
		} else {
			kr.Ftrace = k.Ftrace
		}
	}
	if run.Kernel.Generation == kgen.Unknown {
		// Each kernel its own generation's rules.
		run.Kernel = TellGeneration(ix, GenerationHints{Release: k.Release, Config: cfg})
	}
	kr.Generation = run.Kernel
	run.Reuse = reuse
	rep, err := Run(m, ix, run)
	if err != nil {
		kr.Err = err
		kr.FirstError, kr.FirstErrorKind = err.Error(), diag.KindUnusable
		if errors.Is(err, ErrArchMismatch) {
			kr.FirstErrorKind = diag.KindWrongArchitecture
		}
		kr.Time = time.Since(t)
		return kr, reuse
	}
	res := rep.Resolution
	kr.Resolved, kr.Deferred, kr.Errors = res.Resolved+res.FuncResolved, res.Deferred+res.FuncDeferred, res.Errors+res.FuncErrors
	kr.LoaderMissing, kr.CodeOnly, kr.UnloadedDepends, kr.NoModules = rep.LoaderMissing, rep.CodeOnly, rep.UnloadedDepends, rep.NoModules
	kr.BuiltIn, kr.InitRefs = res.BuiltIn, len(res.InitRefs)
	kr.Versions, kr.Magic = rep.Versions, rep.Vermagic
	if img := rep.Image; img != nil {
		kr.Errors += len(img.Errors)
	}
	// The first error in the loader's order (Report.Diagnostics).
	// (Report.OK is "no error among them": read off the same list.)
	kr.Diagnostics = rep.Diagnostics(o.Strict)
	d, failed := diag.FirstError(kr.Diagnostics)
	if failed {
		kr.FirstError, kr.FirstErrorKind = d.Message, d.Kind
	}
	kr.OK = !failed
	kr.Time = time.Since(t)
	return kr, res
}

// kernelOptions is run with k's own files: its modules in place of run's,
// its Module.symvers read, its configuration's link options, its vermagic
// given or read from its own modules (magicFrom is then that module's
// file).
func kernelOptions(ctx context.Context, k Kernel, run Options) (_ Options, cfg *Config, magicFrom string, err error) {
	if len(k.Modules) > 0 {
		if run.Modules, err = FindModules(ctx, k.Modules); err != nil {
			return run, nil, "", err
		}
	}
	if k.Symvers != "" {
		if run.Symvers, err = symvers.Open(k.Symvers); err != nil {
			return run, nil, "", err
		}
	}
	if k.Config != "" {
		if cfg, err = OpenConfig(k.Config); err != nil {
			return run, nil, "", err
		}
		run = cfg.Apply(run)
	}
	if k.Vermagic != "" {
		run.Vermagic = k.Vermagic
	} else if len(k.Modules) > 0 && run.Vermagic == "" {
		if run.Vermagic, magicFrom, err = run.Modules.Vermagic(); err != nil {
			return run, nil, "", err
		}
	}
	return run, cfg, magicFrom, nil
}
