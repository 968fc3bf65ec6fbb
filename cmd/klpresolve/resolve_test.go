// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/internal/testutil/testelf"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

func TestMainJob(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	// Flags before and after the module path.
	code, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "OK: 7 relocations: 6 resolved, 1 deferred, 0 errors")
	assert.Contains(t, out, "deferred: module xfs is not loaded")
	code, _, _ = runCLI(t, "--kallsyms", k, "--strict", fixture("livepatch-sample.ko"))
	assert.Equal(t, 1, code, "deferred fails under --strict")

	code, out, _ = runCLI(t, fixture("err-position.ko"), "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "livepatch: symbol position 18 for symbol 'type_show' in object 'vmlinux' not found")
	assert.Contains(t, out, "help: vmlinux has only 17 symbols")

	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--format", "json")
	require.Equal(t, 0, code)
	var j struct {
		Module      string
		Arch        string
		Format      string
		Relocations []struct {
			Section, Offset, Type, Symbol, Object, Name, Status string
			Sympos                                              uint64
			Address                                             *string
			Error                                               *string
		}
		Summary struct {
			OK                         bool
			Resolved, Deferred, Errors int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "x86_64", j.Arch)
	assert.Equal(t, "klp", j.Format)
	assert.True(t, j.Summary.OK)
	assert.Equal(t, 6, j.Summary.Resolved)
	assert.Equal(t, 1, j.Summary.Deferred)
	require.Len(t, j.Relocations, 7)
	r := j.Relocations[1]
	assert.Equal(t, "vfs_read", r.Name)
	assert.Equal(t, "R_X86_64_PLT32", r.Type)
	assert.Equal(t, "0xd", r.Offset)
	require.NotNil(t, r.Address)
	assert.Equal(t, "0xffffffff813669e0", *r.Address)
	assert.Nil(t, r.Error)

	code, _, errOut := runCLI(t, "/nonexistent.ko", "--kallsyms", k)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "/nonexistent.ko")
	code, _, errOut = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--format", "yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--format")
	code, _, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--max-time", "1ns")
	assert.Equal(t, 3, code)
}

func TestConvertCommand(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	out := filepath.Join(t.TempDir(), "p.ko")
	code, _, errOut := runCLI(t, "convert", fixture("patch.o"), "-o", out, "--kallsyms", k,
		"--symbol", "vfs_read", "--symbol", "jiffies", "--symbol", "type_show@ffffffff81120370", "--symbol", "ext4:ext4_read_inode_bitmap")
	require.Equal(t, 0, code, errOut)
	code, stdout, _ := runCLI(t, out, "--kallsyms", k, "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `".klp.sym.vmlinux.type_show,3"`)
	// An ambiguous name without a position is refused with the candidates.
	code, _, errOut = runCLI(t, "convert", fixture("patch.o"), "-o", out, "--kallsyms", k, "--symbol", "type_show")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unresolvable ambiguity")
	// An address spelt 0X, and the specs that are wrong before any lookup.
	code, _, errOut = runCLI(t, "convert", fixture("patch.o"), "-o", out, "--kallsyms", k, "--symbol", "type_show@0XFFFFFFFF81120370")
	assert.Equal(t, 0, code, errOut)
	for spec, msg := range map[string]string{
		"type_show@":                     `symbol "type_show@": no address after @`,
		"@0xffffffff81120370":            `spec "@0xffffffff81120370": empty symbol name`,
		"type_show,3@0xffffffff81120370": `symbol "type_show,3@0xffffffff81120370": both a position and an address; give one`,
		"type_show@zz":                   `type_show: address "zz" is not hex`,
	} {
		code, _, errOut = runCLI(t, "convert", fixture("patch.o"), "-o", out, "--kallsyms", k, "--symbol", spec)
		assert.Equal(t, 2, code, spec)
		assert.Equal(t, "klpresolve: "+msg+"\n", errOut, spec)
	}
}

// Without --link the main job names the ordinary symbols insmod would
// refuse, and still exits 0 when the livepatch relocations resolve.
func TestMainJobLoaderNote(t *testing.T) {
	example := exampleKallsyms()
	code, stdout, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "note: insmod would refuse 1 ordinary symbol (\"Unknown symbol\"); --link checks the whole module:\n  unresolved: no_such_function\nOK: 7 relocations")
	code, stdout, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", example, "--format", "json")
	assert.Equal(t, 0, code)
	var j struct {
		LoaderUnresolved []string `json:"loader_unresolved"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &j))
	assert.Equal(t, []string{"no_such_function"}, j.LoaderUnresolved)
}

func TestMainJobLink(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	out := filepath.Join(t.TempDir(), "p.linked")
	code, stdout, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--link", "--cfi-shadow", "-o", out)
	assert.Equal(t, 1, code) // resolves, but no_such_function does not link
	// The last line is the verdict, as the exit status gives it.
	assert.True(t, strings.HasSuffix(stdout, "\nFAILED: 7 relocations: 6 resolved, 1 deferred, 0 errors; the module does not link: 1 failed, 1 unresolved symbol\n"), stdout)
	assert.NotContains(t, stdout, "OK:")
	assert.Contains(t, stdout, "link: 6 relocations applied, 1 failed, 1 unresolved symbol")
	assert.Contains(t, stdout, "link error: .rela.text.livepatch_missing+0x1: R_X86_64_PLT32 against no_such_function: unresolved symbol")
	assert.Regexp(t, `cfi: text 0xffffffffc0000000-0xffffffffc0000065, 1 page in the shadow, check function 0xffffffffc0000000`, stdout)
	_, err := os.Stat(out)
	assert.NoError(t, err)
	// Without --cfi-shadow: 6.1 keeps no shadow, and the report says so.
	code, stdout, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--link")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "\nkernel rules: Linux 6.1 (from the kernel's symbols: module_enable_x() among them)\n")
	assert.Contains(t, stdout, "\ncfi: not recorded in a CFI shadow: Linux 6.1 keeps none (kernel/cfi.c's shadow is 5.13-6.0's; kCFI checks each call's type instead); --cfi-shadow records it anyway\n")
	assert.NotContains(t, stdout, "cfi: text")

	code, stdout, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--link", "--format", "json")
	assert.Equal(t, 1, code)
	var rules struct {
		Rules struct {
			Generation, Source, Detail string
			Exact                      bool
		} `json:"kernel_rules"`
		CFI     *struct{} `json:"cfi"`
		CFINote string    `json:"cfi_note"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rules))
	assert.Equal(t, "6.1", rules.Rules.Generation)
	assert.Equal(t, "the kernel's symbols", rules.Rules.Source)
	assert.Equal(t, "module_enable_x() among them", rules.Rules.Detail)
	assert.Nil(t, rules.CFI)
	assert.Contains(t, rules.CFINote, "not recorded in a CFI shadow: Linux 6.1 keeps none")

	code, stdout, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--link", "--cfi-shadow", "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		Summary struct {
			OK                         bool
			Resolved, Deferred, Errors int
		}
		Link struct {
			OK         bool
			Relocs     int `json:"relocations_applied"`
			Unresolved []string
		}
		CFI struct {
			Pages    int
			Shadowed bool
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &j))
	assert.Equal(t, 6, j.Summary.Resolved)
	assert.False(t, j.Summary.OK, "the exit status is 1: the module does not link")
	assert.False(t, j.Link.OK)
	assert.Equal(t, 6, j.Link.Relocs)
	assert.Equal(t, []string{"no_such_function"}, j.Link.Unresolved)
	assert.Equal(t, 1, j.CFI.Pages)
	assert.True(t, j.CFI.Shadowed)

	for _, flag := range [][]string{{"-o", out}, {"--base", "0xffffffffc0000000"}, {"--cfi-shadow"}, {"--erratum-843419"}, {"--no-kaslr"}, {"--page-size", "4K"}} {
		// Refused before any symbol is read: --kallsyms names no file.
		code, _, errs := runCLI(t, append([]string{fixture("livepatch-sample.ko"), "--kallsyms", "/nonexistent"}, flag...)...)
		assert.Equal(t, 2, code, flag)
		assert.Contains(t, errs, "-o, --base, --cfi-shadow, --erratum-843419, --no-kaslr and --page-size need --link", flag)
	}
}

