// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// TestMain lets the test binary stand in for klpresolve where a command
// runs klpresolve itself as a child (bench's one-shot figures and bench
// proc run os.Executable()): with asCLI set in its environment, which the
// children inherit from a test that sets it, it runs its command line
// instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		setGC(oneShotGC)
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const asCLI = "KLPRESOLVE_TEST_AS_CLI"

// selfAsCLI makes this test binary klpresolve for the processes the test
// starts (asCLI in their environment) and returns its path, or skips the
// test where the binary cannot run itself.
func selfAsCLI(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Skip("no executable path:", err)
	}
	t.Setenv(asCLI, "1")
	if out, err := exec.Command(self, "--version").CombinedOutput(); err != nil {
		// go test -exec qemu-s390x (make ports): the binary is not this
		// machine's, and only the emulator runs it.
		t.Skipf("this test binary cannot run itself as a child: %v %s", err, out)
	}
	// A child built with -race would sleep a second at exit (GORACE's
	// atexit_sleep_ms): 55 children took 50 s.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return self
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func fixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "klp", name)
}

// exampleKallsyms is the shipped example kallsyms.
func exampleKallsyms() string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
}

// exampleWith is a kallsyms file in a temporary folder: the example's
// lines, then extra.
func exampleWith(t *testing.T, extra string) string {
	t.Helper()
	example, err := os.ReadFile(exampleKallsyms())
	require.NoError(t, err)
	k := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(k, append(example, extra...), 0o644))
	return k
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "klpresolve "), out)
	require.Contains(t, out, runtime.Version())
}

// A wrong number of arguments says what the command takes.
func TestArgumentMessages(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "klpresolve: expected one livepatch module, PATCH.ko, got 0 arguments; see 'klpresolve --help'"},
		{[]string{"lookup"}, "klpresolve: lookup: expected one or more SPECs, [object:]name[,sympos] (- reads them from standard input), got 0 arguments; see 'klpresolve lookup --help'"},
		{[]string{"addr"}, "klpresolve: addr: expected one or more addresses"},
		{[]string{"plt", "a.ko", "b.ko"}, "klpresolve: plt: expected one module, MODULE.ko, got 2 arguments"},
		{[]string{"link"}, "klpresolve: link: expected one module, MODULE.ko"},
		{[]string{"check"}, "klpresolve: check: expected one livepatch module, PATCH.ko"},
		{[]string{"convert"}, "klpresolve: convert: expected one relocatable object, OBJ.o"},
		{[]string{"bench", "resolve"}, "klpresolve: bench resolve: expected one livepatch module, PATCH.ko, got 0"},
		// A misspelt command, which the main job would take for a path.
		{[]string{"lookpu", "vfs_read"}, "klpresolve: unknown command \"lookpu\" (did you mean 'klpresolve lookup'?), and no module of that name; see 'klpresolve --help'"},
		{[]string{"objets"}, "klpresolve: unknown command \"objets\" (did you mean 'klpresolve objects'?)"},
		// Arguments to commands that take none are arguments, not commands.
		{[]string{"objects", "extra"}, "klpresolve: objects: expected no arguments, got 1 argument; see 'klpresolve objects --help'"},
		{[]string{"snapshot", "x", "-o", "x.snap"}, "klpresolve: snapshot: expected no arguments, got 1 argument"},
		{[]string{"bench", "kallsyms", "extra"}, "klpresolve: bench kallsyms: expected no arguments, got 1 argument"},
		// bench alone shows its help; a name that is no benchmark is an error.
		{[]string{"bench", "kallsym"}, "klpresolve: bench: unknown benchmark \"kallsym\" (did you mean \"kallsyms\"?); see 'klpresolve bench --help'"},
		{[]string{"bench", "extra"}, "klpresolve: bench: unknown benchmark \"extra\"; see 'klpresolve bench --help'"},
		// --kallsyms: one kernel's symbols but for check, and never empty.
		{[]string{"lookup", "vfs_read", "--kallsyms", "a", "--kallsyms", "b"}, "klpresolve: --kallsyms given 2 times: lookup reads one kernel's symbols (check takes one --kallsyms per kernel)"},
		{[]string{"x.ko", "--kallsyms", "a", "--kallsyms", "b", "--kallsyms", "c"}, "klpresolve: --kallsyms given 3 times: klpresolve reads one kernel's symbols"},
		{[]string{"objects", "--kallsyms", ""}, "klpresolve: --kallsyms: empty path"},
		{[]string{"check", "x.ko", "--kallsyms", "a", "--kallsyms", ""}, "klpresolve: --kallsyms: empty path"},
		{[]string{"check", "x.ko", "--kallsyms", "-", "--kallsyms", "a", "--kallsyms", "-"}, "klpresolve: --kallsyms - given 2 times: standard input holds one kernel's symbols"},
		// --kallsyms and --kernels swapped.
		{[]string{"objects", "--kallsyms", "../../testdata"}, "klpresolve: --kallsyms ../../testdata: a folder, not a symbol file: check --kernels ../../testdata takes a folder of them"},
		{[]string{"check", fixture("livepatch-sample.ko"), "--kernels", "../../testdata/kallsyms/example.txt"}, "klpresolve: --kernels ../../testdata/kallsyms/example.txt: a file, not a folder: give one kernel's symbols with --kallsyms (repeatable), or a folder or quoted glob pattern to --kernels"},
	} {
		code, out, errs := runCLI(t, c.args...)
		require.Equal(t, 2, code, c.args)
		require.Empty(t, out, c.args)
		require.Contains(t, errs, c.want, c.args)
	}
}

