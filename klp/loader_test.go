// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

// loaderModule writes a small x86_64 module for the loader's own refusals:
// .modinfo (modinfo's keys), struct module (unless bare), one function,
// and what add puts in.
func loaderModule(modinfo string, bare bool, add func(b *elfobj.Builder)) []byte {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: []byte{0xc3}, Addralign: 16})
	b.AddSymbol(elfobj.BuildSymbol{Name: "fix", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 1})
	// A patch's init enables it (without the call it is no patch:
	// ErrNotLivepatch).
	b.AddSymbol(elfobj.BuildSymbol{Name: "klp_enable_patch", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte(modinfo), Addralign: 1})
	if !bare {
		b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
	}
	if add != nil {
		add(b)
	}
	return b.Bytes()
}

// loaderKernel: a whole kernel's symbols (start_kernel, livepatch) that
// list vmlinux's exports (vfs_read, and kmalloc GPL-only), and a module
// ext4 exporting ext4_iget (upper case) but not ext4_fill_super.
const loaderKernel = `ffffffff81000000 T start_kernel
ffffffff81000100 T klp_enable_patch
ffffffff81010180 T vfs_read
ffffffff81010200 T kmalloc
ffffffff81800000 r __ksymtab_vfs_read
ffffffff81800000 R __start___ksymtab
ffffffff81800010 R __stop___ksymtab
ffffffff81800010 r __ksymtab_kmalloc
ffffffff81800010 R __start___ksymtab_gpl
ffffffff81800020 R __stop___ksymtab_gpl
ffffffffc0100000 T ext4_iget	[ext4]
ffffffffc0100100 t ext4_fill_super	[ext4]
`

func loaderIndex(t *testing.T, text string) *kallsyms.Index {
	t.Helper()
	ix, err := kallsyms.Parse("kernel", strings.NewReader(text), kallsyms.Options{})
	require.NoError(t, err)
	return ix
}

// TestNoSymbols: setup_load_info() refuses a file without a symbol table
// first, before it looks for struct module, with .modinfo's name or its
// stand-in; every kernel, so Refused says it too.
func TestNoSymbols(t *testing.T) {
	ix := loaderIndex(t, loaderKernel)
	stripped := func(b *elfobj.Builder) { b.NoSymtab = true }
	for _, tc := range []struct {
		name, modinfo string
		bare          bool
		kernel        string
	}{
		{"named", "name=fix_patch\x00livepatch=Y\x00", false, "fix_patch: module has no symbols (stripped?)"},
		{"no struct module either", "name=fix_patch\x00livepatch=Y\x00", true, "fix_patch: module has no symbols (stripped?)"},
		{"no name", "livepatch=Y\x00", false, "(missing .modinfo section or name field): module has no symbols (stripped?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse("fix.ko", loaderModule(tc.modinfo, tc.bare, stripped))
			require.NoError(t, err)
			require.NotNil(t, m.noSymbols)
			assert.Equal(t, tc.kernel, m.noSymbols.Kernel)
			assert.Contains(t, m.noSymbols.Hint, "--strip-debug")
			assert.Same(t, m.noSymbols, m.Refused())
			assert.Same(t, m.noSymbols, m.Refusal(ErrNoSymbols))
			kinds := []string{}
			for _, r := range m.Refusals() {
				kinds = append(kinds, r.Kind())
			}
			if tc.bare {
				// The loader's order: the symbol table before struct
				// module; livepatch's own refusal (the fixture has
				// nothing for it to do) after the loader's.
				assert.Equal(t, []string{"no_symbols", "no_module_struct", "not_livepatch"}, kinds)
				assert.Same(t, m.noModuleStruct, m.Refusal(ErrNoModuleStruct))
			} else {
				assert.Equal(t, []string{"no_symbols", "not_livepatch"}, kinds)
				assert.Nil(t, m.Refusal(ErrNoModuleStruct))
			}
			res := m.Resolve(ix, ResolveOptions{})
			require.NotNil(t, res.LoadErr)
			require.ErrorIs(t, res.LoadErr, ErrNoSymbols)
			assert.Equal(t, "no_symbols", res.LoadErr.Kind())
			assert.False(t, res.OK(false))
		})
	}
	m, err := Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, nil))
	require.NoError(t, err)
	assert.Nil(t, m.noSymbols)
	assert.Nil(t, m.Refused())
	assert.Empty(t, m.Refusals())
	assert.Nil(t, m.Resolve(ix, ResolveOptions{}).LoadErr)
}

