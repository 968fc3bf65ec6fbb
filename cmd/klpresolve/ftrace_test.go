// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func ftraceFixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "ftrace", name)
}

// TestFtrace: --ftrace reads the kernel's call sites (its vmlinux, or a
// tracefs list) and fails the patched functions without one as
// klp_patch_func() would; the names-only list cannot tell the second
// type_show from the first. A file that is neither is exit 2.
func TestFtrace(t *testing.T) {
	patch, smap := ftraceFixture("patch.ko"), ftraceFixture("System.map")
	code, out, _ := runCLI(t, patch, "--kallsyms", smap, "--ftrace", ftraceFixture("vmlinux"))
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "\nftrace call sites: "+ftraceFixture("vmlinux")+" (5 sites)\n")
	assert.Contains(t, out, "  patched functions (klp_patch)               1 resolved, 2 FAILED\n")
	assert.Contains(t, out, "error: patched function vmlinux:ring_buffer_lock_reserve,0 (declared at .data+0x2d8)\n  livepatch: failed to find location for function 'ring_buffer_lock_reserve'\n  help: ring_buffer_lock_reserve is at 0xffffffff81000080 in vmlinux, and the kernel's ftrace call sites")
	assert.Contains(t, out, "error: patched function vmlinux:type_show,2")

	code, out, _ = runCLI(t, patch, "--kallsyms", smap, "--ftrace", ftraceFixture("available_filter_functions"), "--format", "json")
	assert.Equal(t, 1, code, out)
	var j struct {
		Ftrace struct {
			Source    string
			CallSites int  `json:"call_sites"`
			Addresses bool `json:"addresses"`
		}
		Funcs []struct {
			Name, Status string
			Kind         string `json:"kind"`
		} `json:"funcs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.Equal(t, ftraceFixture("available_filter_functions"), j.Ftrace.Source)
	assert.Equal(t, 5, j.Ftrace.CallSites)
	assert.False(t, j.Ftrace.Addresses)
	var got []string
	for _, f := range j.Funcs {
		got = append(got, f.Name+" "+f.Status+" "+f.Kind)
	}
	assert.Equal(t, []string{"vfs_read resolved ", "ring_buffer_lock_reserve error not_traceable", "type_show resolved "}, got)

	// Without --ftrace nothing says so: the patch resolves.
	code, out, _ = runCLI(t, patch, "--kallsyms", smap)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "ftrace call sites")

	code, _, errOut := runCLI(t, patch, "--kallsyms", smap, "--ftrace", ftraceFixture("patch.c"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--ftrace: "+ftraceFixture("patch.c")+":2: malformed ftrace call-site input: ")
	code, _, errOut = runCLI(t, patch, "--kallsyms", smap, "--ftrace", filepath.Join(t.TempDir(), "none"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no such file or directory")
}

// TestFtraceRoot: --root finds the kernel's vmlinux where its debug
// package installs it; one that cannot be read is a note, not a failure;
// check --root does the same per kernel.
func TestFtraceRoot(t *testing.T) {
	patch := ftraceFixture("patch.ko")
	root, img := ftraceRoot(t, "6.1.0-mini", "System.map", "vmlinux", "usr/lib/debug/boot/vmlinux-")

	code, out, _ := runCLI(t, patch, "--root", root)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "; ftrace call sites "+img+"\n")
	assert.Contains(t, out, "\nftrace call sites: "+img+" (5 sites)\n")
	assert.Contains(t, out, "1 resolved, 2 FAILED")

	code, out, _ = runCLI(t, "check", patch, "--root", root, "--format", "json")
	assert.Equal(t, 1, code, out)
	var j struct {
		Kernels []struct {
			Ftrace         string
			FirstErrorKind string `json:"first_error_kind"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	require.Len(t, j.Kernels, 1)
	assert.Equal(t, img, j.Kernels[0].Ftrace)
	assert.Equal(t, "not_traceable", j.Kernels[0].FirstErrorKind)

	// A vmlinux that is no kernel image: its functions go unchecked, and
	// the report says why.
	require.NoError(t, os.WriteFile(img, []byte("\x7fELF not really"), 0o644))
	code, out, _ = runCLI(t, patch, "--root", root)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nftrace call sites: not read, so patched functions not checked for them: "+img+": malformed ftrace call-site input: not a kernel image")
	code, out, _ = runCLI(t, "check", patch, "--root", root)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "note: on 1 kernel the ftrace call sites could not be read, so the patched functions were not checked for them (first: "+img+": ")
}

