// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/internal/testutil/testelf"
)

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

// link applies a livepatch module's relocations as the loader and then
// livepatch would: the .klp.rela section for xfs, which the example kernel
// has not loaded, waits for it (as in the main job's --link), and only
// no_such_function fails.
func TestLinkCommandDefersUnloadedObjects(t *testing.T) {
	example := exampleKallsyms()
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
		"--kallsyms", exampleKallsyms(), "--format", "json")
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