// TestWriteExec: module_enforce_rwx_sections() refuses the first section
// with SHF_WRITE and SHF_EXECINSTR, allocated or not, naming its index;
// after check_modinfo()'s refusal, before klp_enable_patch()'s.
func TestWriteExec(t *testing.T) {
	const wx = elf.SHF_WRITE | elf.SHF_EXECINSTR
	addWX := func(flags ...elf.SectionFlag) func(b *elfobj.Builder) {
		return func(b *elfobj.Builder) {
			b.AddSection(elfobj.BuildSection{Name: ".data.ok", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 8), Addralign: 8})
			for i, f := range flags {
				b.AddSection(elfobj.BuildSection{Name: []string{".text.wx", ".note.wx"}[i], Type: elf.SHT_PROGBITS, Flags: f, Data: make([]byte, 8), Addralign: 8})
			}
		}
	}
	ix := loaderIndex(t, loaderKernel)
	// Sections: 1 .text, 2 .modinfo, 3 struct module, 4 .data.ok, 5 and 6.
	for _, tc := range []struct {
		name   string
		flags  []elf.SectionFlag
		kernel string
	}{
		{"allocated", []elf.SectionFlag{elf.SHF_ALLOC | wx}, "fix_patch: section .text.wx (index 5) has invalid WRITE|EXEC flags"},
		{"not allocated, second", []elf.SectionFlag{elf.SHF_ALLOC | elf.SHF_EXECINSTR, wx}, "fix_patch: section .note.wx (index 6) has invalid WRITE|EXEC flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, addWX(tc.flags...)))
			require.NoError(t, err)
			require.NotNil(t, m.writeExec)
			assert.Equal(t, tc.kernel, m.writeExec.Kernel)
			assert.Contains(t, m.writeExec.Hint, "CONFIG_STRICT_MODULE_RWX")
			res := m.Resolve(ix, ResolveOptions{})
			require.ErrorIs(t, res.LoadErr, ErrWriteExec)
			assert.Equal(t, "write_exec", res.LoadErr.Kind())
		})
	}
	m, err := Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, addWX(elf.SHF_ALLOC|elf.SHF_EXECINSTR, elf.SHF_WRITE)))
	require.NoError(t, err)
	assert.Nil(t, m.writeExec, "write or execute, not both")

	// A kernel without CONFIG_LIVEPATCH refuses it in check_modinfo(),
	// first; klp_enable_patch() would come after.
	noKLP := loaderIndex(t, "ffffffff81000000 T start_kernel\n")
	m, err = Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, addWX(elf.SHF_ALLOC|wx)))
	require.NoError(t, err)
	require.ErrorIs(t, m.Resolve(noKLP, ResolveOptions{}).LoadErr, ErrNoLivepatch)
	m, err = Parse("fix.ko", respelt(t, loaderModule("name=fix_patch\x00livepatch=Y\x00", false, addWX(elf.SHF_ALLOC|wx)), "livepatch=Y\x00", "livepatcX=Y"))
	require.NoError(t, err)
	m.Format = FormatKLP // checkMarked's condition, for a module with no relocations
	m.checkMarked()
	require.NotNil(t, m.notMarked)
	require.ErrorIs(t, m.Resolve(ix, ResolveOptions{}).LoadErr, ErrWriteExec)
	assert.Same(t, m.writeExec, m.Refused())
}

