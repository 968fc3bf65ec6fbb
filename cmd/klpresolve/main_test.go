// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/internal/testutil/testelf"
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

func TestLookupCommand(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, "lookup", "vfs_read", "type_show,3", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read: 0xffffffff813669e0 T vmlinux position 1")
	code, read, _ := runCLI(t, "lookup", "vfs_read", "type_show,3", "--kallsyms", k, "--no-map")
	assert.Equal(t, 0, code)
	assert.Equal(t, out, read)
	code, out, _ = runCLI(t, "lookup", "type_show", "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var doc struct {
		Results []struct {
			Spec, Object, Name string
			Address, Error     *string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	j := doc.Results
	require.Len(t, j, 1)
	assert.Nil(t, j[0].Address)
	require.NotNil(t, j[0].Error)
	assert.Contains(t, *j[0].Error, "unresolvable ambiguity")
}

// addr: text and JSON, addresses from standard input, an address below
// every symbol (exit 1), and bad input (exit 2).
func TestAddrCommand(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	code, out, _ := runCLI(t, "addr", "0xffffffff81010285", "ffffffffc0350690", "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.Equal(t, "0xffffffff81010285: vfs_read+0x105/0x200\n0xffffffffc0350690: ext4_read_inode_bitmap+0x10/0x280 [ext4]\n", out)

	var stdout, stderr bytes.Buffer
	code = run([]string{"addr", "-", "10", "--kallsyms", example, "--format", "json"},
		strings.NewReader("ffffffff81010285\n  0xffffffffc0350690 \n"), &stdout, &stderr)
	assert.Equal(t, 1, code, stderr.String())
	var doc struct {
		Results []struct {
			Address                            string
			Symbol, Object, Type, Offset, Size *string
			Error                              *string
		}
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc))
	j := doc.Results
	require.Len(t, j, 3)
	assert.Equal(t, "0xffffffff81010285", j[0].Address)
	assert.Equal(t, []string{"vfs_read", "vmlinux", "T", "0x105", "0x200"}, []string{*j[0].Symbol, *j[0].Object, *j[0].Type, *j[0].Offset, *j[0].Size})
	assert.Equal(t, []string{"ext4_read_inode_bitmap", "ext4", "0x10", "0x280"}, []string{*j[1].Symbol, *j[1].Object, *j[1].Offset, *j[1].Size})
	assert.Nil(t, j[1].Error)
	assert.Equal(t, "0x10", j[2].Address)
	assert.Nil(t, j[2].Symbol)
	require.NotNil(t, j[2].Error)
	assert.Equal(t, "no symbol at or below this address", *j[2].Error)

	// Past the page of ext4's last symbol (0xffffffffc0350900), and of
	// everything's: in no object.
	code, out, _ = runCLI(t, "addr", "0xffffffffc0351000", "--kallsyms", example)
	assert.Equal(t, 1, code)
	assert.Equal(t, "0xffffffffc0351000: in no object: past the last symbol of module ext4 (ext4_iget at 0xffffffffc0350900)\n", out)

	code, out, _ = runCLI(t, "addr", " 0xffffffffc0351000\t", "--kallsyms", example)
	assert.Equal(t, 1, code)
	assert.Equal(t, "0xffffffffc0351000: in no object: past the last symbol of module ext4 (ext4_iget at 0xffffffffc0350900)\n", out)

	code, _, errs := runCLI(t, "addr", "vfs_read", "--kallsyms", example)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `address "vfs_read" is not hex`)
	code, _, errs = runCLI(t, "addr", "0x1ffffffffffffffff", "--kallsyms", example)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `address "0x1ffffffffffffffff" does not fit in 64 bits`)

	// Past the last symbol of an object its size is not known: "?", null.
	code, out, _ = runCLI(t, "addr", "0xffffffffc0350a00", "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^0xffffffffc0350a00: \S+\+0x[0-9a-f]+/\? \[ext4\]\n$`, out)
	code, out, _ = runCLI(t, "addr", "0xffffffffc0350a00", "--kallsyms", example, "--format", "json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"size": null`)
	code, _, errs = runCLI(t, "addr", "-", "--kallsyms", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "standard input cannot hold both the symbols (--kallsyms -) and the addresses (-)")

	// lookup - reads specs the same way.
	stdout.Reset()
	code = run([]string{"lookup", "-", "--kallsyms", example},
		strings.NewReader("vfs_read\next4:ext4_read_inode_bitmap type_show,3\n"), &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Equal(t, "vfs_read: 0xffffffff81010180 T vmlinux position 1\n"+
		"ext4:ext4_read_inode_bitmap: 0xffffffffc0350680 t ext4 position 1\n"+
		"type_show,3: 0xffffffff81010080 t vmlinux position 3\n", stdout.String())
}

func TestObjectsAddrSnapshot(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, "objects", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "62 objects, 120626 symbols")
	code, out, _ = runCLI(t, "addr", "ffffffff813669e4", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read+0x4/")
	snap := filepath.Join(t.TempDir(), "k.snap")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", k, "-o", snap)
	require.Equal(t, 0, code)
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", snap)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "6 resolved")
	// The report names the file given, and the text the snapshot was
	// written from, which error messages name.
	assert.Contains(t, out, "\nkernel symbols: "+snap+" (snapshot of "+k+")\n")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "\nkernel symbols: "+k+"\n")
	// A truncated snapshot is a clear error.
	b, _ := os.ReadFile(snap)
	require.NoError(t, os.WriteFile(snap, b[:len(b)/2], 0o644))
	code, _, errOut := runCLI(t, "objects", "--kallsyms", snap)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "snapshot")

	// An index that compresses 1,000-fold: its tables carry it.
	rep := filepath.Join(t.TempDir(), "rep.txt")
	require.NoError(t, os.WriteFile(rep, []byte(strings.Repeat("ffffffff81000000 t a\n", 200000)), 0o644))
	repSnap := filepath.Join(t.TempDir(), "rep.snap")
	code, _, errOut = runCLI(t, "snapshot", "--kallsyms", rep, "-o", repSnap)
	assert.Equal(t, 0, code, errOut)
	code, out, _ = runCLI(t, "lookup", "a,200000", "--kallsyms", repSnap)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "0xffffffff81000000")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", rep, "-o", filepath.Join(t.TempDir(), "rep.snap"), "--raw")
	assert.Equal(t, 0, code)

	// The raw form answers the same.
	raw := filepath.Join(t.TempDir(), "k.raw")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", k, "-o", raw, "--raw")
	require.Equal(t, 0, code)
	code, out, _ = runCLI(t, "addr", "ffffffff813669e4", "--kallsyms", raw)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read+0x4/")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", raw)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "6 resolved")
	b, _ = os.ReadFile(raw)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(raw, b, 0o644))
	code, _, errOut = runCLI(t, "objects", "--kallsyms", raw)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "checksum mismatch")
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

