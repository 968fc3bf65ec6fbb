// SPDX-License-Identifier: GPL-2.0-only

// Command klpresolve checks, before anyone runs insmod, that a livepatch
// module resolves against a kernel's symbols, and tells why when it does
// not. See docs/ for every subcommand.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

// Exit statuses.
const (
	exitOK      = 0 // everything resolved
	exitFailed  = 1 // something did not resolve / link
	exitUsage   = 2 // unusable input or bad usage
	exitTooSlow = 3 // --max-time exceeded
)

// exitError carries an exit status up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errReported marks a failure the command has already printed: main
// exits with the status but prints nothing more.
var errReported = errors.New("reported")

func main() {
	// A one-shot process: collecting garbage while the index is built
	// costs more than the memory it would return (two collections of a
	// 5 MB heap took 1.8 ms of a 9.6 ms index build).
	setGC(oneShotGC)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The collector's settings (GOGC percent): oneShotGC for the commands,
// goDefaultGC, the runtime's own, for the benchmarks (see newBenchCmd)
// and for check, which reads kernel after kernel.
const (
	oneShotGC   = 400
	goDefaultGC = 100
)

// setGC sets the collector's percent, unless GOGC is set in the
// environment: that wins.
func setGC(percent int) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(percent)
	}
}

// run executes the command line and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &checkedWriter{w: stdout}
	buf := newBuffered(out)
	temps := &atomicfile.Temps{}
	// Signals are watched for from the first temporary file on: a
	// command that writes no file (most) starts no watcher. (The
	// signal's goroutine writes to the stream itself: a flush from it
	// would race with the command's writes.)
	var watching struct {
		sync.Mutex
		stop func()
	}
	rawStderr := stderr
	temps.Watch = func() {
		stop := stopOnSignal(temps, rawStderr)
		watching.Lock()
		watching.stop = stop
		watching.Unlock()
	}
	defer func() {
		watching.Lock()
		defer watching.Unlock()
		if watching.stop != nil {
			watching.stop()
		}
	}()
	stderr = flushFirst{buf, stderr}
	root := newRoot(stdin, buf, stderr, temps)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		ee = &exitError{exitUsage, err}
	}
	if ee != nil && ee.code != exitFailed && !errors.Is(ee.err, errReported) && wantsJSON(cmd, args) {
		// The JSON contract: a document on standard output whatever
		// happened (docs/json.md).
		_ = writeErrorDoc(buf, commandName(cmd), ee)
	}
	buf.Flush() // its error is out.err
	if out.err != nil && (err == nil || errors.Is(err, out.err)) {
		// A report that did not reach its reader (a full disk, a closed
		// file) is not a success: CI would have taken it for one.
		fmt.Fprintf(stderr, "klpresolve: standard output: %v\n", out.err)
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	if !errors.Is(ee.err, errReported) {
		fmt.Fprintf(stderr, "klpresolve: %v\n", ee.err)
	}
	return ee.code
}