// The main job's JSON for a failing relocation (the kernel's message, the
// help, no address) and for a kpatch module's patched functions.
func TestMainJobJSONErrorsAndFuncs(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	type reloc struct {
		Name, Status   string
		Offset         string
		Sympos         uint64
		Address, Error *string
		Help           *string
		Kind           string
	}
	var j struct {
		Format      string
		Relocations []reloc
		Funcs       []struct {
			Name, Object   string
			Sympos         uint64
			Address, Error *string
		}
		Summary struct{ Resolved, Deferred, Errors int }
	}
	code, out, _ := runCLI(t, fixture("err-position.ko"), "--kallsyms", k, "--format", "json")
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	var bad []reloc
	for _, r := range j.Relocations {
		if r.Error != nil {
			bad = append(bad, r)
		}
	}
	require.Len(t, bad, 1)
	assert.Equal(t, "type_show", bad[0].Name)
	assert.Equal(t, uint64(18), bad[0].Sympos)
	assert.Equal(t, "error", bad[0].Status)
	assert.Nil(t, bad[0].Address)
	assert.Equal(t, "symbol position 18 for symbol 'type_show' in object 'vmlinux' not found", *bad[0].Error)
	require.NotNil(t, bad[0].Help)
	assert.Contains(t, *bad[0].Help, "vmlinux has only 17 symbols")
	assert.Equal(t, "no_such_position", bad[0].Kind)
	for _, r := range j.Relocations {
		if r.Error == nil {
			assert.Empty(t, r.Kind, "no kind without an error")
		}
	}
	assert.Equal(t, struct{ Resolved, Deferred, Errors int }{5, 1, 1}, j.Summary)
	assert.Empty(t, j.Funcs)

	j.Relocations, j.Funcs = nil, nil
	code, out, _ = runCLI(t, fixture("kpatch-sample.ko"), "--kallsyms", k, "--format", "json")
	require.Equal(t, 1, code, "its external vfs_read is not exported: the kpatch core fails it")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "kpatch", j.Format)
	require.Len(t, j.Funcs, 2)
	assert.Equal(t, "type_show", j.Funcs[1].Name)
	assert.Equal(t, uint64(2), j.Funcs[1].Sympos)
	require.NotNil(t, j.Funcs[1].Address)
	ix, err := kallsyms.Open(k, kallsyms.Options{})
	require.NoError(t, err)
	want, err := ix.Lookup(kallsyms.Vmlinux, "type_show", 2)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%#x", want.Address), *j.Funcs[1].Address)
	assert.Nil(t, j.Funcs[1].Error)
	assert.Equal(t, struct{ Resolved, Deferred, Errors int }{3, 1, 1}, j.Summary)
	assert.Equal(t, "0x8", j.Relocations[1].Offset, "the dynrela's destination offset")

	code, out, _ = runCLI(t, fixture("kpatch-sample.ko"), "--kallsyms", k)
	require.Equal(t, 1, code)
	assert.Contains(t, out, "\n  kpatch: symbol 'vfs_read' not found in symbol table\n  kpatch: unable to find symbol 'vfs_read'\n")
}