func TestPLTCommand(t *testing.T) {
	thumb := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "thumb.o")
	code, out, _ := runCLI(t, "plt", thumb)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "thumb (arm), kernel mode")
	assert.Regexp(t, `\.rel\.text\s+core\s+8\s+8\s+6\s+1\s+2\s+6`, out)
	assert.Contains(t, out, ".plt:      9 entries, sh_size 128 (2 fixed ftrace slots included)")
	assert.Contains(t, out, ".init.plt: 5 entries, sh_size 128")

	// Flags after the positional argument; JSON with the expected-plt.tsv
	// meanings.
	code, out, _ = runCLI(t, "plt", thumb, "--mode", "optimal", "--format", "json")
	require.Equal(t, 0, code)
	var j struct {
		Module, Arch, Mode string
		PLTCore            int    `json:"plt_core"`
		PLTInit            int    `json:"plt_init"`
		SizeCore           uint64 `json:"plt_sh_size_core"`
		Sections           []struct{ Name, Region string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "thumb", j.Module)
	assert.Equal(t, "optimal", j.Mode)
	assert.Equal(t, []int{6, 5}, []int{j.PLTCore, j.PLTInit})
	assert.Equal(t, uint64(128), j.SizeCore)
	assert.Equal(t, "init", j.Sections[2].Region)

	code, out, _ = runCLI(t, "plt", filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o"), "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"got": 7`)

	// A big-endian module says so (its Arch is the little-endian one's);
	// it counts what its little-endian build counts.
	for _, c := range []struct{ obj, head, json string }{
		{"arm64be.o", "arm64be (arm64 big-endian), kernel mode", `"big_endian": true`},
		{"arm64.o", "arm64 (arm64), kernel mode", ""},
	} {
		obj := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "link", c.obj)
		code, out, _ = runCLI(t, "plt", obj)
		require.Equal(t, 1, code, "ld's objects have no PLT sections: refused")
		assert.Contains(t, out, c.head)
		assert.Contains(t, out, ".plt:      3 entries")
		code, out, _ = runCLI(t, "plt", obj, "--format", "json")
		require.Equal(t, 1, code)
		if c.json != "" {
			assert.Contains(t, out, c.json)
		} else {
			assert.NotContains(t, out, "big_endian")
		}
		code, out, _ = runCLI(t, "info", obj, "--format", "json")
		require.Equal(t, 1, code, "and info says the loader refuses them")
		assert.Contains(t, out, `"no_plt_section"`)
		assert.Contains(t, out, "module PLT section(s) missing")
		assert.Equal(t, c.json != "", strings.Contains(out, `"big_endian": true`), out)
	}

	code, _, errs := runCLI(t, "plt", thumb, "--mode", "fast")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `unknown mode "fast"`)
	code, _, errs = runCLI(t, "plt", fixture("patch.c"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "patch.c: not an ELF file")
}

func TestPLTCommandCorpus(t *testing.T) {
	md4 := testutil.Corpus(t, "arm64/modules/md4.ko")
	code, out, _ := runCLI(t, "plt", md4, "--erratum-843419")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "md4 (arm64), kernel mode, erratum 843419 workaround")
	assert.Contains(t, out, ".plt:      6 entries, sh_size 84") // expected-plt.tsv: plt_core_erratum 6

	// Without KASLR: no branch entry, and so no erratum slack either (md4
	// has no ADRP that needs a veneer); the spare slot stays.
	code, out, _ = runCLI(t, "plt", md4, "--no-kaslr", "--erratum-843419")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "md4 (arm64), kernel mode, erratum 843419 workaround, no KASLR: no branch PLT entries")
	assert.Contains(t, out, ".plt:      0 entries, sh_size 12")
	assert.Contains(t, out, ".init.plt: 0 entries, sh_size 12")
	assert.Regexp(t, `all sections +24 +7 +7 +0 +0 +0`, out) // the 7 branches are still listed
}

// A module calling vfs_read, which 6.1 does not export: link says so, in
// text and JSON, as insmod would ("Unknown symbol").
func TestLinkNotExported(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	mod := filepath.Join(t.TempDir(), "calls.ko")
	require.NoError(t, os.WriteFile(mod, testelf.X86Calls(".text", elf.R_X86_64_PLT32, "vfs_read", "_printk"), 0o644))
	code, stdout, _ := runCLI(t, "link", mod, "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `unresolved: vfs_read (vmlinux has it at 0xffffffff813669e0, T, but does not export it: insmod says "Unknown symbol")`)
	assert.Contains(t, stdout, "FAILED: calls (x86_64): 1 relocation applied, 1 failed, 1 unresolved symbol")
	code, stdout, _ = runCLI(t, "link", mod, "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		Unresolved  []string
		NotExported []struct{ Name, Object, Address, Type string } `json:"not_exported"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &j))
	assert.Equal(t, []string{"vfs_read"}, j.Unresolved)
	require.Len(t, j.NotExported, 1)
	assert.Equal(t, "vmlinux", j.NotExported[0].Object)
	assert.Equal(t, "0xffffffff813669e0", j.NotExported[0].Address)

	// A module without a GPL-compatible license and a GPL-only export.
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("license=Proprietary\x00"), Addralign: 1})
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 16})
	cr := b.AddSymbol(elfobj.BuildSymbol{Name: "call_rcu", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{{Offset: 1, Sym: cr, Type: uint32(elf.R_X86_64_PLT32), Addend: -4}})
	require.NoError(t, os.WriteFile(mod, b.Bytes(), 0o644))
	code, stdout, _ = runCLI(t, "link", mod, "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `unresolved: call_rcu (vmlinux exports it with EXPORT_SYMBOL_GPL, and this module's license is not GPL-compatible: insmod says "Unknown symbol")`)
}

// Without --link the main job names the ordinary symbols insmod would
// refuse, and still exits 0 when the livepatch relocations resolve.
func TestMainJobLoaderNote(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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

// link applies a livepatch module's relocations as the loader and then
// livepatch would: the .klp.rela section for xfs, which the example kernel
// has not loaded, waits for it (as in the main job's --link), and only
// no_such_function fails.
func TestLinkCommandDefersUnloadedObjects(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	code, stdout, _ := runCLI(t, "link", fixture("livepatch-sample.ko"), "--kallsyms", example)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "FAILED: livepatch_sample (x86_64): 6 relocations applied, 1 failed, 1 unresolved symbol\n")
	assert.NotContains(t, stdout, "xfs_iget")
	code, stdout, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", example, "--link")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "link: 6 relocations applied, 1 failed, 1 unresolved symbol")
}

func TestLinkCommand(t *testing.T) {
	md4 := testutil.Corpus(t, "amd64/modules/md4.ko")
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	out := filepath.Join(t.TempDir(), "md4.linked")
	code, stdout, _ := runCLI(t, "link", md4, "--kallsyms", k, "-o", out, "--base", "0xffffffffc1000000")
	require.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "OK: md4 (x86_64) links: 79 relocations applied")
	assert.Regexp(t, `\.text\s+core\s+0xffffffffc1000000`, stdout)
	f, err := elf.Open(out)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, uint64(0xffffffffc1000000), f.Section(".text").Addr)
	syms, err := f.Symbols()
	require.NoError(t, err)
	found := false
	for _, s := range syms {
		if s.Name == "init_module" {
			found = true
			assert.Equal(t, f.Section(".init.text").Addr, s.Value)
		}
	}
	assert.True(t, found)

	// The fixture's symbols are not in the example kallsyms: exit 1, listed.
	code, stdout, _ = runCLI(t, "link", filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o"),
		"--kallsyms", filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt"), "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		OK         bool
		Unresolved []string
		Errors     []struct{ Section, Type, Symbol, Error string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &j))
	assert.False(t, j.OK)
	assert.Equal(t, []string{"ext_a", "ext_b", "ext_f", "ext_g"}, j.Unresolved)
	assert.Equal(t, "R_X86_64_GOTPCRELX", j.Errors[0].Type)

	code, _, errs := runCLI(t, "link", md4, "--kallsyms", k, "--base", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `--base "nope": not an address`)

	// x86_64 kernels have 4 KiB pages only; 3K is no page size at all.
	for _, tc := range []struct{ size, err string }{
		{"64K", "bad page size: 65536 (x86_64 kernels have [4096])"},
		{"3K", `bad page size "3K": give a power of two, e.g. 4K, 16K or 64K`},
	} {
		code, _, errs = runCLI(t, "link", md4, "--kallsyms", k, "--page-size", tc.size)
		assert.Equal(t, 2, code, tc.size)
		assert.Contains(t, errs, tc.err)
	}
}

