// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
)

// progressMin is the number of kernels from which a terminal gets a
// progress bar.
const progressMin = 8

func newCheckCmd(a *app) *cobra.Command {
	var format, dir, symversPath, magic, ftracePath string
	var strict, link bool
	var lf linkFlags // with --link, for every kernel
	var maxTime time.Duration
	var workers int
	var modules, roots, trees []string
	c := &cobra.Command{
		Use:   "check PATCH.ko (--kallsyms K... | --kernels DIR | --root R)",
		Short: "Resolve a patch against many kernels at once: a matrix",
		Example: `  klpresolve check fix.ko --kallsyms System.map-6.1.0-57-amd64 \
    --kallsyms System.map-6.1.0-58-amd64
  # A folder of snapshots or symbol files, one per kernel; a JUnit report for CI
  klpresolve check fix.ko --kernels kernels/ --link --format junit > report.xml
  klpresolve check fix.ko --kernels 'kernels/*/System.map' --strict
  # Every kernel installed on the machine, with its own modules and headers
  klpresolve check fix.ko --root /
  # Kernels whose packages were unpacked one folder each (dpkg-deb -x
  # linux-image-*.deb and linux-headers-*.deb into roots/6.1.0-57, ...)
  klpresolve check fix.ko --root 'roots/*'`,
		Long: `Resolves PATCH.ko against every kernel given (--kallsyms, repeatable, or every file
of --kernels DIR: kallsyms files, System.maps or snapshots, or links to them; files that
begin as none of these, such as a README, are left out and named on standard error), in
parallel on all cores, sharing the parsed module, and prints one row per kernel:
relocations and patched functions resolved, deferred and failed, and the first error.
--modules checks what each kernel defers to a module it lacks against the module's file
(give one kernel's modules). With --link each kernel also links the whole module.

--root DIR takes the kernels installed under a filesystem root (/, or a folder where a
kernel's packages were unpacked): each boot/System.map-RELEASE (where that is Debian's
one-line placeholder, the -dbg package's usr/lib/debug/boot/System.map-RELEASE) with its
own modules (lib/modules/RELEASE, as --modules), Module.symvers
(usr/src/linux-headers-RELEASE, usr/src/kernels/RELEASE, lib/modules/RELEASE/build,
boot/symvers-RELEASE.gz) and vermagic (its first module's); under /, the running
kernel is one, its symbols /proc/kallsyms where it has no System.map. The patch is then
also checked as the module loader checks it (vermagic, symbol versions), which refuses
it before livepatch sees it.

--format junit writes a JUnit XML report for CI systems (Jenkins, GitLab, GitHub): one
test case per kernel, failed or unreadable kernels as failures and errors.

Exit status: 0 every kernel OK, 1 any kernel failed (or could not be read),
2 usage, 3 --max-time reached (klpresolve stops there, with no verdict).`,
		Args: needArgs(1, 1, "one livepatch module, PATCH.ko"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Kernel after kernel, each one's index garbage once it is
			// checked: the runtime's own pacing keeps the heap near one
			// kernel's (oneShotGC's let a thousand-kernel check grow to
			// several times that).
			setGC(goDefaultGC)
			if err := checkFormat(format, "junit"); err != nil {
				return err
			}
			if !link && lf.given() {
				return &exitError{exitUsage, errors.New("--erratum-843419, --no-kaslr and --page-size need --link")}
			}
			var lo modplt.LinkOptions
			if err := lf.apply(&lo); err != nil {
				return err
			}
			t0 := time.Now()
			var kernels []pipeline.Kernel
			// The kernels given by their symbols alone take --symvers,
			// --vermagic and --ftrace; those of --root and --kernel-tree
			// have their own.
			add := func(paths ...string) {
				for _, p := range paths {
					kernels = append(kernels, pipeline.Kernel{Symbols: p, Symvers: symversPath, Vermagic: magic, Ftrace: ftracePath})
				}
			}
			if cmd.Flags().Changed("kallsyms") {
				add(a.kallsymsPaths...)
			}
			if dir != "" {
				found, skipped, err := kernelFiles(dir)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				if len(skipped) > 0 {
					fmt.Fprintf(a.stderr, "note: --kernels %s: left out %s that %s not a symbol list or snapshot: %s\n",
						dir, count(len(skipped), "file", "files"), pick(len(skipped), "is", "are"), strings.Join(baseNames(skipped, 5), ", "))
				}
				add(found...)
			}
			for _, d := range trees {
				k, err := pipeline.KernelTree(d)
				if err != nil {
					return &exitError{exitUsage, fmt.Errorf("--kernel-tree: %w", err)}
				}
				kernels = append(kernels, k)
			}
			for _, r := range roots {
				found, err := kernelsUnder(cmd.Context(), r)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				kernels = append(kernels, found...)
			}
			if len(kernels) == 0 {
				return &exitError{exitUsage, errors.New("check needs --kallsyms (repeatable), --kernels DIR, --root DIR or --kernel-tree DIR")}
			}
			// The work --max-time bounds.
			var (
				m     *klp.Module
				rows  []pipeline.KernelResult
				st    stage
				drawn bool // the progress line
			)
			err := withDeadline(cmd.Context(), maxTime, &st, func(ctx context.Context) error {
				var err error
				st.set("reading " + args[0])
				m, err = openModule(a, args[0], klp.Parse)
				if err != nil {
					return err
				}
				if err := checkPageSize(m, lo.PageSize); err != nil {
					return err
				}
				mf, err := findModules(ctx, modules)
				if err != nil {
					return err
				}
				o := pipeline.FleetOptions{Workers: workers, Strict: strict, LTO: a.lto, NoMap: a.noMap, MaxSymbols: a.maxSymbols, Run: pipeline.Options{Link: link, LinkOptions: lo, Modules: mf}}
				if a.generation != kgen.Unknown {
					// Every kernel by the rules asked for; else each its own.
					o.Run.Kernel = pipeline.TellGeneration(nil, pipeline.GenerationHints{Asked: a.generation})
				}
				if drawn = len(kernels) >= progressMin && isTerminal(a.stderr); drawn {
					o.Progress = func(done, total int) { drawProgress(a.stderr, done, total) }
				}
				st.set(fmt.Sprintf("checking %s against %s", args[0], count(len(kernels), "kernel", "kernels")))
				rows, _ = pipeline.Fleet(ctx, m, kernels, o) // (cancelled only with --max-time, reported then)
				return nil
			})
			if err != nil {
				return err
			}
			elapsed := time.Since(t0)
			if drawn {
				fmt.Fprint(a.stderr, "\r\033[K")
			}
			failed := 0
			for _, r := range rows {
				if !r.OK {
					failed++
				}
			}
			switch format {
			case "json":
				err = writeJSON(a, failed == 0, checkJSON(m, rows))
			case "junit":
				err = writeJUnit(a.stdout, checkJUnit(m, rows, elapsed))
			default:
				writeMatrix(a.stdout, rows)
				fmt.Fprintf(a.stdout, "%s: %d OK, %d failed (%v)\n", count(len(rows), "kernel", "kernels"), len(rows)-failed, failed, elapsed.Round(time.Millisecond))
				writeLoaderNote(a.stdout, rows)
				if len(roots) > 0 || len(trees) > 0 || symversPath != "" || magic != "" {
					writeLoaderChecks(a.stdout, rows)
				}
			}
			if err != nil {
				return err
			}
			if failed > 0 {
				return &exitError{exitFailed, errReported}
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text, json or junit (JUnit XML for CI)")
	c.Flags().StringVar(&dir, "kernels", "", "a folder of symbol files, one per kernel, or a quoted glob")
	c.Flags().BoolVar(&strict, "strict", false, "treat deferred relocations (module not loaded) as failures")
	c.Flags().BoolVar(&link, "link", false, "also link the whole module against each kernel")
	lf.add(c, "with --link: ")
	c.Flags().DurationVar(&maxTime, "max-time", 0, "stop, and exit 3, when the check has not finished within this (e.g. 30s)")
	c.Flags().IntVar(&workers, "jobs", 0, "kernels checked at once (default: GOMAXPROCS)")
	c.Flags().StringArrayVar(&trees, "kernel-tree", nil, "a kernel build folder, with its Module.symvers, .config, modules; repeatable")
	c.Flags().StringArrayVar(&roots, "root", nil, "a filesystem root with kernels installed; repeatable, or a quoted glob")
	addModulesFlag(c, &modules)
	addSymversFlag(c, &symversPath)
	addVermagicFlag(c, &magic, true)
	c.Flags().StringVar(&ftracePath, "ftrace", "", "the kernel's ftrace call sites: vmlinux, vmlinuz or tracefs's list")
	return c
}

// rootsInside is, when err says root has no kernel, its folders that do
// have one: a folder of roots given as one root.
func rootsInside(root string, err error) []string {
	if !errors.Is(err, pipeline.ErrNoKernels) {
		return nil
	}
	maps, _ := filepath.Glob(filepath.Join(root, "*", "boot", "System.map-*"))
	var dirs []string
	for _, m := range maps {
		if d := filepath.Dir(filepath.Dir(m)); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// kernelsUnder is pipeline.KernelsUnder of root, or of each folder a glob
// pattern matches.
func kernelsUnder(ctx context.Context, root string) ([]pipeline.Kernel, error) {
	if !strings.ContainsAny(root, "*?[") {
		ks, err := pipeline.KernelsUnder(ctx, root)
		if inner := rootsInside(root, err); len(inner) > 0 {
			err = fmt.Errorf("%w (its folders hold kernels: give them all with a quoted pattern, --root '%s')", err, filepath.Join(root, "*"))
		}
		if err != nil {
			return nil, fmt.Errorf("--root: %w", err)
		}
		return ks, nil
	}
	dirs, err := filepath.Glob(root)
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", root, err)
	}
	var out []pipeline.Kernel
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		ks, err := pipeline.KernelsUnder(ctx, d)
		if err != nil && !errors.Is(err, pipeline.ErrNoKernels) {
			return nil, err
		}
		out = append(out, ks...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--root %s: %w in any folder it matches (%s)", root, pipeline.ErrNoKernels, count(len(dirs), "match", "matches"))
	}
	return out, nil
}

// writeLoaderChecks says, for --root, on how many kernels the module
// loader's own checks ran and refused the patch, and which kernels lacked
// the files they need.
func writeLoaderChecks(w io.Writer, rows []pipeline.KernelResult) {
	var noSymvers, noMagic []string
	read, refused := 0, 0
	for _, r := range rows {
		if r.Err != nil {
			continue
		}
		read++
		if r.Versions == nil {
			noSymvers = append(noSymvers, r.Kernel)
		}
		if r.Magic == nil {
			noMagic = append(noMagic, r.Kernel)
		}
		if k := r.FirstErrorKind; k == diag.KindVermagic || k == diag.KindSymbolVersion {
			refused++
		}
	}
	fmt.Fprintf(w, "module loader: symbol versions checked on %d of %s, vermagic on %d", read-len(noSymvers), count(read, "kernel", "kernels"), read-len(noMagic))
	if refused > 0 {
		fmt.Fprintf(w, "; it refuses the patch on %d (rebuild the patch against %s headers)", refused, pick(refused, "that kernel's", "each kernel's"))
	}
	fmt.Fprintln(w)
	if len(noSymvers) > 0 {
		fmt.Fprintf(w, "note: symbol versions not checked on %s without a Module.symvers (install %s headers): %s\n",
			count(len(noSymvers), "kernel", "kernels"), pick(len(noSymvers), "its", "their"), strings.Join(noSymvers, ", "))
	}
	if len(noMagic) > 0 {
		fmt.Fprintf(w, "note: vermagic not checked on %s without modules (lib/modules/RELEASE), which carry it: %s\n",
			count(len(noMagic), "kernel", "kernels"), strings.Join(noMagic, ", "))
	}
}

func writeMatrix(w io.Writer, rows []pipeline.KernelResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "KERNEL\tRULES\tRESOLVED\tDEFERRED\tERRORS\tFIRST ERROR\n")
	for _, r := range rows {
		if r.Err != nil && r.Generation.Generation == kgen.Unknown {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", r.Kernel, r.FirstError)
			continue
		}
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\n", r.Kernel, rulesCell(r.Generation), r.FirstError)
			continue
		}
		first := r.FirstError
		if first == "" {
			first = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", r.Kernel, rulesCell(r.Generation), r.Resolved, r.Deferred, r.Errors, first)
	}
	tw.Flush()
}

// rulesCell is the matrix's RULES cell: the generation whose rules judged
// the kernel, marked "?" where they were assumed or the release is not
// that generation's own (its note says so).
func rulesCell(e kgen.Evidence) string {
	if e.Note() != "" {
		return e.Generation.String() + "?"
	}
	return e.Generation.String()
}

type checkRow struct {
	Kernel string `json:"kernel"`
	// Release (--root): the kernel's release.
	Release string `json:"release,omitempty"`
	// KernelRules: the generation whose rules judged the kernel.
	KernelRules *rulesJSON `json:"kernel_rules,omitempty"`
	Config      string     `json:"config,omitempty"` // the kernel's configuration (check --root)
	// Ftrace (check --root): the kernel's ftrace call sites its patched
	// functions were checked against (its vmlinux); FtraceError, why
	// they could not be read (then not checked: a note).
	Ftrace      string  `json:"ftrace,omitempty"`
	FtraceError string  `json:"ftrace_error,omitempty"`
	OK          bool    `json:"ok"`
	Resolved    int     `json:"resolved"`
	Deferred    int     `json:"deferred"`
	Errors      int     `json:"errors"`
	FirstError  *string `json:"first_error"`
	// FirstErrorKind: pipeline.KernelResult.FirstErrorKind.
	FirstErrorKind string `json:"first_error_kind,omitempty"`
	// Diagnostics: pipeline.KernelResult.Diagnostics, as the main job's.
	Diagnostics []diagnosticJSON `json:"diagnostics,omitempty"`
	// LoaderUnresolved (without --link): ordinary symbols insmod would
	// refuse on this kernel.
	LoaderUnresolved []string `json:"loader_unresolved,omitempty"`
	// KallsymsCodeOnly: pipeline.KernelResult.CodeOnly.
	KallsymsCodeOnly bool `json:"kallsyms_code_only,omitempty"`
	// UnloadedDepends: pipeline.KernelResult.UnloadedDepends.
	UnloadedDepends []string `json:"unloaded_depends,omitempty"`
	// BuiltIn: pipeline.KernelResult.BuiltIn.
	BuiltIn []builtInJSON `json:"builtin_objects,omitempty"`
	// InitMemoryRefs: pipeline.KernelResult.InitRefs.
	InitMemoryRefs int `json:"init_memory_refs,omitempty"`
	// Modversions and Vermagic: the module loader's checks, where the
	// kernel's Module.symvers and vermagic were known (--root), as the
	// main job reports them.
	Modversions *versionsOut `json:"modversions,omitempty"`
	Vermagic    *vermagicOut `json:"vermagic,omitempty"`
	ReadError   *string      `json:"read_error,omitempty"`
	Millis      float64      `json:"ms"`
}

type checkOut struct {
	Module    string     `json:"module"`
	Arch      string     `json:"arch"`
	BigEndian bool       `json:"big_endian,omitempty"`
	Kernels   []checkRow `json:"kernels"`
	Summary   struct {
		Kernels int `json:"kernels"`
		OK      int `json:"ok"`
		Failed  int `json:"failed"`
	} `json:"summary"`
}

func checkJSON(m *klp.Module, rows []pipeline.KernelResult) *checkOut {
	out := &checkOut{Module: m.Path, Arch: m.Arch, BigEndian: elfobj.BigEndian(m.ByteOrder), Kernels: []checkRow{}}
	for _, r := range rows {
		row := checkRow{Kernel: r.Kernel, Release: r.Release, KernelRules: rulesOf(r.Generation), Config: r.Config, OK: r.OK, Resolved: r.Resolved, Deferred: r.Deferred, Errors: r.Errors,
			Millis: float64(r.Time.Microseconds()) / 1e3}
		if r.FirstError != "" {
			s := r.FirstError
			row.FirstError, row.FirstErrorKind = &s, string(r.FirstErrorKind)
		}
		if len(r.Diagnostics) > 0 {
			row.Diagnostics = diagnosticsJSON(r.Diagnostics)
		}
		row.LoaderUnresolved, row.KallsymsCodeOnly, row.UnloadedDepends = r.LoaderMissing, r.CodeOnly, r.UnloadedDepends
		row.BuiltIn, row.InitMemoryRefs = builtInList(r.BuiltIn), r.InitRefs
		row.Modversions, row.Vermagic = versionsJSON(r.Versions), vermagicJSON(r.Magic, r.VermagicFrom)
		row.Ftrace = r.Ftrace
		if r.FtraceErr != nil {
			row.FtraceError = r.FtraceErr.Error()
		}
		if r.Err != nil {
			s := r.Err.Error()
			row.ReadError = &s
		}
		out.Kernels = append(out.Kernels, row)
		if r.OK {
			out.Summary.OK++
		} else {
			out.Summary.Failed++
		}
	}
	out.Summary.Kernels = len(rows)
	return out
}

// writeLoaderNote says on how many kernels insmod would refuse some of the
// module's ordinary symbols (checked without --link; they do not fail a
// row), naming the first.
func writeLoaderNote(w io.Writer, rows []pipeline.KernelResult) {
	// On how many kernels each note holds, and the first such kernel's
	// missing symbol or dependencies.
	missing, codeOnly, deps, builtIn, initRefs, noSites := 0, 0, 0, 0, 0, 0
	var firstMissing, firstNoSites string
	var firstDeps []string
	var firstBuiltIn klp.BuiltIn
	var firstBuiltInKernel string
	for _, r := range rows {
		if r.InitRefs > 0 {
			initRefs++
		}
		if len(r.BuiltIn) > 0 {
			if builtIn++; builtIn == 1 {
				firstBuiltIn, firstBuiltInKernel = r.BuiltIn[0], r.Kernel
			}
		}
		if len(r.LoaderMissing) > 0 {
			if missing++; missing == 1 {
				firstMissing = r.LoaderMissing[0]
			}
		}
		if r.CodeOnly {
			codeOnly++
		}
		if r.FtraceErr != nil {
			if noSites++; noSites == 1 {
				firstNoSites = r.FtraceErr.Error()
			}
		}
		if len(r.UnloadedDepends) > 0 {
			if deps++; deps == 1 {
				firstDeps = r.UnloadedDepends
			}
		}
	}
	if builtIn > 0 {
		fmt.Fprintf(w, "warning: on %s a module the patch waits for looks built in (first: %s on %s, whose vmlinux has %s): livepatch would never apply its relocations nor patch its functions there; --strict fails such kernels\n",
			count(builtIn, "kernel", "kernels"), firstBuiltIn.Object, firstBuiltInKernel, firstBuiltIn.Names[0])
	}
	if initRefs > 0 {
		fmt.Fprintf(w, "warning: on %s the patch refers to vmlinux's init memory, which the kernel frees after boot (the main job lists the relocations)\n", count(initRefs, "kernel", "kernels"))
	}
	if missing > 0 {
		fmt.Fprintf(w, "note: insmod would refuse ordinary symbols on %s (first: %s, \"Unknown symbol\"); --link checks the whole module\n", count(missing, "kernel", "kernels"), firstMissing)
	}
	if codeOnly > 0 {
		fmt.Fprintf(w, "note: %s with unresolved symbols %s code symbols only (a kallsyms without CONFIG_KALLSYMS_ALL): data symbols cannot resolve against %s\n",
			count(codeOnly, "kernel", "kernels"), pick(codeOnly, "lists", "list"), pick(codeOnly, "it; its System.map lists them", "them; their System.maps list them"))
	}
	if noSites > 0 {
		fmt.Fprintf(w, "note: on %s the ftrace call sites could not be read, so the patched functions were not checked for them (first: %s)\n", count(noSites, "kernel", "kernels"), firstNoSites)
	}
	if deps > 0 {
		fmt.Fprintf(w, "note: %s with unresolved symbols %s not loaded what the module depends on (.modinfo depends=; first: %s): modprobe loads a module's dependencies first, insmod does not\n",
			count(deps, "kernel", "kernels"), pick(deps, "has", "have"), strings.Join(firstDeps, ", "))
	}
}

func drawProgress(w io.Writer, done, total int) {
	const width = 40
	n := done * width / total
	fmt.Fprintf(w, "\r[%s%s] %d/%d kernels", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
}

// kernelFiles lists the kernel symbol files of dir, in name order: its
// regular files and symbolic links to regular files (a folder of links to
// /boot/System.map-*), names starting with "." left out, that begin as a
// symbol list or snapshot does (kallsyms.Sniff); the others (a README, a
// checksum list) are returned as skipped. dir may be a glob pattern
// instead ('kernels/*/System.map', quoted so that the shell leaves it),
// for a tree with a folder per kernel. None is an error that says so.
func kernelFiles(dir string) (files, skipped []string, err error) {
	var cands []string
	pattern := strings.ContainsAny(dir, "*?[")
	if pattern {
		m, err := filepath.Glob(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("--kernels %s: %w", dir, err)
		}
		cands = m // sorted
	} else {
		if st, err := os.Stat(dir); err == nil && !st.IsDir() {
			return nil, nil, fmt.Errorf("--kernels %s: a file, not a folder: give one kernel's symbols with --kallsyms (repeatable), or a folder or quoted glob pattern to --kernels", dir)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range ents {
			cands = append(cands, filepath.Join(dir, e.Name()))
		}
	}
	for _, p := range cands {
		if strings.HasPrefix(filepath.Base(p), ".") {
			continue
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue // a folder, a dangling link, a link to a folder
		}
		if ok, err := sniffFile(p); err == nil && !ok {
			skipped = append(skipped, p)
			continue
		}
		files = append(files, p) // one that cannot be read is its row's error
	}
	if len(files) == 0 {
		where := "in it"
		if pattern {
			where = "match it"
		}
		err := fmt.Errorf("--kernels %s: no kernel symbol files %s (regular files or links to them)", dir, where)
		if len(skipped) > 0 {
			err = fmt.Errorf("--kernels %s: no kernel symbol files %s: %s a symbol list or snapshot (%s)", dir, where,
				pick(len(skipped), "the one file is not", "none of the "+count(len(skipped), "file", "files")+" is"), strings.Join(baseNames(skipped, 5), ", "))
		}
		return nil, nil, err
	}
	return files, skipped, nil
}

// sniffFile reports whether the file at p begins as a symbol list or a
// snapshot does (kallsyms.Sniff), once decompressed: a compressed module
// is not a kernel.
func sniffFile(p string) (bool, error) {
	head, err := readHead(p, false)
	if err != nil || input.Detect(head) == input.None {
		return kallsyms.Sniff(head), err
	}
	head, err = readHead(p, true)
	return err == nil && kallsyms.Sniff(head), nil // a corrupt stream is its row's error
}

// readHead reads the first kallsyms.SniffLen bytes of the file at p, or
// of its decompressed content.
func readHead(p string, decompress bool) ([]byte, error) {
	var r io.ReadCloser
	var err error
	if decompress {
		r, err = input.Open(p)
	} else {
		r, err = os.Open(p)
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	head := make([]byte, kallsyms.SniffLen)
	n, err := io.ReadFull(r, head)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return head[:n], err
}

// baseNames are the base names of the first max paths, and how many more.
func baseNames(paths []string, max int) []string {
	var out []string
	for i, p := range paths {
		if i == max {
			out = append(out, fmt.Sprintf("%d more", len(paths)-max))
			break
		}
		out = append(out, filepath.Base(p))
	}
	return out
}