// TestDuplicateExport: verify_exported_symbols() refuses the first export
// that vmlinux (either table) or a loaded module has already, owner
// "kernel" for vmlinux; a kallsyms that lists no vmlinux exports proves
// nothing about vmlinux; a loaded module of the patch's own name is not
// one (insmod fails earlier: File exists).
func TestDuplicateExport(t *testing.T) {
	exporting := func(names ...string) []byte {
		return loaderModule("name=fix_patch\x00livepatch=Y\x00", false, func(b *elfobj.Builder) {
			tab := b.AddSection(elfobj.BuildSection{Name: "__ksymtab", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 12*len(names)), Addralign: 4})
			for i, n := range names {
				b.AddSymbol(elfobj.BuildSymbol{Name: "__ksymtab_" + n, Value: uint64(12 * i), Size: 12, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT), Shndx: uint16(tab)})
			}
		})
	}
	ix := loaderIndex(t, loaderKernel)
	for _, tc := range []struct {
		name   string
		export []string
		kernel string // "": no refusal
		hint   string
	}{
		{"vmlinux", []string{"fix_new", "vfs_read"}, "fix_patch: exports duplicate symbol vfs_read (owned by kernel)", "vmlinux exports it already"},
		{"vmlinux GPL-only", []string{"kmalloc"}, "fix_patch: exports duplicate symbol kmalloc (owned by kernel)", "EXPORT_SYMBOL(kmalloc)"},
		{"a module", []string{"ext4_iget"}, "fix_patch: exports duplicate symbol ext4_iget (owned by ext4)", "module ext4 exports it already"},
		{"a module's own symbol, not exported", []string{"ext4_fill_super"}, "", ""},
		{"a name nobody has", []string{"fix_new"}, "", ""},
		{"the first found", []string{"ext4_iget", "vfs_read"}, "fix_patch: exports duplicate symbol ext4_iget (owned by ext4)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse("fix.ko", exporting(tc.export...))
			require.NoError(t, err)
			assert.Nil(t, m.Refused(), "depends on the kernel")
			e := m.Resolve(ix, ResolveOptions{}).LoadErr
			if tc.kernel == "" {
				assert.Nil(t, e)
				return
			}
			require.ErrorIs(t, e, ErrDuplicateExport)
			assert.Equal(t, "duplicate_export", e.Kind())
			assert.Equal(t, tc.kernel, e.Kernel)
			assert.Contains(t, e.Hint, tc.hint)
		})
	}
	m, err := Parse("fix.ko", exporting("vfs_read", "ext4_iget"))
	require.NoError(t, err)
	// Without CONFIG_KALLSYMS_ALL, vmlinux's exports are not listed: its
	// vfs_read may or may not be exported; ext4's still is.
	codeOnly := loaderIndex(t, "ffffffff81000000 T start_kernel\nffffffff81000100 T klp_enable_patch\nffffffff81010180 T vfs_read\nffffffffc0100000 T ext4_iget\t[ext4]\n")
	require.False(t, codeOnly.ListsExports())
	assert.Equal(t, "fix_patch: exports duplicate symbol ext4_iget (owned by ext4)", m.Resolve(codeOnly, ResolveOptions{}).LoadErr.Kernel)
	m, err = Parse("fix.ko", exporting("vfs_read"))
	require.NoError(t, err)
	assert.Nil(t, m.Resolve(codeOnly, ResolveOptions{}).LoadErr)
	// The patch itself loaded: its exports are its own.
	loaded := loaderIndex(t, loaderKernel+"ffffffffc0200000 T fix_new\t[fix_patch]\n")
	m, err = Parse("fix.ko", exporting("fix_new"))
	require.NoError(t, err)
	assert.Nil(t, m.Resolve(loaded, ResolveOptions{}).LoadErr)
	assert.Equal(t, "fix_patch: exports duplicate symbol fix_new (owned by fix_patch_v2)", m.Resolve(loaderIndex(t, loaderKernel+"ffffffffc0200000 T fix_new\t[fix_patch_v2]\n"), ResolveOptions{}).LoadErr.Kernel)
}