// A negative count or duration is refused, not taken for the default.
func TestNegativeCounts(t *testing.T) {
	ex := exampleKallsyms()
	for _, args := range [][]string{
		{"check", fixture("livepatch-sample.ko"), "--kallsyms", ex, "--jobs", "-3"},
		{fixture("livepatch-sample.ko"), "--kallsyms", ex, "--max-time", "-5ms"},
		{"bench", "proc", "--rounds", "-1"},
		{"bench", "cfi", "--hold", "-1ms"},
	} {
		code, out, errs := runCLI(t, args...)
		require.Equal(t, 2, code, args)
		require.Empty(t, out, args)
		require.Contains(t, errs, "must not be negative", args)
	}
	code, _, errs := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", ex, "--max-time", "0")
	require.Equal(t, 0, code, errs)
}

// TestArchMismatchCLI: the main job and link refuse a kernel of another
// architecture as unusable input (exit 2), naming the file.
func TestArchMismatchCLI(t *testing.T) {
	arm64 := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt")
	code, out, errOut := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", arm64)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, arm64+": the module and the kernel are for different architectures: the module is x86_64, the kernel is arm64 (its vmlinux has primary_entry)")
	amd64 := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	code, _, errOut = runCLI(t, "link", testutil.Corpus(t, "arm64/modules/md4.ko"), "--kallsyms", amd64)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the module is arm64, the kernel is x86_64")
	// convert, which counts positions in the kernel it is given.
	outKo := filepath.Join(t.TempDir(), "p.ko")
	code, _, errOut = runCLI(t, "convert", fixture("patch.o"), "-o", outKo, "--kallsyms", arm64, "--symbol", "vfs_read")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "the module is x86_64, the kernel is arm64")
	assert.NoFileExists(t, outKo)
}

// TestModuleFromStdin: "-" reads the module from standard input for the
// main job, check, link and plt; not when the symbols come from there too.
func TestModuleFromStdin(t *testing.T) {
	example := exampleKallsyms()
	sample, err := os.ReadFile(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	runIn := func(in []byte, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(args, bytes.NewReader(in), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := runIn(sample, "-", "--kallsyms", example)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "module <stdin> (name livepatch_sample): format klp, arch x86_64, livepatch=Y")
	assert.Contains(t, out, "OK: 7 relocations: 6 resolved, 1 deferred, 0 errors")

	code, out, errs = runIn(sample, "check", "-", "--kallsyms", example)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "1 kernel: 1 OK, 0 failed")

	md4, err := os.ReadFile(testutil.Corpus(t, "amd64/modules/md4.ko"))
	require.NoError(t, err)
	code, out, errs = runIn(md4, "link", "-", "--kallsyms", testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"))
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "OK: md4 (x86_64) links: 79 relocations applied")
	code, out, errs = runIn(md4, "plt", "-")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "md4 (x86_64)")

	// convert, from standard input to standard output, into the main job.
	obj, err := os.ReadFile(fixture("patch.o"))
	require.NoError(t, err)
	code, ko, errs := runIn(obj, "convert", "-", "-o", "-", "--kallsyms", example, "--symbol", "vfs_read")
	require.Equal(t, 0, code, errs)
	code, out, errs = runIn([]byte(ko), "-", "--kallsyms", example)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "OK: 1 relocation: 1 resolved, 0 deferred, 0 errors")

	for _, args := range [][]string{{"-", "--kallsyms", "-"}, {"link", "-", "--kallsyms", "-"}, {"check", "-", "--kallsyms", "-"}, {"convert", "-", "-o", "x.ko", "--kallsyms", "-", "--symbol", "vfs_read"}} {
		code, out, errs := runIn(sample, args...)
		assert.Equal(t, 2, code, args)
		assert.Empty(t, out, args)
		assert.Contains(t, errs, "standard input cannot hold both the module (-) and the kernel's symbols (--kallsyms -)", args)
	}
}