// An arm64 module laid out for a kernel with 64 KiB pages (RHEL's
// kernel-64k): every group of sections on a 64 KiB page, below _etext -
// 128 MiB rounded down to one.
func TestLinkPageSize(t *testing.T) {
	md4 := testutil.Corpus(t, "arm64/modules/md4.ko")
	k := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt")
	addrs := map[string]map[string]string{}
	for _, size := range []string{"4096", "64KiB"} {
		code, stdout, _ := runCLI(t, "link", md4, "--kallsyms", k, "--page-size", size, "--format", "json")
		require.Equal(t, 0, code, stdout)
		var j struct {
			Sections []struct{ Name, Address string }
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &j))
		addrs[size] = map[string]string{}
		for _, s := range j.Sections {
			addrs[size][s.Name] = s.Address
		}
	}
	small, big := addrs["4096"], addrs["64KiB"]
	assert.Equal(t, "0xffff800000d00000", small[".text"]) // Debian's _etext - 128 MiB, a 64 KiB multiple
	assert.Equal(t, small[".text"], big[".text"])
	assert.Equal(t, "0xffff800000d01000", small[".note.gnu.property"])
	assert.Equal(t, "0xffff800000d10000", big[".note.gnu.property"])
	assert.Equal(t, "0xffff800000d05000", small[".init.text"])
	assert.Equal(t, "0xffff800000d50000", big[".init.text"])

	// A System.map shows an arm64 kernel's page size (swapper_pg_dir a
	// page after reserved_pg_dir): taken when --page-size is not given.
	m, err := os.ReadFile(testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64"))
	require.NoError(t, err)
	m64 := filepath.Join(t.TempDir(), "System.map-64k")
	b := bytes.Replace(m, []byte("ffff800009658000 T swapper_pg_dir\n"), []byte("ffff800009667000 T swapper_pg_dir\n"), 1)
	require.NotEqual(t, m, b)
	require.NoError(t, os.WriteFile(m64, b, 0o644))
	code, stdout, _ := runCLI(t, "link", md4, "--kallsyms", m64)
	require.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "page size: 64 KiB\n")
	assert.Regexp(t, `\.init\.text\s+init\s+0xffff800000d50000`, stdout)
	code, stdout, _ = runCLI(t, "link", md4, "--kallsyms", m64, "--page-size", "4K")
	require.Equal(t, 0, code, stdout)
	assert.NotContains(t, stdout, "page size")
	assert.Regexp(t, `\.init\.text\s+init\s+0xffff800000d05000`, stdout)

	// The main job's --link says so too (md4 is no livepatch module, but
	// links); its 0x894 bytes of text are one 64 KiB page of the shadow.
	code, stdout, _ = runCLI(t, md4, "--kallsyms", m64, "--link", "--cfi-shadow")
	require.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "; 64 KiB pages\n")
	assert.Contains(t, stdout, "cfi: text 0xffff800000d00000-0xffff800000d00894, 1 page in the shadow")
}