// stopOnSignal makes an interrupt, a termination or a hangup remove the
// temporary files of the outputs being written (temps) before the
// process exits, with the shell's status for the signal (128 + its
// number); the process would otherwise die leaving them beside the
// outputs. It returns the function that stops watching.
func stopOnSignal(temps *atomicfile.Temps, stderr io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			os.Exit(onSignal(s, temps, stderr))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// onSignal cleans up for a signal and returns the exit status.
func onSignal(s os.Signal, temps *atomicfile.Temps, stderr io.Writer) int {
	temps.Cleanup()
	fmt.Fprintf(stderr, "klpresolve: %v\n", s)
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + 2 // an interrupt (os.Interrupt on any system)
}

// checkedWriter is standard output, remembering the first error writing
// it: the reports are written with fmt.Fprintf, whose errors nobody
// reads, and a report lost to a full disk must not exit 0.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Unwrap is the stream written (isTerminal looks at it).
func (c *checkedWriter) Unwrap() io.Writer { return c.w }

// buffered is standard output, buffered: a table goes through tabwriter,
// which writes it cell by cell, and check's matrix of 1,000 kernels took
// 5,000 write system calls. run flushes it at the end.
type buffered struct {
	*bufio.Writer
	under io.Writer
}

func newBuffered(w io.Writer) buffered { return buffered{bufio.NewWriterSize(w, 64<<10), w} }

// Unwrap is the stream written (isTerminal looks at it).
func (b buffered) Unwrap() io.Writer { return b.under }

// flushFirst is standard error, which flushes standard output before each
// write, so that a terminal shows the two in the order they were written
// (a warning after the report lines before it; "wrote" after a snapshot
// written to standard output).
type flushFirst struct {
	out buffered
	w   io.Writer
}

func (f flushFirst) Write(p []byte) (int, error) {
	f.out.Flush() // its error is checkedWriter's
	return f.w.Write(p)
}

// Unwrap is the stream written (isTerminal looks at it).
func (f flushFirst) Unwrap() io.Writer { return f.w }

// fileOf is the file under w (through the writers above), if it is one.
func fileOf(w io.Writer) (*os.File, bool) {
	for {
		switch v := w.(type) {
		case *os.File:
			return v, true
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return nil, false
		}
	}
}

// app holds what every command shares: the streams and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	kallsymsPaths  []string // every --kallsyms given (check uses them all)
	// kernelVersion is --kernel-version; generation what it names
	// (kgen.Unknown without).
	kernelVersion string
	generation    kgen.Generation
	// kaslrOffset, kaslrFrom: --kaslr-offset, --kaslr-from; slide and
	// slideTo what they give (kallsyms.Options).
	kaslrOffset, kaslrFrom string
	slide, slideTo         uint64
	lto                    bool
	noMap                  bool
	maxSymbols             int
	// temps are the temporary files of the outputs being written, which
	// a signal removes (stopOnSignal).
	temps *atomicfile.Temps
	// command names the command run, in every JSON document ("resolve"
	// for the main job, "bench kallsyms").
	command string
	// noSync: --no-sync (atomicfile.Temps.NoSync).
	noSync bool
}

// kallsymsPath is the kernel symbols of a one-kernel command: the last
// --kallsyms given.
func (a *app) kallsymsPath() string {
	if len(a.kallsymsPaths) == 0 {
		return kallsyms.DefaultPath
	}
	return a.kallsymsPaths[len(a.kallsymsPaths)-1]
}

// indexOptions are the options of the command's index: a klpresolve
// process opens one (check: one per kernel, closed after use) and makes a
// few thousand lookups at most, so its text input is mapped, not read,
// unless --no-map says the file may change while klpresolve runs.
func (a *app) indexOptions() kallsyms.Options {
	return kallsyms.Options{LTO: a.lto, MapText: true, NoMap: a.noMap, Slide: a.slide, SlideTo: a.slideTo, MaxSymbols: a.maxSymbols}
}

// kaslr reads --kaslr-offset and --kaslr-from: the offset, or the running
// kernel's _text (its kallsyms' _text, or _stext) that gives it.
func (a *app) kaslr() error {
	if a.kaslrOffset != "" && a.kaslrFrom != "" {
		return &exitError{exitUsage, errors.New("--kaslr-offset and --kaslr-from both give the KASLR offset: give one")}
	}
	if a.kaslrOffset != "" {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(a.kaslrOffset, "0x"), "0X"), 16, 64)
		if err != nil || v == 0 {
			return &exitError{exitUsage, fmt.Errorf("--kaslr-offset %q: not a hex offset such as 0x1c000000", a.kaslrOffset)}
		}
		a.slide = v
	}
	if a.kaslrFrom != "" {
		live, err := kallsyms.Open(a.kaslrFrom, kallsyms.Options{NoMap: true})
		if err != nil {
			return &exitError{exitUsage, fmt.Errorf("--kaslr-from: %w", err)}
		}
		defer live.Close()
		text, ok := live.Find(kallsyms.Vmlinux, "_text", 1)
		if !ok {
			text, ok = live.Find(kallsyms.Vmlinux, "_stext", 1)
		}
		if !ok || text.Address == 0 {
			return &exitError{exitUsage, fmt.Errorf("--kaslr-from %s: no _text nor _stext with an address (read it as root)", a.kaslrFrom)}
		}
		a.slideTo = text.Address
	}
	return nil
}