// TestCodeOnlyJSON: the main job's JSON flags a code-only symbol list when
// ordinary symbols do not resolve, with and without --link.
func TestCodeOnlyJSON(t *testing.T) {
	host := testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt")
	var j struct {
		KallsymsCodeOnly bool `json:"kallsyms_code_only"`
		Link             *struct {
			KallsymsCodeOnly bool `json:"kallsyms_code_only"`
		}
	}
	_, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", host, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.True(t, j.KallsymsCodeOnly)
	_, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", host, "--format", "json", "--link")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.NotNil(t, j.Link)
	assert.True(t, j.Link.KallsymsCodeOnly)
	_, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), "--format", "json")
	var full map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &full))
	assert.NotContains(t, full, "kallsyms_code_only", "a list with data symbols")

	// check: a closing note, and the row's field.
	amd64 := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	_, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", amd64, "--kallsyms", host)
	assert.Contains(t, out, "note: 1 kernel with unresolved symbols lists code symbols only")
	_, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", host, "--kallsyms", host)
	assert.Contains(t, out, "note: 2 kernels with unresolved symbols list code symbols only (a kallsyms without CONFIG_KALLSYMS_ALL): data symbols cannot resolve against them; their System.maps list them\n")
	_, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", amd64, "--kallsyms", host, "--format", "json")
	var c struct {
		Kernels []struct {
			KallsymsCodeOnly bool `json:"kallsyms_code_only"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Kernels, 2)
	assert.Equal(t, []bool{false, true}, []bool{c.Kernels[0].KallsymsCodeOnly, c.Kernels[1].KallsymsCodeOnly})
}

// TestUnloadedDependsCLI: af_key.ko depends on xfrm_algo (.modinfo
// depends=), which neither the amd64 kallsyms nor the System.map has, and
// 11 of its symbols are xfrm_algo's exports: every report says that the
// dependency is missing, which insmod would not load and modprobe would.
func TestUnloadedDependsCLI(t *testing.T) {
	mod := testutil.Corpus(t, "amd64/modules/af_key.ko")
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	sysmap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	note := "(the module depends on xfrm_algo (.modinfo depends=), which " + k + " does not have: its exports are not there to resolve against; modprobe loads a module's dependencies first, insmod does not)"

	code, out, _ := runCLI(t, mod, "--kallsyms", k)
	assert.Equal(t, 0, code, "no livepatch relocation fails")
	assert.Contains(t, out, "  unresolved: xfrm_probe_algs\n  "+note+"\nOK: 0 relocations")
	assert.NotContains(t, out, "lists no module", "this kallsyms lists 61")
	code, out, _ = runCLI(t, mod, "--kallsyms", k, "--link")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "  unresolved: xfrm_probe_algs\n  "+note+"\n")
	code, out, _ = runCLI(t, "link", mod, "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "unresolved: xfrm_probe_algs\n"+note+"\n")

	var j struct {
		UnloadedDepends []string `json:"unloaded_depends"`
		Link            *struct {
			UnloadedDepends []string `json:"unloaded_depends"`
		}
	}
	_, out, _ = runCLI(t, mod, "--kallsyms", k, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, []string{"xfrm_algo"}, j.UnloadedDepends)
	_, out, _ = runCLI(t, mod, "--kallsyms", k, "--format", "json", "--link")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.NotNil(t, j.Link)
	assert.Equal(t, []string{"xfrm_algo"}, j.Link.UnloadedDepends)
	_, out, _ = runCLI(t, "link", mod, "--kallsyms", k, "--format", "json")
	j.UnloadedDepends = nil
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, []string{"xfrm_algo"}, j.UnloadedDepends)

	// check: a closing note, the row's field, and JUnit's system-out. md4
	// depends on nothing, so it gets no note.
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", k, "--kallsyms", sysmap)
	assert.Contains(t, out, "note: 2 kernels with unresolved symbols have not loaded what the module depends on (.modinfo depends=; first: xfrm_algo)")
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", sysmap, "--format", "junit")
	assert.Contains(t, out, "(the module depends on xfrm_algo (.modinfo depends=), which "+sysmap+" does not have (it lists no module at all, as a System.map never does)")
	_, out, _ = runCLI(t, "check", testutil.Corpus(t, "amd64/modules/md4.ko"), "--kallsyms", k, "--format", "json")
	assert.NotContains(t, out, "unloaded_depends")
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", k, "--format", "json")
	var c struct {
		Kernels []struct {
			UnloadedDepends []string `json:"unloaded_depends"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Kernels, 1)
	assert.Equal(t, []string{"xfrm_algo"}, c.Kernels[0].UnloadedDepends)
}

// A module read from a stream that is no module is refused at its first
// bytes: '/dev/zero' or '-' fed zeros read 2 GiB (6.3 GB resident, 21 s)
// before saying the input was too large.
func TestModuleStreamRefusedAtOnce(t *testing.T) {
	example := exampleKallsyms()
	for _, args := range [][]string{
		{"-", "--kallsyms", example},
		{"plt", "-"},
		{"link", "-", "--kallsyms", example},
	} {
		var out, errb bytes.Buffer
		code := run(args, zeroReader{}, &out, &errb)
		assert.Equal(t, 2, code, "%q", args)
		assert.Equal(t, "klpresolve: <stdin>: not an ELF file (no \\x7fELF magic)\n", errb.String(), "%q", args)
	}
}

