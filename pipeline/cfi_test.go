// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// A real module's function pointers all land on code the kernel's CFI
// slow path knows: its own core text (the shadow), its init text (the
// module struct's init, which __module_address() finds), or the kernel's.
func TestCorpusFunctionPointersKnown(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := modplt.Open(testutil.Corpus(t, "amd64/modules/xfs.ko"))
	require.NoError(t, err)
	img, err := m.Link(modplt.LinkOptions{Resolve: Resolver(ix, true)})
	require.NoError(t, err)
	require.True(t, img.OK(), "%v", img.Errors)
	rep, err := recordCFI(img)
	require.NoError(t, err)
	assert.Greater(t, rep.Pointers, 1000)
	assert.Empty(t, rep.Unknown)
	assert.True(t, rep.Shadowed)
}

// The shadow's pages are the kernel's: arm64 btrfs's core text, laid out
// with 64 KiB pages, covers a sixteenth as many shadow pages (rounded
// out) as with 4 KiB ones.
func TestCFIPageSize(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := modplt.Open(testutil.Corpus(t, "arm64/modules/btrfs.ko"))
	require.NoError(t, err)
	etext := KernelEtext(ix)
	inKernel := func(string) (uint64, bool) { return etext - 0x1000, true } // btrfs's dependencies too
	pages := map[uint64]int{}
	for _, size := range []uint64{4 << 10, 64 << 10} {
		img, err := m.Link(modplt.LinkOptions{PageSize: size, Resolve: inKernel, KernelEtext: etext})
		require.NoError(t, err)
		require.True(t, img.OK(), "%v", img.Errors)
		rep, err := recordCFI(img)
		require.NoError(t, err)
		require.True(t, rep.Shadowed)
		assert.Zero(t, rep.TextStart%size, "text starts on a page")
		assert.Equal(t, int((rep.TextEnd-rep.TextStart+size-1)/size), rep.Pages, "%d-byte pages", size)
		pages[size] = rep.Pages
	}
	assert.Greater(t, pages[4<<10], 100)
	assert.Equal(t, (pages[4<<10]+15)/16, pages[64<<10])
}

// A pointer to a function outside the module and the kernel's text is
// reported; pointers to the module's core and init functions are not.
func TestFunctionPointerOutsideModule(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 32), Addralign: 16})
	initText := b.AddSection(elfobj.BuildSection{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 16})
	data := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 24), Addralign: 8})
	fn := elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC)
	core := b.AddSymbol(elfobj.BuildSymbol{Name: "core_fn", Info: fn, Shndx: uint16(text), Size: 32})
	init := b.AddSymbol(elfobj.BuildSymbol{Name: "init_module", Info: fn, Shndx: uint16(initText), Size: 16})
	abs := b.AddSymbol(elfobj.BuildSymbol{Name: "stray_fn", Info: fn, Shndx: uint16(elf.SHN_ABS), Value: 0x1000})
	b.AddRelocs(".rela.data", true, data, []elfobj.Reloc{
		{Offset: 0, Sym: core, Type: uint32(elf.R_X86_64_64)},
		{Offset: 8, Sym: init, Type: uint32(elf.R_X86_64_64)},
		{Offset: 16, Sym: abs, Type: uint32(elf.R_X86_64_64)},
	})
	m, err := modplt.Parse("fp.ko", b.Bytes())
	require.NoError(t, err)
	img, err := m.Link(modplt.LinkOptions{Resolve: func(string) (uint64, bool) { return 0, false }})
	require.NoError(t, err)
	require.True(t, img.OK(), "%v", img.Errors)
	rep, err := recordCFI(img)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Pointers)
	assert.Equal(t, []string{".data+0x10 -> stray_fn (0x1000)"}, rep.Unknown)
}

// callsTo is an x86_64 module whose .text calls each of names.
func callsTo(names ...string) []byte { return licensedCallsTo("", names...) }

// licensedCallsTo is callsTo with a .modinfo license= (none when "").
func licensedCallsTo(license string, names ...string) []byte {
	modinfo := ""
	if license != "" {
		modinfo = "license=" + license + "\x00name=calls\x00"
	}
	return modinfoCallsTo(modinfo, names...)
}