// TestOutputToStdout: snapshot and convert write to standard output for
// "-o -" (their "wrote" line goes to standard error), link and the main
// job refuse it (their report is standard output), and a folder is no
// output file.
func TestOutputToStdout(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	for _, raw := range []bool{false, true} {
		args := []string{"snapshot", "--kallsyms", example, "-o", "-"}
		if raw {
			args = append(args, "--raw")
		}
		code, out, errs := runCLI(t, args...)
		require.Equal(t, 0, code, errs)
		form := "compact"
		if raw {
			form = "raw"
		}
		// The size is what went to standard output.
		assert.Equal(t, fmt.Sprintf("wrote -: 3 objects, 27 symbols, %d bytes (%s)\n", len(out), form), errs)
		ix, err := kallsyms.ParseBytes("stdout", []byte(out), kallsyms.Options{})
		require.NoError(t, err, "raw %v", raw)
		s, err := ix.Lookup("vmlinux", "vfs_read", 0)
		require.NoError(t, err)
		assert.Equal(t, uint64(0xffffffff81010180), s.Address)
	}

	code, out, errs := runCLI(t, "convert", fixture("patch.o"), "-o", "-", "--kallsyms", example, "--symbol", "vfs_read")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "wrote -: 1 livepatch symbol\n", errs)
	m, err := klp.Parse("stdout", []byte(out))
	require.NoError(t, err)
	assert.Equal(t, klp.FormatKLP, m.Format)

	for _, args := range [][]string{
		{"link", fixture("livepatch-sample.ko"), "--kallsyms", example, "-o", "-"},
		{fixture("livepatch-sample.ko"), "--kallsyms", example, "--link", "-o", "-"},
	} {
		code, out, errs := runCLI(t, args...)
		assert.Equal(t, 2, code, args)
		assert.Empty(t, out)
		assert.Contains(t, errs, "-o -: the report goes to standard output; give a file for the linked image")
	}
	dir := t.TempDir()
	code, _, errs = runCLI(t, "snapshot", "--kallsyms", example, "-o", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "write "+dir+": is a folder")
}

// fullWriter is a standard output on a full disk.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A report that could not be written is not a success: 'objects >
// /dev/full' exited 0, and a CI step would have taken the lost report
// for a passing one.
func TestStdoutWriteError(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	for _, args := range [][]string{
		{"objects", "--kallsyms", example},
		{"lookup", "vfs_read", "--kallsyms", example, "--format", "json"},
		{fixture("livepatch-sample.ko"), "--kallsyms", example},
	} {
		var errb bytes.Buffer
		code := run(args, strings.NewReader(""), fullWriter{}, &errb)
		assert.Equal(t, 2, code, "%q", args)
		assert.Equal(t, "klpresolve: standard output: no space left on device\n", errb.String(), "%q", args)
	}
	// A command that fails on its own says why, and keeps its status.
	var errb bytes.Buffer
	code := run([]string{"lookup", "no_such_symbol", "--kallsyms", example}, strings.NewReader(""), fullWriter{}, &errb)
	assert.Equal(t, 1, code)
}