func TestCheckCommand(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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
	assert.Equal(t, "2 resolved, 2 deferred, 3 errors\nfirst error: "+refused, cs[2].Failure.Text)
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
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "klpresolve "), out)
	require.Contains(t, out, runtime.Version())
}

// The benchmarks measure under the runtime's default collector (as go test
// -bench does), not the one-shot setting main gives the commands; GOGC in
// the environment wins; bench once, which times a command's own work in a
// fresh process, keeps the commands' setting.
func TestBenchCollectorSetting(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(oneShotGC))
	t.Setenv("GOGC", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	missing := filepath.Join(t.TempDir(), "missing.ko")

	code, _, errs := runCLI(t, "bench", "plt", missing)
	require.Equal(t, 2, code, errs)
	require.Equal(t, goDefaultGC, debug.SetGCPercent(oneShotGC))

	code, out, errs := runCLI(t, "bench", "once", "read", fixture("livepatch-sample.ko"))
	require.Equal(t, 0, code, errs)
	require.NotEmpty(t, strings.TrimSpace(out))
	require.Equal(t, oneShotGC, debug.SetGCPercent(oneShotGC))

	t.Setenv("GOGC", "300")
	code, _, _ = runCLI(t, "bench", "plt", missing)
	require.Equal(t, 2, code)
	require.Equal(t, oneShotGC, debug.SetGCPercent(oneShotGC))
}