func (a *app) openIndex() (*kallsyms.Index, error) {
	var ix *kallsyms.Index
	var err error
	opts := a.indexOptions()
	if a.kallsymsPath() == "-" {
		ix, err = kallsyms.Parse("<stdin>", a.stdin, opts)
	} else {
		ix, err = kallsyms.Open(a.kallsymsPath(), opts)
	}
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return ix, nil
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer, temps *atomicfile.Temps) *cobra.Command {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, temps: temps}
	root := &cobra.Command{
		Use:   "klpresolve PATCH.ko",
		Short: "Resolve a livepatch module against a kernel, as the kernel would",
		Example: `  # The running kernel (/proc/kallsyms)
  klpresolve fix.ko
  # Another kernel's symbols; link the whole module too, and write it out
  klpresolve fix.ko --kallsyms System.map-6.1.0-57-amd64 --link -o fix.linked
  # A System.map lists no module: check what waits for one against its file
  klpresolve fix.ko --kallsyms System.map-6.1.0-57-amd64 \
    --modules /lib/modules/6.1.0-57-amd64
  # This machine's kernel as installed: modules, Module.symvers, vermagic too
  klpresolve fix.ko --root /
  # For CI: JSON, and a relocation waiting for a module that is not loaded fails
  klpresolve fix.ko.xz --kallsyms kernels/host.snap --format json --strict`,
		Long: `klpresolve resolves a livepatch module against a kernel's symbols, as the
kernel would when it loads it: every livepatch relocation (.klp.rela sections,
.klp.sym symbols, legacy kpatch dynrelas) and every function the patch replaces.
It applies the rules and messages of the kernel's generation (6.1, 6.12, 7.x),
and says what would fix each failure.

The kernel's symbols come from --kallsyms (/proc/kallsyms by default, a
System.map, a kernel image or a snapshot), or from --root DIR, a kernel
installed under a filesystem root (its symbols, modules, Module.symvers and
configuration).

What waits for a module that is not loaded is deferred; --modules checks it
against the module's file. --symvers and --vermagic check what the module loader
checks. --ftrace checks that livepatch can patch each function. --link links
the whole module too. PATCH.ko may be compressed (zstd, gzip, xz), or - for
standard input.

Defaults: --vermagic is that of the first --modules file; with --root, --ftrace
is the kernel's own vmlinux (a debug package's), tracefs for the running kernel,
else its vmlinuz; --page-size is an arm64 kernel's own where its symbols show
it, 64K on ppc64, else 4K. docs/resolving.md says more.

Exit status: 0 all resolved (deferred allowed); 1 the kernel would refuse or
fail something (or, with --strict, something is deferred); 2 unusable input or
usage; 3 --max-time reached (klpresolve stops there, with no verdict).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          needArgs(1, 1, "one livepatch module, PATCH.ko"),
		Version:       version(),
		// For needArgs's suggestions (cobra's own default when it
		// reports an unknown command itself).
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("klpresolve {{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(flagError)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		a.command = commandName(cmd)
		if a.temps != nil {
			a.temps.NoSync = a.noSync
		}
		if err := checkCounts(cmd); err != nil {
			return err
		}
		if err := a.kaslr(); err != nil {
			return err
		}
		if a.kernelVersion != "" {
			g, err := kgen.Parse(a.kernelVersion)
			if err != nil {
				return &exitError{exitUsage, fmt.Errorf("--kernel-version: %w", err)}
			}
			a.generation = g
		}
		return a.checkKallsymsPaths(cmd)
	}
	addResolveFlags(root, a)
	root.AddCommand(
		newResolveCmd(a),
		newLookupCmd(a),
		newAddrCmd(a),
		newObjectsCmd(a),
		newSnapshotCmd(a),
		newBenchCmd(a),
		newConvertCmd(a),
		newPLTCmd(a),
		newLinkCmd(a),
		newCheckCmd(a),
		newInfoCmd(a),
	)
	// The commands that read a kernel's symbols, and they alone, take
	// the flags that say where and how.
	for _, c := range commandsAt(root, [][]string{{}, {"resolve"}, {"check"}, {"link"}, {"lookup"}, {"addr"}, {"objects"}, {"snapshot"}, {"convert"},
		{"bench", "kallsyms"}, {"bench", "resolve"}, {"bench", "image"}, {"bench", "proc"}}) {
		a.addKernelFlags(c)
	}
	// The commands that write a file with -o.
	for _, c := range commandsAt(root, [][]string{{}, {"resolve"}, {"link"}, {"snapshot"}, {"convert"}}) {
		c.Flags().BoolVar(&a.noSync, "no-sync", false, "write -o without syncing it to disk first (docs/commands.md)")
	}
	addCompletion(root)
	completeValues(root)
	fitHelp(root)
	return root
}

// commandsAt are root's commands at paths ({} is root itself). A path
// that names no command is a mistake in the caller's list: it panics.
func commandsAt(root *cobra.Command, paths [][]string) []*cobra.Command {
	var out []*cobra.Command
	for _, path := range paths {
		c, _, err := root.Find(path)
		if err != nil || len(path) > 0 && c.Name() != path[len(path)-1] {
			panic(fmt.Sprintf("no command %v", path))
		}
		out = append(out, c)
	}
	return out
}

// addKernelFlags adds to c the flags that say where a kernel's symbols
// are and how to read them.
func (a *app) addKernelFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringArrayVar(&a.kallsymsPaths, "kallsyms", []string{kallsyms.DefaultPath},
		"kernel symbols: kallsyms, System.map, image or snapshot; - for stdin")
	f.StringVar(&a.kernelVersion, "kernel-version", "",
		"judge the kernel by this generation's rules: 6.1, 6.12 or 7.2")
	f.StringVar(&a.kaslrOffset, "kaslr-offset", "",
		"move vmlinux's link-time addresses by this KASLR offset (hex)")
	f.StringVar(&a.kaslrFrom, "kaslr-from", "",
		"move them to where this running kernel's kallsyms puts _text")
	f.BoolVar(&a.lto, "lto", false,
		"also match vmlinux names without their .llvm.<digits> suffix (Clang LTO)")
	f.BoolVar(&a.noMap, "no-map", false,
		"read --kallsyms files into memory instead of mapping them")
	f.IntVar(&a.maxSymbols, "max-symbols", kallsyms.DefaultMaxSymbols,
		"most lines read of a compressed or streamed symbol list (docs/limits.md)")
}

// helpWidth is the widest line a help prints: a terminal's 80 columns
// (usageTemplate wraps the flags' usages to it).
const helpWidth = 80

// flagError words a flag's bad value for a reader, not in the terms of
// Go's parsers ("strconv.ParseInt: parsing ...").
func flagError(cmd *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	want := "a value it takes"
	switch iv.GetFlag().Value.Type() {
	case "int", "int64", "uint", "uint64":
		want = "a whole number"
	case "duration":
		want = "a duration such as 2s, 500ms or 1m30s"
	case "bool":
		want = "true or false"
	}
	return fmt.Errorf("--%s %q: not %s; see '%s --help'", iv.GetFlag().Name, iv.GetValue(), want, cmd.CommandPath())
}

// usageTemplate is cobra's usage template with the flags' usages wrapped
// to helpWidth columns (pflag's FlagUsagesWrapped), so that every help
// fits a terminal.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsagesWrapped 80 | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsagesWrapped 80 | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Run "{{.CommandPath}} COMMAND --help" for a command's help.{{end}}
`

// needArgs accepts min to max arguments (max < 0: no maximum) and
// otherwise says what the command takes, where cobra's own message says
// only how many ("accepts 1 arg(s), received 0").
func needArgs(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if !cmd.HasParent() && len(args) > 0 {
			// The main job takes a path where the commands take their
			// name: a misspelt command is not a module that is missing.
			if _, err := os.Stat(args[0]); err != nil {
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return fmt.Errorf("unknown command %q (did you mean '%s %s'?), and no module of that name; see '%s --help'", args[0], cmd.Name(), s[0], cmd.CommandPath())
				}
			}
		}
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		sub := ""
		if cmd.HasParent() { // (main prints "klpresolve: " before it)
			sub = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": "
		}
		return fmt.Errorf("%sexpected %s, got %s; see '%s --help'", sub, what, count(len(args), "argument", "arguments"), cmd.CommandPath())
	}
}