// modinfoCallsTo is callsTo with a .modinfo section of modinfo's bytes
// (none when "").
func modinfoCallsTo(modinfo string, names ...string) []byte {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	if modinfo != "" {
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte(modinfo), Addralign: 1})
	}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8*len(names)), Addralign: 16})
	var rs []elfobj.Reloc
	for i, n := range names {
		s := b.AddSymbol(elfobj.BuildSymbol{Name: n, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		rs = append(rs, elfobj.Reloc{Offset: uint64(8*i + 1), Sym: s, Type: uint32(elf.R_X86_64_PLT32), Addend: -4})
	}
	b.AddRelocs(".rela.text", true, text, rs)
	return b.Bytes()
}

// Ordinary symbols unresolved while a module the module depends on
// (.modinfo depends=) is not loaded: the report names that module (once,
// and not one that is loaded), with and without linking. Without
// ordinary symbols unresolved, or without depends=, it names none.
func TestUnloadedDepends(t *testing.T) {
	kernel := "ffffffff81000000 T _stext\nffffffff81001000 T _printk\nffffffff81002000 r __ksymtab__printk\n" +
		"ffffffffc0001000 T crc32c\t[libcrc32c]\n"
	ix, err := kallsyms.ParseBytes("kallsyms", []byte(kernel), kallsyms.Options{})
	require.NoError(t, err)
	obj := modinfoCallsTo("license=GPL\x00depends=xfrm_algo,libcrc32c,xfrm_algo\x00name=calls\x00", "_printk", "crc32c", "xfrm_probe_algs")
	ko, err := klp.Convert("calls.ko", obj, nil)
	require.NoError(t, err)
	m, err := klp.Parse("calls.ko", ko)
	require.NoError(t, err)
	for _, link := range []bool{false, true} {
		rep, err := Run(m, ix, Options{Link: link})
		require.NoError(t, err)
		assert.Equal(t, []string{"xfrm_algo"}, rep.UnloadedDepends, "link %v", link)
		if link {
			assert.Equal(t, []string{"xfrm_probe_algs"}, rep.Image.Unresolved)
		} else {
			assert.Equal(t, []string{"xfrm_probe_algs"}, rep.LoaderMissing)
		}
	}
	path := filepath.Join(t.TempDir(), "kallsyms")
	require.NoError(t, os.WriteFile(path, []byte(kernel), 0o644))
	rows, _ := Fleet(t.Context(), m, KernelFiles([]string{path}...), FleetOptions{})
	require.Len(t, rows, 1)
	assert.Equal(t, []string{"xfrm_algo"}, rows[0].UnloadedDepends)

	// Every symbol resolves: no note, whatever depends= says.
	obj = modinfoCallsTo("depends=xfrm_algo\x00", "_printk", "crc32c")
	ko, err = klp.Convert("calls.ko", obj, nil)
	require.NoError(t, err)
	m, err = klp.Parse("calls.ko", ko)
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{})
	require.NoError(t, err)
	assert.Empty(t, rep.LoaderMissing)
	assert.Nil(t, rep.UnloadedDepends)

	assert.Nil(t, UnloadedDepends("xfrm_algo", ix, []string{".klp.sym.xfrm_algo.xfrm_probe_algs,0"}), "livepatch symbols wait for their module")
	assert.Nil(t, UnloadedDepends("", ix, []string{"xfrm_probe_algs"}))
	assert.Equal(t, []string{"a", "b"}, UnloadedDepends(" a,,b ,libcrc32c", ix, []string{"x"}))
	// modpost writes file names, with dashes; kallsyms has the module's
	// name, with underscores.
	ix, err = kallsyms.ParseBytes("kallsyms", []byte(kernel+"ffffffffc0003000 T i2c_bit_add_bus\t[i2c_algo_bit]\n"), kallsyms.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"ttm", "gpu_sched"}, UnloadedDepends("ttm,i2c-algo-bit,gpu-sched,gpu_sched", ix, []string{"x"}))
}