// A patch for fuse, which Debian builds as a module and the 6.18
// firecracker kernel builds in: against Debian's kallsyms it resolves
// (fuse loaded), against its System.map it waits for fuse, and against
// the firecracker kernel it would wait forever, which every report says.
func TestBuiltInCLI(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	sysmap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	fc := testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt")
	dir := t.TempDir()
	obj, ko := filepath.Join(dir, "fuse.o"), filepath.Join(dir, "fuse.ko")
	require.NoError(t, os.WriteFile(obj, testelf.X86Calls(".text.livepatch_fuse", elf.R_X86_64_PLT32, "fuse_get_req", "fuse_dev_release"), 0o644))
	code, _, stderr := runCLI(t, "convert", obj, "-o", ko, "--kallsyms", k, "--symbol", "fuse:fuse_get_req", "--symbol", "fuse:fuse_dev_release")
	require.Equal(t, 0, code, stderr)

	code, out, _ := runCLI(t, ko, "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "built in")
	code, out, _ = runCLI(t, ko, "--kallsyms", sysmap)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "deferred: module fuse is not loaded in this kernel")
	assert.NotContains(t, out, "built in")
	code, out, _ = runCLI(t, ko, "--kallsyms", fc)
	assert.Equal(t, 0, code, "the kernel loads the patch all the same")
	assert.Contains(t, out, "warning: module fuse looks built into this kernel (vmlinux has fuse_dev_release, fuse_get_req, which the patch names in fuse): a built-in module never loads")
	assert.NotContains(t, out, "deferred: module fuse")
	code, _, _ = runCLI(t, ko, "--kallsyms", fc, "--strict")
	assert.Equal(t, 1, code)

	var j struct {
		Deferred []string `json:"deferred_objects"`
		BuiltIn  []struct {
			Object string
			Names  []string
		} `json:"builtin_objects"`
	}
	_, out, _ = runCLI(t, ko, "--kallsyms", fc, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, []string{"fuse"}, j.Deferred)
	require.Len(t, j.BuiltIn, 1)
	assert.Equal(t, "fuse", j.BuiltIn[0].Object)
	assert.Equal(t, []string{"fuse_dev_release", "fuse_get_req"}, j.BuiltIn[0].Names)
	_, out, _ = runCLI(t, ko, "--kallsyms", sysmap, "--format", "json")
	assert.NotContains(t, out, "builtin_objects")

	code, out, _ = runCLI(t, "check", ko, "--kallsyms", k, "--kallsyms", sysmap, "--kallsyms", fc)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "warning: on 1 kernel a module the patch waits for looks built in (first: fuse on "+fc+", whose vmlinux has fuse_dev_release)")
	code, out, _ = runCLI(t, "check", ko, "--kallsyms", sysmap, "--kallsyms", fc, "--strict", "--format", "json")
	assert.Equal(t, 1, code)
	var c struct {
		Kernels []struct {
			FirstError string                    `json:"first_error"`
			BuiltIn    []struct{ Object string } `json:"builtin_objects"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Kernels, 2)
	assert.Equal(t, "deferred: module fuse is not loaded (--strict)", c.Kernels[0].FirstError)
	assert.Empty(t, c.Kernels[0].BuiltIn)
	assert.Equal(t, "deferred: module fuse looks built in, and would never load (--strict)", c.Kernels[1].FirstError)
	require.Len(t, c.Kernels[1].BuiltIn, 1)
	_, out, _ = runCLI(t, "check", ko, "--kallsyms", fc, "--format", "junit")
	assert.Contains(t, out, "warning: module fuse looks built into this kernel")
}

// Patched functions: the main job tallies them beside the sections, names
// each failure with the kernel's message, and fails on one; JSON lists
// them; check counts them in its rows.
func TestPatchedFuncsCLI(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, fixture("klp-patch.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "  .klp.rela.vmlinux..text.livepatch_vfs_read  1 resolved\n  patched functions (klp_patch)               3 resolved, 1 deferred\n")
	assert.Contains(t, out, "deferred: module xfs is not loaded in this kernel; its functions are patched when it loads\n")
	assert.Contains(t, out, "OK: 1 relocation: 1 resolved, 0 deferred, 0 errors; 4 patched functions: 3 resolved, 1 deferred, 0 errors\n")
	code, _, _ = runCLI(t, fixture("klp-patch.ko"), "--kallsyms", k, "--strict")
	assert.Equal(t, 1, code, "a deferred function fails --strict")

	code, out, _ = runCLI(t, fixture("klp-patch-broken.ko"), "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: patched function vmlinux:no_such_function,0 (declared at .data+0x7f0)\n  livepatch: symbol 'no_such_function' not found in symbol table\n")
	assert.Contains(t, out, "error: patched function vmlinux:type_show,0 (declared at .data+0x888)\n  livepatch: unresolvable ambiguity for symbol 'type_show' in object '(null)'\n  help: 17 symbols named \"type_show\" in vmlinux; give a sympos:")
	assert.Contains(t, out, "FAILED: 1 relocation: 1 resolved, 0 deferred, 0 errors; 7 patched functions: 3 resolved, 1 deferred, 3 errors\n")

	var j struct {
		FuncSource string `json:"func_source"`
		Funcs      []struct {
			Name, Object, Declared, Status, Kind string
			Sympos                               uint64
			Address, Error                       *string
		}
		Summary struct {
			OK bool
			R  int `json:"func_resolved"`
			D  int `json:"func_deferred"`
			E  int `json:"func_errors"`
		}
	}
	_, out, _ = runCLI(t, fixture("klp-patch-broken.ko"), "--kallsyms", k, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "klp_patch", j.FuncSource)
	require.Len(t, j.Funcs, 7)
	assert.Equal(t, "type_show", j.Funcs[1].Name)
	assert.Equal(t, uint64(3), j.Funcs[1].Sympos)
	assert.Equal(t, "resolved", j.Funcs[1].Status)
	require.NotNil(t, j.Funcs[1].Address)
	assert.Equal(t, "0xffffffff81120370", *j.Funcs[1].Address)
	assert.Equal(t, "not_found", j.Funcs[2].Kind)
	assert.Nil(t, j.Funcs[2].Address)
	assert.Equal(t, ".data+0x7f0", j.Funcs[2].Declared)
	assert.Equal(t, "deferred", j.Funcs[6].Status)
	assert.Equal(t, []int{3, 1, 3}, []int{j.Summary.R, j.Summary.D, j.Summary.E})
	assert.False(t, j.Summary.OK)

	code, out, _ = runCLI(t, "check", fixture("klp-patch-broken.ko"), "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var c struct {
		Kernels []struct {
			Resolved, Deferred, Errors int
			FirstError                 string `json:"first_error"`
			FirstErrorKind             string `json:"first_error_kind"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Kernels, 1)
	assert.Equal(t, []int{4, 1, 3}, []int{c.Kernels[0].Resolved, c.Kernels[0].Deferred, c.Kernels[0].Errors}, "relocations and functions together")
	assert.Equal(t, "patched function vmlinux:no_such_function: symbol 'no_such_function' not found in symbol table", c.Kernels[0].FirstError)
	assert.Equal(t, "not_found", c.Kernels[0].FirstErrorKind)
}