// writeCounter counts the writes made to it.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// Standard output is buffered: objects wrote its table cell by cell (25
// system calls for two objects), check its matrix likewise.
func TestStdoutBuffered(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	var out writeCounter
	code := run([]string{"objects", "--kallsyms", example}, strings.NewReader(""), &out, io.Discard)
	require.Equal(t, 0, code)
	assert.Equal(t, 1, out.writes)
	assert.Equal(t, 5, strings.Count(out.String(), "\n"), "%s", out.String())
	assert.True(t, strings.HasPrefix(out.String(), "               OBJECT"), "%q", out.String())

	// Standard error flushes it first: a snapshot written to standard
	// output comes before the "wrote" line about it.
	var both writeCounter
	code = run([]string{"snapshot", "--kallsyms", example, "-o", "-"}, strings.NewReader(""), &both, &both)
	require.Equal(t, 0, code)
	i := strings.Index(both.String(), "wrote -:")
	require.Positive(t, i, "the report is written after the snapshot")
	ix, err := kallsyms.ParseBytes("snap", both.Bytes()[:i], kallsyms.Options{})
	require.NoError(t, err)
	text, err := os.ReadFile(example)
	require.NoError(t, err)
	assert.Equal(t, bytes.Count(text, []byte("\n")), ix.Len(), "a symbol a line of the text")
	assert.Equal(t, 2, both.writes, "the snapshot in one write, then the line")
}

// zeroReader is /dev/zero on standard input: it never ends.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// An interrupt removes the temporary files of the outputs being written,
// and exits with the shell's status for the signal.
func TestOnSignal(t *testing.T) {
	dir := t.TempDir()
	temps := &atomicfile.Temps{}
	var errb bytes.Buffer
	var code int
	err := temps.Write(filepath.Join(dir, "snap"), func(w io.Writer) error {
		code = onSignal(os.Interrupt, temps, &errb)
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, 130, code)
	assert.Equal(t, "klpresolve: interrupt\n", errb.String())
	ents, _ := os.ReadDir(dir)
	assert.Empty(t, ents, "no temporary file left")
	assert.Equal(t, 143, onSignal(syscall.SIGTERM, temps, io.Discard))
}

// TestKASLR: --kaslr-offset and --kaslr-from move a kernel image's (or a
// System.map's) link-time addresses to a running kernel's.
func TestKASLR(t *testing.T) {
	m := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, "lookup", "vfs_read", "--kallsyms", m)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "vfs_read: 0xffffffff813669e0 T")
	code, out, _ = runCLI(t, "lookup", "vfs_read", "--kallsyms", m, "--kaslr-offset", "0x1c000000")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "vfs_read: 0xffffffff9d3669e0 T")
	// A running kernel whose _text is 0x2a000000 up.
	live := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(live, []byte("ffffffffab000000 T _text\nffffffffab000000 T _stext\n"), 0o644))
	code, out, _ = runCLI(t, "lookup", "vfs_read", "--kallsyms", k, "--kaslr-from", live)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "vfs_read: 0xffffffffab3669e0 T")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--kaslr-from", live)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nkernel symbols: "+k+" (addresses moved by the KASLR offset 0x2a000000)\n")

	code, _, errs := runCLI(t, "lookup", "vfs_read", "--kallsyms", m, "--kaslr-offset", "zz")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `--kaslr-offset "zz": not a hex offset such as 0x1c000000`)
	code, _, errs = runCLI(t, "lookup", "vfs_read", "--kallsyms", m, "--kaslr-offset", "1", "--kaslr-from", live)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--kaslr-offset and --kaslr-from both give the KASLR offset: give one")
}

// yesReader is yes(1) on standard input: "y" lines, never ending.
type yesReader struct{}

func (yesReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "y\n"[i%2]
	}
	return len(p) &^ 1, nil
}