// The loader resolves a module's ordinary symbols among the exported ones:
// vfs_read is in the 6.1 kernel but not exported, so it does not resolve,
// and NotExported says why. An index that does not list the exports
// (arm64's kallsyms, code symbols only) cannot tell, and resolves it.
func TestCorpusResolverExportsOnly(t *testing.T) {
	m, err := modplt.Parse("calls.ko", callsTo("vfs_read", "_printk", "no_such_function"))
	require.NoError(t, err)
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	img, err := m.Link(modplt.LinkOptions{Resolve: Resolver(ix, true)})
	require.NoError(t, err)
	assert.Equal(t, []string{"no_such_function", "vfs_read"}, img.Unresolved)
	vfsRead, err := ix.Lookup("", "vfs_read", 0)
	require.NoError(t, err)
	assert.Equal(t, map[string]Hidden{"vfs_read": {Symbol: vfsRead}}, NotExported(ix, img.Unresolved, true))

	arm64, err := kallsyms.Open(testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	img, err = m.Link(modplt.LinkOptions{Resolve: Resolver(arm64, true)})
	require.NoError(t, err)
	assert.Equal(t, []string{"no_such_function"}, img.Unresolved)
	assert.Empty(t, NotExported(arm64, img.Unresolved, true))
}

// check --link names a symbol the kernel has but does not export in the
// kernel's row.
func TestCorpusFleetNotExported(t *testing.T) {
	obj := callsTo("vfs_read")
	ko, err := klp.Convert("calls.ko", obj, nil)
	require.NoError(t, err)
	m, err := klp.Parse("calls.ko", ko)
	require.NoError(t, err)
	rows, _ := Fleet(t.Context(), m, KernelFiles([]string{testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")}...), FleetOptions{Run: Options{Link: true}})
	require.Len(t, rows, 1)
	assert.False(t, rows[0].OK)
	assert.Equal(t, "link: .rela.text+0x1: R_X86_64_PLT32 against vfs_read: unresolved symbol (vmlinux has it at 0xffffffff813669e0, T, but does not export it)", rows[0].FirstError)
}

// EXPORT_SYMBOL_GPL(call_rcu): a module whose license is not
// GPL-compatible does not get it (find_symbol()'s gplok), and is told why;
// a GPL one does. _printk is for everyone.
func TestCorpusResolverGPLOnly(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		license    string
		unresolved []string
	}{
		{"GPL", nil},
		{"Dual MIT/GPL", nil},
		{"Proprietary", []string{"call_rcu"}},
		{"", []string{"call_rcu"}},
	} {
		m, err := modplt.Parse("calls.ko", licensedCallsTo(tc.license, "call_rcu", "_printk"))
		require.NoError(t, err)
		assert.Equal(t, tc.license, m.License)
		img, err := m.Link(modplt.LinkOptions{Resolve: Resolver(ix, m.GPLCompatible())})
		require.NoError(t, err)
		assert.Equal(t, tc.unresolved, img.Unresolved, "license %q", tc.license)
		hidden := NotExported(ix, img.Unresolved, m.GPLCompatible())
		if tc.unresolved == nil {
			assert.Empty(t, hidden)
			continue
		}
		require.Contains(t, hidden, "call_rcu")
		assert.True(t, hidden["call_rcu"].GPLOnly)
		assert.Equal(t, "vmlinux", hidden["call_rcu"].Object)
	}
}

// Without --link, the main job still names the ordinary symbols the
// module loader would not find (weak ones aside): insmod's "Unknown
// symbol". Linking reports them as unresolved instead.
func TestCorpusLoaderMissing(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("license=GPL\x00livepatch=Y\x00"), Addralign: 1})
	b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 48), Addralign: 16})
	var rs []elfobj.Reloc
	for i, n := range []string{"vfs_read", "_printk", "no_such_function", "call_rcu", "maybe_there", "klp_enable_patch"} {
		bind := elf.STB_GLOBAL
		if n == "maybe_there" {
			bind = elf.STB_WEAK
		}
		s := b.AddSymbol(elfobj.BuildSymbol{Name: n, Info: elf.ST_INFO(bind, elf.STT_NOTYPE)})
		rs = append(rs, elfobj.Reloc{Offset: uint64(1 + 6*i), Sym: s, Type: uint32(elf.R_X86_64_PLT32), Addend: -4})
	}
	b.AddRelocs(".rela.text", true, text, rs)
	m, err := klp.Parse("calls.ko", b.Bytes())
	require.NoError(t, err)
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"no_such_function", "vfs_read"}, rep.LoaderMissing) // call_rcu: GPL module
	require.Contains(t, rep.NotExported, "vfs_read")
	assert.False(t, rep.NotExported["vfs_read"].GPLOnly)
	assert.True(t, rep.OK(false)) // informational: the livepatch relocations resolved

	rep, err = Run(m, ix, Options{Link: true})
	require.NoError(t, err)
	assert.Nil(t, rep.LoaderMissing)
	assert.Equal(t, []string{"no_such_function", "vfs_read"}, rep.Image.Unresolved)
}