// The 6.18 firecracker kernel has no CONFIG_LIVEPATCH: every report says
// the kernel refuses the module, and it fails.
func TestNoLivepatchCLI(t *testing.T) {
	fc := testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt")
	code, out, _ := runCLI(t, fixture("klp-patch.ko"), "--kallsyms", fc)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n  kernel: klp_patch: module is marked as livepatch module, but livepatch support is disabled\n  help: this kernel was built without CONFIG_LIVEPATCH")
	assert.Contains(t, out, "; the kernel has no livepatch support\n")
	var j struct {
		LoadError *struct{ Error, Kind, Help string } `json:"load_error"`
	}
	_, out, _ = runCLI(t, fixture("klp-patch.ko"), "--kallsyms", fc, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.NotNil(t, j.LoadError)
	assert.Equal(t, "no_livepatch", j.LoadError.Kind)
	_, out, _ = runCLI(t, fixture("klp-patch.ko"), "--kallsyms", testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), "--format", "json")
	assert.NotContains(t, out, "load_error")

	code, out, _ = runCLI(t, "check", fixture("livepatch-sample.ko"), "--kallsyms", fc, "--format", "junit")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `<failure message="livepatch_sample: module is marked as livepatch module, but livepatch support is disabled" type="no_livepatch">`)
}

// A relocation to vmlinux's init memory is applied, and warned about.
func TestInitMemoryCLI(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	ko, err := klp.Convert("obj.o", testelf.X86Calls(".text.fn", elf.R_X86_64_PC32, "boot_command_line"), []klp.ConvertSymbol{{Object: "vmlinux", Name: "boot_command_line"}})
	require.NoError(t, err)
	mod := filepath.Join(t.TempDir(), "init.ko")
	require.NoError(t, os.WriteFile(mod, ko, 0o644))
	code, out, _ := runCLI(t, mod, "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "warning: 1 relocation refers to vmlinux's init memory, which the kernel frees after boot: the patched code would use freed memory\n  .klp.rela.vmlinux..text.fn+0x1 .klp.sym.vmlinux.boot_command_line,0 at 0xffffffff8312e920\n")
	var j struct {
		Relocations []struct {
			InitMemory bool `json:"init_memory"`
		}
	}
	_, out, _ = runCLI(t, mod, "--kallsyms", k, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.Relocations, 1)
	assert.True(t, j.Relocations[0].InitMemory)
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", k)
	assert.Contains(t, out, "warning: on 1 kernel the patch refers to vmlinux's init memory")
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", k, "--format", "json")
	assert.Contains(t, out, `"init_memory_refs": 1`)
	_, out, _ = runCLI(t, "check", mod, "--kallsyms", k, "--format", "junit")
	assert.Contains(t, out, "warning: 1 relocation refers to vmlinux's init memory")
	assert.Contains(t, out, `classname="klpresolve.check.init"`, "a module without .modinfo is named after its file")
}

// TestModulesCLI: --modules checks what a patch defers to a module the
// kernel's symbols lack against the module's file, in both commands that
// resolve, text and JSON.
func TestModulesCLI(t *testing.T) {
	example := exampleKallsyms()
	mods := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "modules")
	xfs := filepath.Join(mods, "xfs.ko")

	code, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", example, "--modules", mods)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "deferred: module xfs is not loaded in this kernel; its relocations are applied when it loads\n  checked against "+xfs+": it resolves, whichever of xfs and the patch loads first\n")
	assert.Contains(t, out, "OK: 7 relocations: 6 resolved, 1 deferred, 0 errors\n")

	code, out, _ = runCLI(t, fixture("order-patch.ko"), "--kallsyms", example, "--modules", mods)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "  .klp.rela.xfs..text.livepatch_order  3 deferred, 5 FAILED\n")
	assert.Contains(t, out, "  checked against "+xfs+": 5 of 8 will fail (errors below)\n")
	assert.Contains(t, out, "error: .klp.rela.xfs..text.livepatch_order+0x2c R_X86_64_PLT32 .klp.sym.xfs.xfs_mount,1\n  livepatch: (no message: the kernel resolves another symbol)\n  help: xfs_mount,1 is .init.text+0x0 if xfs loads after the patch, but .text+0x50 if it was loaded first")
	assert.Contains(t, out, "FAILED: 8 relocations: 0 resolved, 3 deferred, 5 errors\n")
	// Without --modules, all eight wait for xfs, unchecked.
	code, out, _ = runCLI(t, fixture("order-patch.ko"), "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "checked")

	var j struct {
		Relocations []struct{ Name, Status, Kind string }
		Checked     []struct {
			Object, Path string
			OK, Failed   int
		} `json:"checked_objects"`
		Unchecked []string `json:"unchecked_objects"`
	}
	_, out, _ = runCLI(t, fixture("order-patch.ko"), "--kallsyms", example, "--modules", xfs, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.Checked, 1)
	assert.Equal(t, "xfs", j.Checked[0].Object)
	assert.Equal(t, xfs, j.Checked[0].Path)
	assert.Equal(t, [2]int{3, 5}, [2]int{j.Checked[0].OK, j.Checked[0].Failed})
	assert.NotNil(t, j.Unchecked)
	assert.Empty(t, j.Unchecked)
	kinds := map[string]string{}
	for _, r := range j.Relocations {
		kinds[r.Name] = r.Status + " " + r.Kind
	}
	assert.Equal(t, "error load_order", kinds["xfs_mount"])
	assert.Equal(t, "error ambiguous", kinds["xfs_lookup"])
	assert.Equal(t, "deferred ", kinds["xfs_iget"])

	// check: every kernel's row counts them.
	code, out, _ = runCLI(t, "check", fixture("order-patch.ko"), "--kallsyms", example, "--kallsyms", example, "--modules", mods)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "0         3         5       unresolvable ambiguity for symbol 'xfs_setup' in object 'xfs'")

	code, _, errOut := runCLI(t, fixture("order-patch.ko"), "--kallsyms", example, "--modules", filepath.Join(mods, "nope"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--modules: stat "+filepath.Join(mods, "nope")+": no such file or directory")
}

// TestModulesCorpus: Debian's System.map lists no module; with the
// modules of the same build, the sample patch's xfs relocation is checked
// against the real xfs.ko, and ext4, which the corpus lacks, is named.
func TestModulesCorpus(t *testing.T) {
	sm := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	mods := testutil.Corpus(t, "amd64/modules")
	code, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", sm, "--modules", mods)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "deferred: module xfs is not loaded in this kernel; its relocations are applied when it loads\n  checked against "+filepath.Join(mods, "xfs.ko")+": it resolves, whichever of xfs and the patch loads first\n")
	assert.Contains(t, out, "  unchecked: --modules has no ext4.ko\n")
	assert.Contains(t, out, "OK: 7 relocations: 5 resolved, 2 deferred, 0 errors\n")
}

// TestModulesOtherBuild: a loaded module whose file in --modules is
// another build (its symbols differ from the kernel's lines) is not
// checked against it, and the report says so.
func TestModulesOtherBuild(t *testing.T) {
	k := exampleWith(t, "ffffffffc0400000 T xfs_iget\t[xfs]\nffffffffc0400100 t xfs_other\t[xfs]\n")
	mods := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "modules")
	code, out, _ := runCLI(t, fixture("klp-patch.ko"), "--kallsyms", k, "--modules", mods)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "note: the file --modules has for module xfs is another build than the loaded one (its symbols differ from the kernel's lines for xfs): its patched functions were not checked against it\n")
	var j struct {
		OtherBuild []string `json:"other_build_modules"`
	}
	_, out, _ = runCLI(t, fixture("klp-patch.ko"), "--kallsyms", k, "--modules", mods, "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, []string{"xfs"}, j.OtherBuild)
}