// TestFtraceRootARM64: arm64's /boot/vmlinuz is its Image, without
// symbols: --root reads it against /boot's System.map, and the patch's
// notrace functions fail as on x86; lookup --ftrace reads it too.
func TestFtraceRootARM64(t *testing.T) {
	patch := ftraceFixture("arm64/patch.ko")
	root, img := ftraceRoot(t, "6.1.0-mini-arm64", "arm64/System.map", "arm64/Image", "boot/vmlinuz-")

	code, out, _ := runCLI(t, patch, "--root", root)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "; ftrace call sites "+img+"\n")
	assert.Contains(t, out, "\nftrace call sites: "+img+" (5 sites)\n")
	assert.Contains(t, out, "  patched functions (klp_patch)               1 resolved, 2 FAILED\n")
	assert.Contains(t, out, "error: patched function vmlinux:ring_buffer_lock_reserve,0 (declared at .data+0x2b0)\n  livepatch: failed to find location for function 'ring_buffer_lock_reserve'\n  help: ring_buffer_lock_reserve is at 0xffff800008000100 in vmlinux, and the kernel's ftrace call sites ("+img+") have none in it")

	code, out, _ = runCLI(t, "lookup", "vfs_read", "tracing_on", "--kallsyms", ftraceFixture("arm64/System.map"), "--ftrace", img)
	assert.Equal(t, 0, code)
	assert.Equal(t, "vfs_read: 0xffff8000080000e0 T vmlinux position 1; has an ftrace call site\n"+
		"tracing_on: 0xffff800008000130 T vmlinux position 1; no ftrace call site: livepatch cannot patch it\n", out)

	// Symbols that list code only cannot place an Image: exit 2, saying
	// what to give instead.
	var code2 []byte
	for _, l := range strings.SplitAfter(string(readFile(t, ftraceFixture("arm64/System.map"))), "\n") {
		if f := strings.Fields(l); len(f) == 3 && (f[1] == "T" || f[1] == "t") {
			code2 = append(code2, l...)
		}
	}
	ks := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(ks, code2, 0o644))
	code, _, errOut := runCLI(t, "lookup", "vfs_read", "--kallsyms", ks, "--ftrace", img)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--ftrace: "+img+": no ftrace call-site table: an arm64 Image has no symbols, and "+ks+" lists no _text, __start_mcount_loc and __stop_mcount_loc")
}

// ftraceRoot is a root with the fixture smap as boot/System.map-rel and
// the fixture image at at+rel: the root and the image's path.
func ftraceRoot(t *testing.T, rel, smap, image, at string) (root, img string) {
	t.Helper()
	root = t.TempDir()
	img = filepath.Join(root, at+rel)
	for _, d := range []string{filepath.Join(root, "boot"), filepath.Dir(img)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	copyFile(t, ftraceFixture(smap), filepath.Join(root, "boot", "System.map-"+rel))
	copyFile(t, ftraceFixture(image), img)
	return root, img
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// TestLookupFtrace: lookup --ftrace says of each symbol found whether
// livepatch could patch it; a names-only list cannot tell the second
// type_show; exit status is the lookups'.
func TestLookupFtrace(t *testing.T) {
	smap := ftraceFixture("System.map")
	code, out, _ := runCLI(t, "lookup", "vfs_read", "type_show,2", "nothing_here", "--kallsyms", smap, "--ftrace", ftraceFixture("vmlinux"))
	assert.Equal(t, 1, code)
	assert.Equal(t, "vfs_read: 0xffffffff81000070 T vmlinux position 1; has an ftrace call site\n"+
		"type_show,2: 0xffffffff810000d0 t vmlinux position 2; no ftrace call site: livepatch cannot patch it\n"+
		"nothing_here: error: symbol 'nothing_here' not found in symbol table\n", out)
	code, out, _ = runCLI(t, "lookup", "type_show,2", "ring_buffer_lock_reserve", "--kallsyms", smap, "--ftrace", ftraceFixture("available_filter_functions"), "--format", "json")
	assert.Equal(t, 0, code)
	var j struct {
		Results []struct{ Name, Ftrace string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.Equal(t, []struct{ Name, Ftrace string }{{"type_show", "unknown"}, {"ring_buffer_lock_reserve", "not traceable"}}, j.Results)
	code, _, errOut := runCLI(t, "lookup", "vfs_read", "--kallsyms", smap, "--ftrace", smap)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--ftrace: "+smap+":1: malformed ftrace call-site input")
}