// TestCorpusDuplicateExport: Debian's crc-t10dif.ko exports crc_t10dif
// and crc_t10dif_update (its __ksymtab in that order, its symbol table
// the other way round), and the amd64 kallsyms has it loaded: against
// that kernel nothing is said (insmod fails earlier, File exists); with
// the loaded copy renamed, the loader refuses the file for the first
// export in its table.
func TestCorpusDuplicateExport(t *testing.T) {
	mod := testutil.Corpus(t, "amd64/modules/crc-t10dif.ko")
	text, err := os.ReadFile(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"))
	require.NoError(t, err)
	m, err := Open(mod)
	require.NoError(t, err)
	assert.Equal(t, []elfobj.Export{{Name: "crc_t10dif", GPL: false}, {Name: "crc_t10dif_update", GPL: false}}, m.elf.Exports())
	ix, err := kallsyms.Parse("kallsyms", bytes.NewReader(text), kallsyms.Options{})
	require.NoError(t, err)
	require.True(t, ix.HasObject("crc_t10dif"))
	assert.Nil(t, m.Resolve(ix, ResolveOptions{}).LoadErr)

	renamed := bytes.ReplaceAll(text, []byte("\t[crc_t10dif]\n"), []byte("\t[crc_t10dif_old]\n"))
	ix, err = kallsyms.Parse("kallsyms", bytes.NewReader(renamed), kallsyms.Options{})
	require.NoError(t, err)
	e := m.Resolve(ix, ResolveOptions{}).LoadErr
	require.ErrorIs(t, e, ErrDuplicateExport)
	assert.Equal(t, "crc_t10dif: exports duplicate symbol crc_t10dif (owned by crc_t10dif_old)", e.Kernel)
}

// TestLoadErrConfig: a kernel configuration decides CONFIG_LIVEPATCH and
// CONFIG_STRICT_MODULE_RWX instead of the symbols and the default: a
// kernel without STRICT_MODULE_RWX loads a section both writable and
// executable (module_enforce_rwx_sections() returns at once); one without
// LIVEPATCH refuses a patch whatever its symbols say, and the hint names
// the file; one with it accepts a patch its symbols would have refused.
func TestLoadErrConfig(t *testing.T) {
	wx := loaderModule("name=fix_patch\x00livepatch=Y\x00", false, func(b *elfobj.Builder) {
		b.AddSection(elfobj.BuildSection{Name: ".text.wx", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 8})
	})
	m, err := Parse("fix.ko", wx)
	require.NoError(t, err)
	ix := loaderIndex(t, loaderKernel)
	noKLP := loaderIndex(t, "ffffffff81000000 T start_kernel\n")
	const file = "boot/config-6.1.0"

	for _, tc := range []struct {
		name string
		ix   *kallsyms.Index
		cfg  *KernelConfig
		want error  // nil: loads
		hint string // in the hint
	}{
		{"no configuration: RWX assumed", ix, nil, ErrWriteExec, "every kernel with CONFIG_STRICT_MODULE_RWX"},
		{"STRICT_MODULE_RWX set", ix, &KernelConfig{File: file, Livepatch: true, StrictModuleRWX: true}, ErrWriteExec, "its configuration " + file + " sets CONFIG_STRICT_MODULE_RWX"},
		{"STRICT_MODULE_RWX not set", ix, &KernelConfig{File: file, Livepatch: true}, nil, ""},
		{"symbols without klp_enable_patch", noKLP, nil, ErrNoLivepatch, "no klp_enable_patch"},
		{"LIVEPATCH set, whatever the symbols", noKLP, &KernelConfig{File: file, Livepatch: true}, nil, ""},
		{"LIVEPATCH not set, whatever the symbols", ix, &KernelConfig{File: file}, ErrNoLivepatch, "its configuration " + file + " does not set it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := m.Resolve(tc.ix, ResolveOptions{Config: tc.cfg}).LoadErr
			if tc.want == nil {
				assert.Nil(t, e)
				return
			}
			require.ErrorIs(t, e, tc.want)
			assert.Contains(t, e.Hint, tc.hint)
		})
	}
	// The module's own record is left as it was read.
	assert.NotContains(t, m.writeExec.Hint, file)
}