// An object compiled alone has no .gnu.linkonce.this_module (kbuild links
// it in with NAME.mod.o): convert says the loader will refuse what it
// writes, and the main job fails the module as a whole.
func TestConvertNoModuleStruct(t *testing.T) {
	obj, err := os.ReadFile(fixture("patch.o"))
	require.NoError(t, err)
	i := bytes.Index(obj, []byte(".gnu.linkonce.this_module\x00"))
	require.Positive(t, i)
	copy(obj[i:], ".gnu.linkonce.that_module")
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare.o")
	require.NoError(t, os.WriteFile(bare, obj, 0o644))
	kallsymsFile := exampleKallsyms()
	out := filepath.Join(dir, "bare.ko")
	code, stdout, errOut := runCLI(t, "convert", bare, "-o", out, "--kallsyms", kallsymsFile, "--symbol", "vfs_read")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "wrote "+out+": 1 livepatch symbol\n"+
		`note: it has no .gnu.linkonce.this_module: the module loader refuses it ("livepatch_sample: No module found in object") until kbuild links it with its livepatch_sample.mod.o`+"\n", stdout)
	code, stdout, _ = runCLI(t, out, "--kallsyms", kallsymsFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "error: the kernel refuses the module\n  kernel: livepatch_sample: No module found in object\n")
	code, stdout, _ = runCLI(t, out, "--kallsyms", kallsymsFile, "--format", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `"kind": "no_module_struct"`)

	// The fixture itself has it: nothing said.
	code, stdout, _ = runCLI(t, "convert", fixture("patch.o"), "-o", out, "--kallsyms", kallsymsFile, "--symbol", "vfs_read")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "note:")
}

// The main job notes a module of the patch's name loaded already.
func TestMainJobAlreadyLoaded(t *testing.T) {
	k := exampleWith(t, "ffffffffc0300000 t livepatch_vfs_read\t[livepatch_sample]\n")
	code, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "\nnote: a module named livepatch_sample is loaded in this kernel already: insmod of this file fails (\"File exists\") until it is removed")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k, "--format", "json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"already_loaded": true`)
}

