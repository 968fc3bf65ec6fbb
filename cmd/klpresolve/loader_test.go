// SPDX-License-Identifier: GPL-2.0-only

package main

import (
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
)

// refusedModule writes a small x86_64 livepatch module (struct module,
// .modinfo name=fix_patch livepatch=Y, a function calling vfs_read, and
// klp_enable_patch among its undefined symbols) that
// the module loader refuses: with a section both writable and executable,
// without a symbol table (stripped), or exporting vfs_read.
func refusedModule(t *testing.T, how string) string {
	t.Helper()
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: []byte{0xe8, 0, 0, 0, 0, 0xc3}, Addralign: 16})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("license=GPL\x00name=fix_patch\x00livepatch=Y\x00"), Addralign: 1})
	b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
	fn := b.AddSymbol(elfobj.BuildSymbol{Name: "vfs_read", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{{Offset: 1, Sym: fn, Type: uint32(elf.R_X86_64_PLT32), Addend: -4}})
	// A patch's init calls klp_enable_patch() (not here: the symbol, as
	// the other symbols' indexes stay).
	b.AddSymbol(elfobj.BuildSymbol{Name: "klp_enable_patch", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	switch how {
	case "wx":
		b.AddSection(elfobj.BuildSection{Name: ".text.wx", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 8})
	case "stripped":
		b.Sections = b.Sections[:3] // the relocations need the table
		b.NoSymtab = true
	case "export":
		tab := b.AddSection(elfobj.BuildSection{Name: "__ksymtab", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 12), Addralign: 4})
		b.AddSymbol(elfobj.BuildSymbol{Name: "__ksymtab_vfs_read", Size: 12, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT), Shndx: uint16(tab)})
	}
	p := filepath.Join(t.TempDir(), "fix-"+how+".ko")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	return p
}

