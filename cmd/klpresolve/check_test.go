// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func TestCheckCommand(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	example := exampleKallsyms()
	code, out, _ := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", example, "--kallsyms", k, "--kallsyms", "/nonexistent")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `testdata/kallsyms/example.txt\s+6\.1\?\s+6\s+1\s+0\s+-`, out) // nothing tells: 6.1 assumed
	assert.Regexp(t, `kallsyms-6.1.0-57-amd64.txt\s+6\.1\s+6\s+1\s+0\s+-`, out)
	assert.Regexp(t, `/nonexistent\s+-\s+-\s+-\s+-\s+open /nonexistent: no such file or directory`, out)
	assert.Contains(t, out, "3 kernels: 2 OK, 1 failed")
	// patch.c calls no_such_function: insmod would refuse it on the two
	// kernels that were read, which does not fail them.
	assert.Contains(t, out, `note: insmod would refuse ordinary symbols on 2 kernels (first: no_such_function, "Unknown symbol"); --link checks the whole module`)

	// --kernels DIR, JSON, --strict.
	dir := t.TempDir()
	for i, src := range []string{example, k} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("k%d.txt", i)), b, 0o644))
	}
	code, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", dir, "--format", "json", "--strict")
	assert.Equal(t, 1, code)
	var j struct {
		Kernels []struct {
			Kernel           string
			OK               bool
			Resolved         int
			Deferred         int
			FirstError       *string  `json:"first_error"`
			LoaderUnresolved []string `json:"loader_unresolved"`
		}
		Summary struct{ Kernels, OK, Failed int }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.Kernels, 2)
	assert.Equal(t, 2, j.Summary.Failed)
	assert.Equal(t, "deferred: module xfs is not loaded (--strict)", *j.Kernels[0].FirstError)
	assert.Equal(t, 6, j.Kernels[1].Resolved)
	assert.Equal(t, []string{"no_such_function"}, j.Kernels[1].LoaderUnresolved)

	code, _, errs := runCLI(t, "check", fixture("livepatch-sample.ko"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "check needs --kallsyms")
}