// TestKernelGenerations: the main job says which generation's rules
// judged the kernel: a Debian 7.2 image's banner tells; --kernel-version
// overrides; a generation klpresolve does not know is exit 2 naming the
// ones it knows.
func TestKernelGenerations(t *testing.T) {
	testutil.LightKernel(t, "7.2", "amd64")
	_, img := testutil.DebianKernel(t, "7.2", "amd64")
	code, out, _ := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", img)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nkernel symbols: "+img+" (the kallsyms table of a bzImage of Linux 7.2.13+deb14-amd64, ")
	assert.Contains(t, out, "; link-time addresses)\nkernel rules: Linux 7.2 (7.2.13+deb14-amd64, from the kernel image's banner)\n")
	assert.NotContains(t, out, "note: nothing tells")

	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", img, "--kernel-version", "6.12", "--format", "json")
	assert.Equal(t, 0, code, out)
	var j struct {
		Image struct {
			Kind, Release, Layout, Addresses string
			Symbols                          int
		} `json:"kallsyms_image"`
		Rules struct {
			Generation, Source string
			Exact              bool
		} `json:"kernel_rules"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "bzImage", j.Image.Kind)
	assert.Equal(t, "7.2.13+deb14-amd64", j.Image.Release)
	assert.Equal(t, "7.2", j.Image.Layout)
	assert.Equal(t, "link-time", j.Image.Addresses)
	assert.Greater(t, j.Image.Symbols, 100000)
	assert.Equal(t, "6.12", j.Rules.Generation)
	assert.Equal(t, "--kernel-version", j.Rules.Source)

	code, _, errs := runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", img, "--kernel-version", "6.6")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `--kernel-version: unknown kernel generation "6.6": klpresolve knows 6.1, 6.12, 7.2`)
}

// TestResolveVerb: "klpresolve resolve PATCH.ko" is the main job, with
// the same output and exit status, in text and JSON, passing and failing.
func TestResolveVerb(t *testing.T) {
	k := filepath.Join(testutil.RepoRoot(), "testdata/kallsyms/example.txt")
	for _, args := range [][]string{
		{fixture("livepatch-sample.ko"), "--kallsyms", k},
		{fixture("err-position.ko"), "--kallsyms", k, "--format", "json"},
	} {
		code, out, errs := runCLI(t, args...)
		vcode, vout, verrs := runCLI(t, append([]string{"resolve"}, args...)...)
		assert.Equal(t, code, vcode, "%v", args)
		assert.Equal(t, out, vout, "%v", args)
		assert.Equal(t, errs, verrs, "%v", args)
		assert.NotEmpty(t, out)
	}
	code, _, errs := runCLI(t, "resolve")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "resolve: expected one livepatch module, PATCH.ko, got 0 arguments")
}

// TestNotLivepatch: an object never converted (testdata/klp/patch.o:
// marked livepatch, its livepatch symbols still ordinary undefined ones,
// no klp_enable_patch() call) is no false green: exit 1, with the
// convert command; info says it too. The converted module passes.
func TestNotLivepatch(t *testing.T) {
	k := filepath.Join(testutil.RepoRoot(), "testdata/kallsyms/example.txt")
	code, out, _ := runCLI(t, fixture("patch.o"), "--kallsyms", k)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "error: nothing for livepatch in the module\n  kernel: (no message: the kernel loads the module, and livepatch does nothing with it)\n  help: the module is marked livepatch but has no livepatch relocations")
	assert.Contains(t, out, "`klpresolve convert "+fixture("patch.o")+" -o OUT.ko --symbol NAME ...`")
	assert.Contains(t, out, "FAILED: 0 relocations: 0 resolved, 0 deferred, 0 errors; nothing for livepatch in the module\n")

	code, out, _ = runCLI(t, fixture("patch.o"), "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		OK        bool                  `json:"ok"`
		LoadError struct{ Kind string } `json:"load_error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.False(t, j.OK)
	assert.Equal(t, "not_livepatch", j.LoadError.Kind)

	code, out, _ = runCLI(t, "info", fixture("patch.o"))
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "nothing for livepatch in the module")

	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "nothing for livepatch")
}

// TestModuleStructSizeRoot: klp-build's module for the fixtures' 7.2
// build, whose struct module is 1088 bytes, against Debian's 7.2 (1280
// bytes, as each of its modules has it): the loader refuses it before it
// reads the vermagic, which is wrong too.
func TestModuleStructSizeRoot(t *testing.T) {
	testutil.DebianKernelModules(t, "7.2", "amd64")
	root, _ := testutil.DebianKernel(t, "7.2", "amd64")
	code, out, _ := runCLI(t, filepath.Join(testutil.RepoRoot(), "testdata/buildtools/klp-build/livepatch-cmdline.ko"), "--root", root)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "error: the kernel refuses the module\n  kernel: module livepatch_cmdline: .gnu.linkonce.this_module section size must match the kernel's built struct module size at run time\n  help: the module's struct module is 1088 bytes and the kernel's 1280 (as its module ")
	assert.Contains(t, out, "error: vermagic: livepatch_cmdline: version magic '7.2.13-klpfix SMP preempt mod_unload ' should be '7.2.13+deb14-amd64 SMP preempt mod_unload '")
}

// The main job's JSON lists the diagnostics in the loader's order: the
// link's error before the deferral's note, offsets in hex, and ok false
// exactly because one is an error; with --strict the deferral is an error
// too, after the link's.
func TestMainJobJSONDiagnostics(t *testing.T) {
	type diagnostic struct {
		Kind, Severity, Message string
		Location                map[string]string
	}
	var j struct {
		OK          bool
		Diagnostics []diagnostic
	}
	args := []string{fixture("livepatch-sample.ko"), "--kallsyms", exampleKallsyms(), "--link", "--format", "json"}
	code, out, _ := runCLI(t, args...)
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.False(t, j.OK)
	require.Len(t, j.Diagnostics, 2)
	assert.Equal(t, diagnostic{Kind: "link", Severity: "error",
		Message:  "link: .rela.text.livepatch_missing+0x1: R_X86_64_PLT32 against no_such_function: unresolved symbol",
		Location: map[string]string{"file": fixture("livepatch-sample.ko"), "section": ".rela.text.livepatch_missing", "offset": "0x1", "symbol": "no_such_function"}},
		j.Diagnostics[0])
	assert.Equal(t, diagnostic{Kind: "deferred", Severity: "note",
		Message:  "deferred: module xfs is not loaded: its relocations apply when it loads",
		Location: map[string]string{"object": "xfs"}}, j.Diagnostics[1])

	j.Diagnostics = nil
	code, out, _ = runCLI(t, append(args, "--strict")...)
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Len(t, j.Diagnostics, 2)
	assert.Equal(t, []string{"link", "deferred"}, []string{j.Diagnostics[0].Kind, j.Diagnostics[1].Kind})
	assert.Equal(t, []string{"error", "error"}, []string{j.Diagnostics[0].Severity, j.Diagnostics[1].Severity})

	// Without --link nothing is an error: notes only, and ok is true.
	j.Diagnostics = nil
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", exampleKallsyms(), "--format", "json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.True(t, j.OK)
	require.Len(t, j.Diagnostics, 2)
	assert.Equal(t, diagnostic{Kind: "loader_missing", Severity: "note", Message: "the module loader would not find no_such_function",
		Location: map[string]string{"symbol": "no_such_function"}}, j.Diagnostics[0])
	assert.Equal(t, "deferred", j.Diagnostics[1].Kind)
}