// TestNoPLTSection: powerpc's module_frob_arch_sections() refuses a
// module without .stubs, after check_modinfo() and before
// module_enforce_rwx_sections(); other architectures never look for it.
func TestNoPLTSection(t *testing.T) {
	ix := loaderIndex(t, loaderKernel)
	ppc := func(stubs, wx bool) []byte {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_PPC64, Flags: 2}
		text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 4), Addralign: 4})
		b.AddSymbol(elfobj.BuildSymbol{Name: "fix", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 4})
		b.AddSymbol(elfobj.BuildSymbol{Name: "klp_enable_patch", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=fix_patch\x00livepatch=Y\x00"), Addralign: 1})
		b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
		if stubs {
			b.AddSection(elfobj.BuildSection{Name: ".stubs", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1, Addralign: 8})
		}
		if wx {
			b.AddSection(elfobj.BuildSection{Name: ".wx", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_EXECINSTR, Data: make([]byte, 4), Addralign: 4})
		}
		return b.Bytes()
	}
	m, err := Parse("fix.ko", ppc(false, true))
	require.NoError(t, err)
	require.NotNil(t, m.noPLTSection)
	assert.Equal(t, "fix_patch: doesn't contain .stubs.", m.noPLTSection.Kernel)
	assert.Same(t, m.noPLTSection, m.Refused(), "before the W+X section")
	res := m.Resolve(ix, ResolveOptions{})
	require.ErrorIs(t, res.LoadErr, ErrNoPLTSection)
	assert.Equal(t, "no_plt_section", res.LoadErr.Kind())
	assert.False(t, res.OK(false))

	m, err = Parse("fix.ko", ppc(true, false))
	require.NoError(t, err)
	assert.Nil(t, m.noPLTSection)
	assert.Nil(t, m.Resolve(ix, ResolveOptions{}).LoadErr)

	m, err = Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, nil))
	require.NoError(t, err)
	assert.Nil(t, m.noPLTSection, "x86_64 has no such section")

	// arm64 (and arm): .plt and .init.plt, looked for by a kernel with
	// module PLTs, assumed without a configuration.
	a64 := func(names ...string) []byte {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_AARCH64}
		text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 4), Addralign: 4})
		b.AddSymbol(elfobj.BuildSymbol{Name: "fix", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 4})
		b.AddSymbol(elfobj.BuildSymbol{Name: "klp_enable_patch", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=fix_patch\x00livepatch=Y\x00"), Addralign: 1})
		b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
		for _, n := range names {
			fl := elf.SHF_ALLOC | elf.SHF_EXECINSTR
			if n == ".wx" {
				fl |= elf.SHF_WRITE
			}
			b.AddSection(elfobj.BuildSection{Name: n, Type: elf.SHT_PROGBITS, Flags: fl, Data: []byte{0}, Addralign: 1})
		}
		return b.Bytes()
	}
	m, err = Parse("fix.ko", a64(".plt"))
	require.NoError(t, err)
	require.NotNil(t, m.noPLTSection)
	assert.Equal(t, ".init.plt", m.noPLTSection.Section)
	assert.Equal(t, "fix_patch: module PLT section(s) missing", m.noPLTSection.Kernel)
	require.ErrorIs(t, m.Resolve(ix, ResolveOptions{}).LoadErr, ErrNoPLTSection)
	withPLTs := &KernelConfig{File: "config", Livepatch: true, StrictModuleRWX: true, ModulePLTs: true}
	require.ErrorIs(t, m.Resolve(ix, ResolveOptions{Config: withPLTs}).LoadErr, ErrNoPLTSection)
	without := &KernelConfig{File: "config", Livepatch: true, StrictModuleRWX: true}
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Config: without}).LoadErr, "a kernel without module PLTs never looks")
	m, err = Parse("fix.ko", a64(".plt", ".init.plt"))
	require.NoError(t, err)
	assert.Nil(t, m.noPLTSection)

	// ... and .text.ftrace_trampoline, which module_finalize() looks for
	// once the relocations are applied, with module PLTs and dynamic
	// ftrace.
	require.NotNil(t, m.noFtracePLT)
	assert.Same(t, m.noFtracePLT, m.Refused())
	assert.Equal(t, ".text.ftrace_trampoline", m.noFtracePLT.Section)
	assert.Equal(t, "fix_patch: module_finalize(): no .text.ftrace_trampoline: -ENOEXEC, with no message (insmod: Exec format error)", m.noFtracePLT.Kernel)
	res = m.Resolve(ix, ResolveOptions{})
	require.ErrorIs(t, res.LoadErr, ErrNoPLTSection)
	assert.Equal(t, "no_plt_section", res.LoadErr.Kind())
	withFtrace := *withPLTs
	withFtrace.DynamicFtrace = true
	assert.Same(t, m.noFtracePLT, m.Resolve(ix, ResolveOptions{Config: &withFtrace}).LoadErr)
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Config: withPLTs}).LoadErr, "a kernel without dynamic ftrace never looks")
	noPLTs := withFtrace
	noPLTs.ModulePLTs = false
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Config: &noPLTs}).LoadErr, "nor one without module PLTs")
	// A W+X section is refused before (layout_and_allocate()).
	m, err = Parse("fix.ko", a64(".plt", ".init.plt", ".wx"))
	require.NoError(t, err)
	require.NotNil(t, m.noFtracePLT)
	require.NotNil(t, m.writeExec)
	assert.Same(t, m.writeExec, m.Refused())
	assert.Same(t, m.writeExec, m.Resolve(ix, ResolveOptions{}).LoadErr)
	m, err = Parse("fix.ko", a64(".plt", ".init.plt", ".text.ftrace_trampoline"))
	require.NoError(t, err)
	assert.Nil(t, m.Refused())
	assert.Nil(t, m.Resolve(ix, ResolveOptions{}).LoadErr)
	// From 6.12, module_init_ftrace_plt() wants .init.text.ftrace_trampoline
	// too, and every arm64 kernel has module PLTs (6.5 removed
	// CONFIG_ARM64_MODULE_PLTS): a 6.1 module's missing section refuses it,
	// whatever the configuration says of module PLTs.
	res = m.Resolve(ix, ResolveOptions{Generation: kgen.Linux6_12})
	require.ErrorIs(t, res.LoadErr, ErrNoPLTSection)
	assert.Equal(t, ".init.text.ftrace_trampoline", res.LoadErr.Section)
	assert.Equal(t, "fix_patch: module_finalize(): no .init.text.ftrace_trampoline: -ENOEXEC, with no message (insmod: Exec format error)", res.LoadErr.Kernel)
	assert.Equal(t, ErrNoPLTSection, m.Resolve(ix, ResolveOptions{Generation: kgen.Linux7_2, Config: &noPLTs}).LoadErr.Err)
	m, err = Parse("fix.ko", a64(".plt", ".init.plt", ".text.ftrace_trampoline", ".init.text.ftrace_trampoline"))
	require.NoError(t, err)
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Generation: kgen.Linux6_12}).LoadErr)
	m, err = Parse("fix.ko", a64(".plt"))
	require.NoError(t, err)
	require.ErrorIs(t, m.Resolve(ix, ResolveOptions{Generation: kgen.Linux6_12, Config: without}).LoadErr, ErrNoPLTSection,
		"a 6.12 kernel always looks for the PLT sections")
	// Other architectures have no such section.
	m, err = Parse("fix.ko", ppc(true, false))
	require.NoError(t, err)
	assert.Nil(t, m.noFtracePLT)
}