// --format junit: one test case per kernel, in the order given; a kernel
// whose relocations fail is a <failure> with the kernel's message, one that
// cannot be read an <error>, and the loader's note is the case's output.
func TestCheckJUnit(t *testing.T) {
	host := testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt")
	example := exampleKallsyms()
	code, out, _ := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", example,
		"--kallsyms", "/nonexistent", "--kallsyms", host, "--format", "junit")
	assert.Equal(t, 1, code)
	require.True(t, strings.HasPrefix(out, `<?xml version="1.0" encoding="UTF-8"?>`), out)
	type problem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	var r struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name      string   `xml:"name,attr"`
				ClassName string   `xml:"classname,attr"`
				Failure   *problem `xml:"failure"`
				Error     *problem `xml:"error"`
				SystemOut string   `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &r))
	assert.Equal(t, []int{3, 1, 1}, []int{r.Tests, r.Failures, r.Errors})
	require.Len(t, r.Suites, 1)
	assert.Contains(t, r.Suites[0].Name, "livepatch_sample")
	cs := r.Suites[0].Cases
	require.Len(t, cs, 3)
	assert.Equal(t, []string{example, "/nonexistent", host}, []string{cs[0].Name, cs[1].Name, cs[2].Name})
	assert.Equal(t, "klpresolve.check.livepatch_sample", cs[0].ClassName)

	assert.Nil(t, cs[0].Failure)
	assert.Nil(t, cs[0].Error)
	assert.Equal(t, "6 resolved, 1 deferred, 0 errors\nnote: insmod would refuse 1 ordinary symbol (\"Unknown symbol\"); --link checks the whole module:\n  unresolved: no_such_function", cs[0].SystemOut)

	require.NotNil(t, cs[1].Error)
	assert.Nil(t, cs[1].Failure)
	assert.Equal(t, "unreadable", cs[1].Error.Type)
	assert.Equal(t, "open /nonexistent: no such file or directory", cs[1].Error.Message)

	// The 6.18 host has no livepatch support, first, and no jiffies
	// symbol (it builds ext4 and xfs in: their sections are deferred,
	// forever).
	require.NotNil(t, cs[2].Failure)
	const refused = "livepatch_sample: module is marked as livepatch module, but livepatch support is disabled"
	assert.Equal(t, refused, cs[2].Failure.Message)
	assert.Equal(t, "no_livepatch", cs[2].Failure.Type)
	// Every error, in the loader's order, each where it is: the three
	// relocations against jiffies are in three sections.
	assert.Equal(t, "2 resolved, 2 deferred, 3 errors\nerror: no_livepatch: .modinfo: "+refused+"\n"+
		"error: not_found: .klp.rela.vmlinux..text.livepatch_vfs_read+0x3: symbol 'jiffies' not found in symbol table\n"+
		"error: not_found: .klp.rela.vmlinux..text.livepatch_bitmap+0x3: symbol 'jiffies' not found in symbol table\n"+
		"error: not_found: .klp.rela.vmlinux..text.livepatch_jiffies_addr+0x3: symbol 'jiffies' not found in symbol table", cs[2].Failure.Text)
	assert.Contains(t, cs[2].SystemOut, "warning: module xfs looks built into this kernel")

	// A kernel of another architecture is an error of its own type.
	arm64 := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt")
	code, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", arm64, "--format", "junit")
	assert.Equal(t, 1, code)
	r2 := r
	r2.Suites = nil
	require.NoError(t, xml.Unmarshal([]byte(out), &r2))
	require.Len(t, r2.Suites[0].Cases, 1)
	require.NotNil(t, r2.Suites[0].Cases[0].Error)
	assert.Equal(t, "wrong_architecture", r2.Suites[0].Cases[0].Error.Type)

	code, _, errs := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", example, "--format", "yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `--format must be text, json or junit, not "yaml"`)
}

// --kernels DIR takes regular files and links to them, in name order;
// hidden files, links to folders and dangling links are left out, and a
// folder with nothing to check says so.
func TestCheckKernelsFolder(t *testing.T) {
	example := exampleKallsyms()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(example, filepath.Join(dir, "b-link.txt")))
	b, err := os.ReadFile(example)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden"), []byte("junk"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "absent"), filepath.Join(dir, "c-dangling")))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(dir, "d-folder")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "e-sub"), 0o755))
	// Files that are no kernel's symbols are left out, and named: a
	// README, a list, a module compressed (a kallsyms compressed, or a
	// snapshot, is a kernel).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Kernels\n\nOne per build.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hosts.tsv"), []byte("host\tkernel\n"), 0o644))
	ko, err := os.ReadFile(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "patch.ko.gz"), gzipBytes(t, ko), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt.gz"), gzipBytes(t, b), 0o644))
	code, _, errs := runCLI(t, "snapshot", "--kallsyms", example, "-o", filepath.Join(dir, "g.snap"))
	require.Equal(t, 0, code, errs)
	code, out, errs := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", dir)
	assert.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?s)a\.txt\s+6\.1\?\s+6\s+1\s+0\s+-\n.*b-link\.txt\s+6\.1\?\s+6\s+1\s+0\s+-\n.*f\.txt\.gz\s+6\.1\?\s+6\s+1\s+0\s+-\n.*g\.snap\s+6\.1\?\s+6\s+1\s+0\s+-\n`, out)
	assert.Contains(t, out, "4 kernels: 4 OK, 0 failed")
	assert.Equal(t, "note: --kernels "+dir+": left out 3 files that are not a symbol list or snapshot: README.md, hosts.tsv, patch.ko.gz\n", errs)

	nothing := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(nothing, "README"), []byte("kernels go here\n"), 0o644))
	code, _, errs = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", nothing)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--kernels "+nothing+": no kernel symbol files in it: the one file is not a symbol list or snapshot (README)")

	empty := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(empty, "absent"), filepath.Join(empty, "dangling")))
	code, _, errs = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", empty)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--kernels "+empty+": no kernel symbol files in it (regular files or links to them)")

	// A glob pattern, for a folder per kernel: files only, in name order.
	tree := t.TempDir()
	for _, k := range []string{"6.1-b", "6.1-a"} {
		require.NoError(t, os.Mkdir(filepath.Join(tree, k), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(tree, k, "System.map"), b, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "6.18", "System.map.d"), 0o755)) // a folder: left out
	code, out, errs = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", filepath.Join(tree, "*", "System.map*"))
	assert.Equal(t, 0, code, errs)
	assert.Regexp(t, `(?s)6\.1-a/System\.map\s+6\.1\?\s+6\s+1\s+0\s+-\n.*6\.1-b/System\.map\s+6\.1\?\s+6`, out)
	assert.Contains(t, out, "2 kernels: 2 OK, 0 failed")
	code, _, errs = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernels", filepath.Join(tree, "*", "nothing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "no kernel symbol files match it")
}

// check takes the link options for every kernel: they need --link, and a
// page size the patch's architecture has no kernels with is refused
// before any kernel is read.
func TestCheckLinkOptions(t *testing.T) {
	k := exampleKallsyms()
	for _, flag := range [][]string{{"--erratum-843419"}, {"--no-kaslr"}, {"--page-size", "4K"}} {
		code, _, errs := runCLI(t, append([]string{"check", fixture("livepatch-sample.ko"), "--kallsyms", k}, flag...)...)
		assert.Equal(t, 2, code, flag)
		assert.Contains(t, errs, "--erratum-843419, --no-kaslr and --page-size need --link", flag)
	}
	code, stdout, errs := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", "/nonexistent", "--link", "--page-size", "64K")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, errs, "bad page size: 65536: x86_64 kernels have [4096]")
	// 4 KiB is x86_64's: the kernel is checked (and fails on the patch's
	// own unresolved call, as without the flags).
	code, stdout, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", k, "--link", "--page-size", "4096", "--no-kaslr", "--erratum-843419")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "no_such_function: unresolved symbol")
}