// bench kallsyms and bench proc as a user runs them, children included:
// JSON reports with the one-shot figures measured in fresh processes of
// this binary, and proc's turns of klpresolve objects and cat.
func TestBenchCommands(t *testing.T) {
	selfAsCLI(t)
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	require.NoError(t, bt.Value.Set("20x")) // testing.Benchmark: 20 calls, not a second
	defer func() { _ = bt.Value.Set(old) }()
	k := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")

	code, out, errs := runCLI(t, "bench", "kallsyms", "--kallsyms", k, "--format", "json")
	require.Equal(t, 0, code, errs)
	var rep struct {
		Benchmark string `json:"benchmark"`
		GOGC      *int   `json:"gogc"`
		Figures   []struct {
			Name   string  `json:"name"`
			Value  float64 `json:"value"`
			Target *struct {
				Op    string
				Bound float64
				Met   bool
			} `json:"target"`
		} `json:"figures"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "kallsyms", rep.Benchmark)
	require.NotNil(t, rep.GOGC)
	f := map[string]float64{}
	targets := 0
	for _, x := range rep.Figures {
		f[x.Name] = x.Value
		if x.Name == "naive_vs_parse" {
			require.NotNil(t, x.Target)
			assert.Equal(t, ">=", x.Target.Op)
			assert.Equal(t, 15.0, x.Target.Bound)
			assert.Equal(t, x.Value >= 15, x.Target.Met, "met says what the value says")
		}
		if x.Target != nil {
			targets++
		}
	}
	assert.GreaterOrEqual(t, targets, 8, "each figure with a goal says whether it met it")
	require.Equal(t, 20.0, f["oneshot_rounds"])
	for _, q := range []string{"min", "q1", "median"} {
		require.Positive(t, f["oneshot_read_file_"+q+"_ms"], q)
		require.Positive(t, f["oneshot_parse_index_"+q+"_ms"], q)
		require.InEpsilon(t, f["oneshot_parse_index_"+q+"_ms"]/f["oneshot_read_file_"+q+"_ms"], f["oneshot_parse_vs_read_"+q], 1e-9, q)
	}
	require.Equal(t, 27.0, f["input_lines"])

	if _, err := exec.LookPath("cat"); err != nil {
		return
	}
	code, out, errs = runCLI(t, "bench", "proc", "--kallsyms", k, "--rounds", "3", "--format", "json")
	require.Equal(t, 0, code, errs)
	rep.GOGC, rep.Figures = nil, nil
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "proc", rep.Benchmark)
	require.Nil(t, rep.GOGC) // it times other processes
	f = map[string]float64{}
	for _, x := range rep.Figures {
		f[x.Name] = x.Value
	}
	require.Equal(t, 3.0, f["rounds"])
	require.Positive(t, f["tool_median_ms"])
	require.Positive(t, f["reference_median_ms"])
	require.InEpsilon(t, f["tool_median_ms"]/f["reference_median_ms"], f["tool_vs_reference_median"], 1e-9)
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
	ix, err := kallsyms.Open(k, nil)
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
	ex := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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
		ix, err := kallsyms.ParseBytes("stdout", []byte(out), nil)
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

// TestLookupJSONKinds: each failed spec says its kind, a stable name.
func TestLookupJSONKinds(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	code, out, _ := runCLI(t, "lookup", "vfs_read", "type_show", "type_show,99", "vfs_reed", "xfs:xfs_iget", "ext4:", "--kallsyms", example, "--format", "json")
	assert.Equal(t, 1, code)
	var doc struct {
		Results []struct {
			Spec  string
			Error *string
			Kind  string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	var kinds []string
	for _, r := range doc.Results {
		kinds = append(kinds, r.Kind)
		assert.Equal(t, r.Kind == "found", r.Error == nil, r.Spec)
	}
	assert.Equal(t, []string{"found", "ambiguous", "no_such_position", "not_found", "object_not_loaded", "bad_spec"}, kinds)
}

// TestModuleFromStdin: "-" reads the module from standard input for the
// main job, check, link and plt; not when the symbols come from there too.
func TestModuleFromStdin(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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
	ix, err := kallsyms.ParseBytes("snap", both.Bytes()[:i], nil)
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

// A module read from a stream that is no module is refused at its first
// bytes: '/dev/zero' or '-' fed zeros read 2 GiB (6.3 GB resident, 21 s)
// before saying the input was too large.
func TestModuleStreamRefusedAtOnce(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
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

// info describes a module without a kernel, and fails on what every
// kernel refuses.
func TestInfo(t *testing.T) {
	code, out, _ := runCLI(t, "info", fixture("klp-build.ko"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "livepatch sections (1):\n  .klp.rela.vmlinux..text.livepatch_vfs_read  vmlinux  1 relocation\n")
	assert.Contains(t, out, "livepatch symbols (1): .klp.sym.vmlinux.vfs_read,0\nobjects (.init.klp_funcs): vmlinux, ext4, xfs\npatched functions (.init.klp_funcs, 4):\n  vmlinux:vfs_read,0             declared at .init.klp_funcs+0x30\n")
	assert.True(t, strings.HasSuffix(out, "OK: nothing refused on every kernel; resolve it against one to know the rest\n"))
	assert.NotContains(t, out, "depends on:")

	// A module that uses other modules' exports (modpost's depends=).
	top := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "deps", "klpdep-top.ko")
	code, out, _ = runCLI(t, "info", top)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\ndepends on: klpdep_base, klpdep_mid (modprobe loads them first; --modules lays them out from their files)\n")
	code, out, _ = runCLI(t, "info", top, "--format", "json")
	assert.Equal(t, 0, code, out)
	var dj struct{ Depends []string }
	require.NoError(t, json.Unmarshal([]byte(out), &dj))
	assert.Equal(t, []string{"klpdep_base", "klpdep_mid"}, dj.Depends)

	code, out, _ = runCLI(t, "info", fixture("err-vmlinux-from-module.ko"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: section .klp.rela.ext4..text.livepatch_vfs_read, relocation against .klp.sym.vmlinux.vfs_read,0\n  kernel: invalid access to vmlinux symbol 'vfs_read' from module-specific livepatch relocation section\n")
	assert.Contains(t, out, "patched functions: none found")
	assert.True(t, strings.HasSuffix(out, "FAILED: 1 problem on every kernel\n"))

	var j struct {
		Name, Format, FuncSource string
		Objects                  []string
		Funcs                    []struct {
			Object, Name, Declared string
			Sympos                 uint64
			Error                  *struct{ Kind string }
		}
		Errors int
	}
	code, out, _ = runCLI(t, "info", fixture("klp-patch-broken.ko"), "--format", "json")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "klp_patch", j.Name)
	assert.Equal(t, []string{"vmlinux", "ext4", "xfs", "nfs"}, j.Objects)
	require.Len(t, j.Funcs, 7)
	require.NotNil(t, j.Funcs[4].Error)
	assert.Equal(t, "duplicate", j.Funcs[4].Error.Kind)
	assert.Nil(t, j.Funcs[2].Error, "not found is a kernel's answer, not every kernel's")
	assert.Equal(t, 1, j.Errors)

	// A built patch module without livepatch=Y: refused on every kernel.
	data, err := os.ReadFile(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	i := bytes.Index(data, []byte("livepatch=Y\x00"))
	require.Positive(t, i)
	copy(data[i:], "livepatcX=Y")
	mod := filepath.Join(t.TempDir(), "unmarked.ko")
	require.NoError(t, os.WriteFile(mod, data, 0o644))
	code, out, _ = runCLI(t, "info", mod)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n  kernel: module livepatch_sample is not marked as a livepatch module\n")
}

// TestModulesCLI: --modules checks what a patch defers to a module the
// kernel's symbols lack against the module's file, in both commands that
// resolve, text and JSON.
func TestModulesCLI(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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

// TestLookupSystemMapCodeOnly: against the System.map of a kernel whose
// kallsyms holds code only, lookup answers as that kernel would.
func TestLookupSystemMapCodeOnly(t *testing.T) {
	m := testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64")
	code, out, _ := runCLI(t, "lookup", "jiffies", "vfs_read", "--kallsyms", m)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "jiffies: error: symbol 'jiffies' not found in symbol table (the System.map's jiffies at 0xffff800009cb79c0 (type D): outside the kernel's code, and this kernel was built without CONFIG_KALLSYMS_ALL (its kallsyms table holds 50336 symbols)")
	assert.Contains(t, out, "vfs_read: 0xffff8000083ab520 T vmlinux position 1\n")
	// amd64's map: its kernel holds data too.
	code, out, _ = runCLI(t, "lookup", "jiffies", "--kallsyms", testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"))
	assert.Equal(t, 0, code, out)
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
	example, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt"))
	require.NoError(t, err)
	k := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(k, append(example, "ffffffffc0400000 T xfs_iget\t[xfs]\nffffffffc0400100 t xfs_other\t[xfs]\n"...), 0o644))
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

// check takes the link options for every kernel: they need --link, and a
// page size the patch's architecture has no kernels with is refused
// before any kernel is read.
func TestCheckLinkOptions(t *testing.T) {
	k := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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
	kallsymsFile := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
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

// info says whether a module is signed: Debian's are, the fixtures not.
func TestInfoSignature(t *testing.T) {
	md4 := testutil.Corpus(t, "amd64/modules/md4.ko")
	code, out, _ := runCLI(t, "info", md4)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\nsignature: PKCS#7, 681 bytes (whether a kernel trusts its key, only that kernel can tell)\n")
	code, out, _ = runCLI(t, "info", md4, "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\"signature\": {\n    \"bytes\": 681\n  }")
	code, out, _ = runCLI(t, "info", fixture("livepatch-sample.ko"), "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"signature": null`)
}

// The main job notes a module of the patch's name loaded already.
func TestMainJobAlreadyLoaded(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt"))
	require.NoError(t, err)
	k := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(k, append(example, "ffffffffc0300000 t livepatch_vfs_read\t[livepatch_sample]\n"...), 0o644))
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

// TestLookupExplains: a data symbol not found in a code-only kallsyms
// says why, as the main job does; a negative sympos says what it is.
func TestLookupExplains(t *testing.T) {
	k := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt") // no CONFIG_KALLSYMS_ALL
	code, out, _ := runCLI(t, "lookup", "jiffies", "vfs_read,-1", "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "jiffies: error: ")
	assert.Contains(t, out, "lists code symbols only, as a kallsyms without CONFIG_KALLSYMS_ALL does")
	assert.Contains(t, out, "vfs_read,-1: error: spec \"vfs_read,-1\": sympos -1 is negative")
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