// TestLoaderRefusals: info, the main job and link each say what the
// module loader refuses of the whole module, in its words, with exit 1
// (link of a file without symbols: 2, there is nothing to lay out).
func TestLoaderRefusals(t *testing.T) {
	dir := t.TempDir()
	k := filepath.Join(dir, "kallsyms")
	// vmlinux's exports listed (CONFIG_KALLSYMS_ALL): vfs_read is one.
	require.NoError(t, os.WriteFile(k, []byte(`ffffffff81000000 T start_kernel
ffffffff81000100 T klp_enable_patch
ffffffff81010180 T vfs_read
ffffffff81800000 r __ksymtab_vfs_read
ffffffff81800000 R __start___ksymtab
ffffffff81800010 R __stop___ksymtab
ffffffff81800010 r __ksymtab_klp_enable_patch
ffffffff81800010 R __start___ksymtab_gpl
ffffffff81800020 R __stop___ksymtab_gpl
`), 0o644))

	wx := refusedModule(t, "wx")
	const wxKernel = "  kernel: fix_patch: section .text.wx (index 5) has invalid WRITE|EXEC flags\n"
	code, out, _ := runCLI(t, "info", wx)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n"+wxKernel)
	assert.Contains(t, out, "FAILED: 1 problem on every kernel\n")
	code, out, _ = runCLI(t, wx, "--kallsyms", k, "--link")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n"+wxKernel)
	assert.Contains(t, out, "; a section both writable and executable")
	code, out, _ = runCLI(t, "link", wx, "--kallsyms", k)
	assert.Equal(t, 1, code, "it links, and the loader refuses it")
	assert.Contains(t, out, "error: the kernel refuses the module\n"+wxKernel)
	assert.Contains(t, out, "FAILED: fix_patch (x86_64) links: 1 relocation applied; a section both writable and executable\n")
	code, out, _ = runCLI(t, "link", wx, "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		OK        bool                                `json:"ok"`
		LoadError *struct{ Error, Kind, Help string } `json:"load_error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.False(t, j.OK)
	require.NotNil(t, j.LoadError)
	assert.Equal(t, "write_exec", j.LoadError.Kind)

	exp := refusedModule(t, "export")
	code, _, _ = runCLI(t, "info", exp)
	assert.Equal(t, 0, code, "a duplicate depends on the kernel")
	code, out, _ = runCLI(t, exp, "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	j.LoadError = nil
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.NotNil(t, j.LoadError)
	assert.Equal(t, "duplicate_export", j.LoadError.Kind)
	assert.Equal(t, "fix_patch: exports duplicate symbol vfs_read (owned by kernel)", j.LoadError.Error)
	// The fixtures' example kallsyms lists no exports: nothing known.
	code, _, _ = runCLI(t, exp, "--kallsyms", exampleKallsyms())
	assert.Equal(t, 0, code)

	stripped := refusedModule(t, "stripped")
	const strippedKernel = "  kernel: fix_patch: module has no symbols (stripped?)\n"
	code, out, _ = runCLI(t, "info", stripped)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n"+strippedKernel)
	code, out, _ = runCLI(t, stripped, "--kallsyms", k, "--link")
	assert.Equal(t, 1, code, "the loader's answer is known: no link needed")
	assert.Contains(t, out, "error: the kernel refuses the module\n"+strippedKernel)
	code, _, errOut := runCLI(t, "link", stripped, "--kallsyms", k)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `no symbol table (the module loader says "module has no symbols (stripped?)")`)
}

// TestS390Commands: plt and link on an s390x object, with and without
// expolines: the one GOT and PLT, their slots and entries used.
func TestS390Commands(t *testing.T) {
	obj := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "link", "s390x-got.o")
	code, out, _ := runCLI(t, "plt", obj)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "s390x_got (s390 big-endian), kernel mode\n")
	assert.Contains(t, out, "GOT: 3 slots, 24 bytes; PLT: 3 entries, 66 bytes (the expoline thunk's included); both at the start of core\n")
	code, out, _ = runCLI(t, "plt", obj, "--no-expoline")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "GOT: 3 slots, 24 bytes; PLT: 2 entries, 44 bytes; both at the start of core\n")

	// A kernel with expolines has their thunks (S390Expolines); one
	// without them, such as Debian's, links without the PLT's thunk.
	syms := "0000000000100000 T startup_continue\n0000000001234560 T ext_fn\n000003ff80100000 D other_data\n000003ff90000000 D ext_data\n000003ff80100000 T near_fn\n"
	k := filepath.Join(t.TempDir(), "System.map")
	require.NoError(t, os.WriteFile(k, []byte(syms), 0o644))
	code, out, _ = runCLI(t, "link", obj, "--kallsyms", k)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, ".plt     core    0x3ff80000018  0x2c\n")
	assert.Contains(t, out, "GOT: 3 of 3 slots; PLT: 2 of 2 entries\n")
	require.NoError(t, os.WriteFile(k, []byte(syms+"0000000000100200 T __s390_indirect_jump_r14\n"), 0o644))
	code, out, _ = runCLI(t, "link", obj, "--kallsyms", k)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, ".got     core    0x3ff80000000  0x18\n")
	assert.Contains(t, out, ".plt     core    0x3ff80000018  0x42\n")
	assert.Contains(t, out, ".text    core    0x3ff8000005c  0x30\n")
	assert.Contains(t, out, "GOT: 3 of 3 slots; PLT: 3 of 3 entries (the expoline thunk's included)\n")
	assert.Contains(t, out, "OK: s390x_got (s390 big-endian) links: 12 relocations applied\n")
	// The main job's CFI step: the text group starts at core's base, with
	// the GOT and PLT.
	code, out, _ = runCLI(t, obj, "--kallsyms", k, "--link", "--cfi-shadow")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "link: 12 relocations applied, 0 failed, 0 unresolved symbols; GOT 3/3, PLT 3/3\n")
	assert.Contains(t, out, "cfi: text 0x3ff80000000-0x3ff8000008c, 1 page in the shadow")
	// An x86_64 kernel's symbols are another architecture's.
	x86 := filepath.Join(t.TempDir(), "x86.map")
	require.NoError(t, os.WriteFile(x86, []byte("ffffffff81000000 T startup_64\nffffffff81234560 T ext_fn\n"), 0o644))
	code, _, errOut := runCLI(t, "link", obj, "--kallsyms", x86)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "different architectures")
}

// TestPPC64Commands: a ppc64le livepatch module's stubs in plt, link and
// the main job's --link, against its kernel's symbols.
func TestPPC64Commands(t *testing.T) {
	mod := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "ppc64le-fix.ko")
	k := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "ppc64le-kallsyms.txt")
	code, out, _ := runCLI(t, "plt", mod)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "livepatch_ppc (ppc64), kernel mode\n")
	assert.Regexp(t, `\.klp\.rela\.ext4\.\.text\.livepatch_vfs_read +1 +1 +1 +1\n`, out)
	assert.Contains(t, out, ".stubs: 6 stubs, sh_size 240 (3 fixed: the search's end and ftrace_caller's and ftrace_regs_caller's)\n")

	code, out, _ = runCLI(t, "link", mod, "--kallsyms", k)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, ".stubs                                      core    0xc008000000000000  0xf0\n")
	assert.Contains(t, out, "page size: 64 KiB\n")
	assert.Contains(t, out, "stubs: 5 of 6 entries (the last one ends stub_for_addr()'s search)\n")
	assert.Contains(t, out, "OK: livepatch_ppc (ppc64) links: 8 relocations applied\n")

	code, out, _ = runCLI(t, mod, "--kallsyms", k, "--link")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "link: 8 relocations applied, 0 failed, 0 unresolved symbols; stubs 5/6; 64 KiB pages\n")
	assert.Contains(t, out, "OK: 2 relocations: 2 resolved, 0 deferred, 0 errors\n")
	// 4 KiB pages, as some ppc64le kernels have.
	code, out, _ = runCLI(t, mod, "--kallsyms", k, "--link", "--page-size", "4096")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "link: 8 relocations applied, 0 failed, 0 unresolved symbols; stubs 5/6\n")
}

// TestLinkUnsupportedArch: --link of a riscv64 patch says which
// architectures link and that the patch resolves without it.
func TestLinkUnsupportedArch(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_RISCV}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=fix_patch\x00"), Addralign: 1})
	b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
	fn := b.AddSymbol(elfobj.BuildSymbol{Name: "vfs_read", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{{Offset: 0, Sym: fn, Type: uint32(elf.R_RISCV_CALL)}})
	p := filepath.Join(t.TempDir(), "fix-riscv64.ko")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
	k := exampleKallsyms()
	code, _, errOut := runCLI(t, p, "--kallsyms", k, "--link")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unsupported architecture: riscv ELFCLASS64 (EM_RISCV): modplt links x86_64, s390, ppc64, arm64 and arm modules (without --link the livepatch relocations and patched functions resolve all the same)")
	code, _, _ = runCLI(t, p, "--kallsyms", k)
	assert.Equal(t, 0, code)
}

// TestRootConfig: the --root kernel's configuration decides what the
// flags leave to it: a ppc64le kernel built with 4 KiB pages is linked
// with them; without its configuration, with the 64 KiB default; a page
// size given wins.
func TestRootConfig(t *testing.T) {
	mod := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "ppc64le-fix.ko")
	syms, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "ppc64le-kallsyms.txt"))
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "boot"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "boot", "System.map-6.1.0-ppc"), syms, 0o644))
	cfg := filepath.Join(root, "boot", "config-6.1.0-ppc")
	config := "CONFIG_PPC64=y\nCONFIG_PPC_4K_PAGES=y\n# CONFIG_PPC_64K_PAGES is not set\nCONFIG_MODULE_UNLOAD=y\nCONFIG_STRICT_MODULE_RWX=y\n"
	require.NoError(t, os.WriteFile(cfg, []byte(config+"CONFIG_LIVEPATCH=y\n"), 0o644))

	code, out, _ := runCLI(t, mod, "--root", root, "--link")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "; configuration "+cfg+noVmlinux+"\n")
	assert.Contains(t, out, "link: 8 relocations applied, 0 failed, 0 unresolved symbols; stubs 5/6\n")
	code, out, _ = runCLI(t, "link", mod, "--root", root)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "page size:")
	assert.Contains(t, out, ".gnu.linkonce.this_module                   core    0xc008000000002008  0x40\n", "data a 4 KiB page after the text")
	code, out, _ = runCLI(t, mod, "--root", root, "--link", "--page-size", "64K")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "; stubs 5/6; 64 KiB pages\n")
	code, out, _ = runCLI(t, mod, "--root", root, "--link", "--format", "json")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"config": "`+cfg+`"`)

	// A configuration without CONFIG_LIVEPATCH: every livepatch module is
	// refused, though the symbols have klp_enable_patch; the hint names
	// the file. The main job, link and check say so alike.
	require.NoError(t, os.WriteFile(cfg, []byte(config+"# CONFIG_LIVEPATCH is not set\n"), 0o644))
	for _, args := range [][]string{{mod, "--root", root}, {"link", mod, "--root", root}} {
		code, out, _ = runCLI(t, append(args, "--format", "json")...)
		assert.Equal(t, 1, code, out)
		var j struct {
			LoadError struct{ Kind, Help string } `json:"load_error"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &j), out)
		assert.Equal(t, "no_livepatch", j.LoadError.Kind, args)
		assert.Contains(t, j.LoadError.Help, "its configuration "+cfg+" does not set it", args)
	}
	code, out, _ = runCLI(t, "check", mod, "--root", root)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "livepatch support is disabled")

	// A configuration that does not parse is unusable input.
	require.NoError(t, os.WriteFile(cfg, []byte("CONFIG_PPC64=y\nPPC_4K_PAGES=y\n"), 0o644))
	code, _, errOut := runCLI(t, mod, "--root", root, "--link")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--root: "+cfg+":2: not an option: no CONFIG_ prefix")

	require.NoError(t, os.Remove(cfg))
	code, out, _ = runCLI(t, mod, "--root", root, "--link")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "; no configuration (boot/config-RELEASE): the loader's defaults assumed"+noVmlinux+"\n")
	assert.Contains(t, out, "; stubs 5/6; 64 KiB pages\n")
}

// TestCheckDebianPPC64EL: check --root on Debian's real ppc64el kernel
// (testutil.PPC64EL) names its configuration and refuses the ppc64le
// livepatch fixture as that kernel's loader would: Debian builds its
// ppc64el 6.1 without CONFIG_LIVEPATCH.
func TestCheckDebianPPC64EL(t *testing.T) {
	root := testutil.PPC64EL(t)
	mod := filepath.Join(testutil.RepoRoot(), "testdata", "klp", "ppc64le-fix.ko")
	code, out, _ := runCLI(t, "check", mod, "--root", root, "--link", "--format", "json")
	assert.Equal(t, 1, code, out)
	var j struct {
		Kernels []struct {
			Release, Config string
			FirstErrorKind  string `json:"first_error_kind"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	require.Len(t, j.Kernels, 1)
	assert.Equal(t, testutil.PPC64ELRelease, j.Kernels[0].Release)
	assert.Equal(t, filepath.Join(root, "boot", "config-"+testutil.PPC64ELRelease), j.Kernels[0].Config)
	assert.Equal(t, "no_livepatch", j.Kernels[0].FirstErrorKind)
}

// noVmlinux ends the kernel: line of a root without the kernel's vmlinux.
const noVmlinux = "; no vmlinux (usr/lib/debug/boot/vmlinux-RELEASE, its debug package's) nor boot/vmlinuz-RELEASE: patched functions not checked for ftrace call sites"