// TestEndlessStreams: a stream that is no symbol list nor address list
// fails at its first line, never read to its end (it has none).
func TestEndlessStreams(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"lookup", "vfs_read", "--kallsyms", "-"}, yesReader{}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), `<stdin>:1: line does not start with a hex address: "y"`)

	errb.Reset()
	code = run([]string{"addr", "-", "--kallsyms", filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")}, yesReader{}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), `<stdin>:1: address "y" is not hex`)

	if _, err := os.Stat("/dev/urandom"); err == nil {
		errb.Reset()
		code = run([]string{"lookup", "vfs_read", "--kallsyms", "/dev/urandom"}, strings.NewReader(""), &out, &errb)
		assert.Equal(t, 2, code)
		assert.Contains(t, errb.String(), "/dev/urandom:")
	}
}

// TestFlagValueErrors: a flag's bad value is said in the reader's terms,
// naming the flag, not in those of Go's parsers (strconv, time).
func TestFlagValueErrors(t *testing.T) {
	k := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{ko, "--kallsyms", k, "--link", "--base", "xyz"}, `klpresolve: --base "xyz": not an address such as 0xffffffffc0000000` + "\n"},
		{[]string{"link", ko, "--kallsyms", k, "--percpu-base", "q"}, `klpresolve: --percpu-base "q": not an address such as 0xffffffffc0000000` + "\n"},
		{[]string{"check", ko, "--kallsyms", k, "--max-time", "5q"}, `klpresolve: --max-time "5q": not a duration such as 2s, 500ms or 1m30s; see 'klpresolve check --help'` + "\n"},
		{[]string{ko, "--max-symbols", "1e3"}, `klpresolve: --max-symbols "1e3": not a whole number; see 'klpresolve --help'` + "\n"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, tc.want, errs, "%v", tc.args)
		assert.NotContains(t, errs, "strconv")
	}
}

// TestFlagParity: --strict, --ftrace, --symvers and --vermagic mean the
// same on the main job, link and check. link --strict fails what waits
// for a module; check --symvers and --vermagic check every kernel given
// by its symbols against them, module_layout's CRC first.
func TestFlagParity(t *testing.T) {
	smap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	demo := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	code, out, _ := runCLI(t, "link", demo, "--kallsyms", smap)
	require.Equal(t, 0, code, out)
	code, out, _ = runCLI(t, "link", demo, "--kallsyms", smap, "--strict")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: 4 relocations and patched functions wait for modules that are not loaded (--strict): ext4, xfs\n")
	assert.Contains(t, out, "FAILED: klp_demo (x86_64) links: 68 relocations applied; waits for modules that are not loaded (--strict)\n")
	code, out, _ = runCLI(t, "link", demo, "--kallsyms", smap, "--strict", "--format", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `"ok": false`)

	h47 := testutil.Headers(t, "6.1.0-47-amd64")
	code, out, _ = runCLI(t, "check", demo, "--kallsyms", smap, "--symvers", h47, "--vermagic", "6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions ")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "klp_demo: disagrees about version of symbol module_layout\n")
	assert.Contains(t, out, "module loader: symbol versions checked on 1 of 1 kernel, vermagic on 1; it refuses the patch on 1")
	root := newRoot(strings.NewReader(""), io.Discard, io.Discard, nil)
	for _, cmd := range [][]string{{}, {"link"}, {"check"}} {
		c, _, err := root.Find(cmd)
		require.NoError(t, err)
		for _, flag := range []string{"strict", "ftrace", "symvers", "vermagic", "root", "modules", "kernel-tree"} {
			f := c.Flags().Lookup(flag)
			// (check's --root and --kernel-tree are repeatable: it
			// takes many kernels.)
			if assert.NotNil(t, f, "%s --%s", c.CommandPath(), flag) && !(c.Name() == "check" && (flag == "root" || flag == "kernel-tree")) {
				assert.Equal(t, root.Flags().Lookup(flag).Value.Type(), f.Value.Type(), "%s --%s", c.CommandPath(), flag)
			}
		}
	}
}

// TestNoSync: --no-sync is on the commands that write -o, and the file
// is written whole all the same.
func TestNoSync(t *testing.T) {
	k := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	out := filepath.Join(t.TempDir(), "k.snap")
	code, _, errs := runCLI(t, "snapshot", "--kallsyms", k, "-o", out, "--no-sync")
	require.Equal(t, 0, code, errs)
	code, stdout, _ := runCLI(t, "lookup", "vfs_read", "--kallsyms", out)
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "vfs_read: 0xffffffff81010180 T vmlinux")
	code, _, errs = runCLI(t, "lookup", "vfs_read", "--kallsyms", k, "--no-sync")
	assert.Equal(t, 2, code, "lookup writes no file")
	assert.Contains(t, errs, "unknown flag: --no-sync")
}