// KernelPageSize reads an arm64 kernel's page size off its symbols, and
// a link takes it when none is given: the corpus arm64 map's 4 KiB, 64
// KiB when swapper_pg_dir sits 64 KiB after reserved_pg_dir (as a
// kernel-64k's does), nothing for x86_64 or a list without them.
func TestKernelPageSize(t *testing.T) {
	arm64 := testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64")
	ix, err := kallsyms.Open(arm64, kallsyms.Options{})
	require.NoError(t, err)
	assert.Equal(t, uint64(4096), KernelPageSize(ix))
	amd64, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	assert.Zero(t, KernelPageSize(amd64))

	text, err := os.ReadFile(arm64)
	require.NoError(t, err)
	for _, tc := range []struct {
		swapper string
		want    uint64
	}{
		{"ffff800009667000", 64 << 10},
		{"ffff80000965b000", 16 << 10},
		{"ffff800009659000", 0}, // 8 KiB: no arm64 page size
		{"ffff800009656000", 0}, // below reserved_pg_dir
	} {
		b := bytes.Replace(text, []byte("ffff800009658000 T swapper_pg_dir\n"), []byte(tc.swapper+" T swapper_pg_dir\n"), 1)
		require.NotEqual(t, text, b)
		ix, err := kallsyms.ParseBytes("map", b, kallsyms.Options{})
		require.NoError(t, err)
		assert.Equal(t, tc.want, KernelPageSize(ix), tc.swapper)
		if tc.want != 64<<10 {
			continue
		}
		m, err := klp.Open(testutil.Corpus(t, "arm64/modules/md4.ko"))
		require.NoError(t, err)
		img, _, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, nil)
		require.NoError(t, err)
		assert.Equal(t, uint64(64<<10), img.PageSize)
		assert.Zero(t, img.Section(".init.text").Addr%(64<<10))
		// Given, it wins.
		img, _, err = Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{PageSize: 4096}, nil)
		require.NoError(t, err)
		assert.Equal(t, uint64(4096), img.PageSize)
	}
}

// TestLoaderLookupNames: the names the loader never looks up, or looks up
// under another name, per architecture: x86_64 passes
// _GLOBAL_OFFSET_TABLE_ (ignore_undef_symbol()) and s390 defines it, arm64
// looks it up (Unknown symbol); powerpc64 defines .TOC. and looks .name
// up as name (dedotify()).
func TestLoaderLookupNames(t *testing.T) {
	ix, err := kallsyms.Parse("kernel", strings.NewReader("ffffffff81000000 T start_kernel\nffffffff81010180 T vfs_read\n"), kallsyms.Options{})
	require.NoError(t, err)
	module := func(machine elf.Machine, order binary.ByteOrder, undef ...string) *klp.Module {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: order, Machine: machine}
		b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 8})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=m\x00license=GPL\x00"), Addralign: 1})
		b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
		for _, u := range undef {
			b.AddSymbol(elfobj.BuildSymbol{Name: u, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		}
		m, err := klp.Parse("m.ko", b.Bytes())
		require.NoError(t, err)
		return m
	}
	for _, tc := range []struct {
		name    string
		m       *klp.Module
		missing []string
	}{
		{"x86_64", module(elf.EM_X86_64, binary.LittleEndian, "_GLOBAL_OFFSET_TABLE_", "vfs_read", "gone"), []string{"gone"}},
		{"s390", module(elf.EM_S390, binary.BigEndian, "_GLOBAL_OFFSET_TABLE_", "vfs_read", "gone"), []string{"gone"}},
		{"arm64", module(elf.EM_AARCH64, binary.LittleEndian, "_GLOBAL_OFFSET_TABLE_", "vfs_read"), []string{"_GLOBAL_OFFSET_TABLE_"}},
		{"ppc64le", module(elf.EM_PPC64, binary.LittleEndian, ".TOC.", ".vfs_read", ".gone", "_GLOBAL_OFFSET_TABLE_"), []string{"_GLOBAL_OFFSET_TABLE_", "gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(tc.m, ix, Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.missing, rep.LoaderMissing)
		})
	}
	// Linked, arm64's _GLOBAL_OFFSET_TABLE_ is unresolved too.
	rep, err := Run(module(elf.EM_AARCH64, binary.LittleEndian, "_GLOBAL_OFFSET_TABLE_", "vfs_read"), ix, Options{Link: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"_GLOBAL_OFFSET_TABLE_"}, rep.Image.Unresolved)
	rep, err = Run(module(elf.EM_X86_64, binary.LittleEndian, "_GLOBAL_OFFSET_TABLE_", "vfs_read"), ix, Options{Link: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Image.Unresolved)
}