// checkKallsymsPaths refuses what --kallsyms cannot mean: an empty path,
// standard input twice (check read it once, then found it empty), and
// several paths for a command that reads one kernel's symbols (only check
// takes one per kernel), where the last would have been taken without a
// word.
func (a *app) checkKallsymsPaths(cmd *cobra.Command) error {
	stdin := 0
	for _, p := range a.kallsymsPaths {
		switch st, err := os.Stat(p); {
		case p == "":
			return &exitError{exitUsage, errors.New("--kallsyms: empty path")}
		case p == "-":
			stdin++
		case err == nil && st.IsDir():
			return &exitError{exitUsage, fmt.Errorf("--kallsyms %s: a folder, not a symbol file: check --kernels %s takes a folder of them", p, p)}
		}
	}
	if stdin > 1 {
		return &exitError{exitUsage, fmt.Errorf("--kallsyms - given %d times: standard input holds one kernel's symbols", stdin)}
	}
	if len(a.kallsymsPaths) > 1 && cmd.Name() != "check" {
		return &exitError{exitUsage, fmt.Errorf("--kallsyms given %d times: %s reads one kernel's symbols (check takes one --kallsyms per kernel)", len(a.kallsymsPaths), strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "))}
	}
	return nil
}

// checkCounts refuses a negative value given to any count or duration
// flag (--jobs, --rounds, --max-time, ...): where 0 means the default or
// no limit, a negative one was taken for it without a word.
func checkCounts(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		neg := false
		switch f.Value.Type() {
		case "int":
			n, _ := strconv.Atoi(f.Value.String())
			neg = n < 0
		case "duration":
			d, _ := time.ParseDuration(f.Value.String())
			neg = d < 0
		}
		if neg {
			err = &exitError{exitUsage, fmt.Errorf("--%s %s: must not be negative", f.Name, f.Value)}
		}
	})
	return err
}

// version is the module version the binary was built from (go install
// ...@v1.2.3 records it), or "(devel)" with the commit and Go version of
// a build in a checkout.
// commit is the build's commit where the build says it (make build sets
// it with -ldflags -X main.commit=...; a build with -buildvcs=false has
// no other way to know it).
var commit string

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev := ""
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			rev = s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			rev += "+dirty"
		}
	}
	if rev == "" && commit != "" {
		rev = commit
	}
	if rev != "" {
		v += " " + rev
	}
	return v + " " + bi.GoVersion
}

// checkFormat validates a --format value: text, json, or one of the
// command's own formats (more).
func checkFormat(f string, more ...string) error {
	formats := append([]string{"text", "json"}, more...)
	if slices.Contains(formats, f) {
		return nil
	}
	list := strings.Join(formats[:len(formats)-1], ", ") + " or " + formats[len(formats)-1]
	return &exitError{exitUsage, fmt.Errorf("--format must be %s, not %q", list, f)}
}
