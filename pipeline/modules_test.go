// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{testutil.RepoRoot(), "testdata"}, parts...)...)
}

// copyFile writes src's bytes (zstd-compressed when the name ends .zst)
// to dst, making its directory.
func copyFile(t *testing.T, src, dst string) {
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	if filepath.Ext(dst) == ".zst" {
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		b = enc.EncodeAll(b, nil)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, b, 0o644))
}

// TestModuleFiles: a tree of modules, as /lib/modules/VERSION holds them
// (nested, compressed, dashed names), is indexed by module name; what is
// not one kernel's modules is refused, naming the files.
func TestModuleFiles(t *testing.T) {
	xfs := repoFile("klp", "modules", "xfs.ko")
	dir := t.TempDir()
	copyFile(t, xfs, filepath.Join(dir, "kernel", "fs", "xfs", "xfs.ko.zst"))
	copyFile(t, xfs, filepath.Join(dir, "kernel", "lib", "crc-t10dif.ko"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "modules.dep"), []byte("kernel/fs/xfs/xfs.ko.zst:\n"), 0o644))
	require.NoError(t, os.Symlink("/nonexistent", filepath.Join(dir, "build")))

	mf, err := FindModules(t.Context(), []string{dir})
	require.NoError(t, err)
	require.Equal(t, 2, mf.Len()) // modules.dep and the build link are no modules
	p, err := mf.Path("xfs")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "kernel", "fs", "xfs", "xfs.ko.zst"), p)
	p, err = mf.Path("crc_t10dif") // KBUILD_MODNAME of crc-t10dif.ko
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "kernel", "lib", "crc-t10dif.ko"), p)
	p, err = mf.Path("ext4")
	require.NoError(t, err)
	require.Empty(t, p)

	tg, err := mf.Target("xfs", "x86_64", nil, true)
	require.NoError(t, err)
	require.Equal(t, "xfs", tg.Name)
	again, err := mf.Target("xfs", "x86_64", binary.LittleEndian, true)
	require.NoError(t, err)
	require.Same(t, tg, again, "read once")
	_, err = mf.Target("xfs", "x86_64", binary.BigEndian, true)
	require.ErrorIs(t, err, ErrModuleFile)
	require.ErrorContains(t, err, "xfs.ko.zst: unusable module file: a little-endian module for x86_64, and the patch is big-endian")

	// crc-t10dif.ko is xfs.ko under another name: its .modinfo says so.
	_, err = mf.Target("crc_t10dif", "x86_64", nil, true)
	require.ErrorIs(t, err, ErrModuleFile)
	require.ErrorContains(t, err, "crc-t10dif.ko: unusable module file: its .modinfo names module xfs, not crc_t10dif")
	// Another architecture's module.
	arm := filepath.Join(t.TempDir(), "thumb.ko")
	copyFile(t, repoFile("modplt", "thumb.o"), arm)
	mf2, err := FindModules(t.Context(), []string{arm})
	require.NoError(t, err)
	_, err = mf2.Target("thumb", "x86_64", nil, true)
	require.ErrorIs(t, err, ErrModuleFile)
	require.ErrorContains(t, err, "a module for arm, and the patch is for x86_64")

	// Two kernels' trees: two files of one module. One file named twice
	// (the file and its directory, or a link to it) is one.
	mf3, err := FindModules(t.Context(), []string{dir, filepath.Dir(xfs)})
	require.NoError(t, err)
	_, err = mf3.Path("xfs")
	require.ErrorIs(t, err, ErrModuleFile)
	require.ErrorContains(t, err, "2 files for module xfs")
	link := filepath.Join(t.TempDir(), "xfs.ko")
	require.NoError(t, os.Symlink(xfs, link))
	mf4, err := FindModules(t.Context(), []string{xfs, filepath.Dir(xfs), link})
	require.NoError(t, err)
	p, err = mf4.Path("xfs")
	require.NoError(t, err)
	require.Equal(t, xfs, p)

	_, err = FindModules(t.Context(), []string{repoFile("klp", "order-patch.c")})
	require.ErrorContains(t, err, "order-patch.c: not a module file")
	_, err = FindModules(t.Context(), []string{filepath.Join(dir, "nope")})
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestRunModules: Run checks what a patch defers to a module the kernel
// lacks against the module's file, and names the modules it has no file
// for.
func TestRunModules(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	mf, err := FindModules(t.Context(), []string{repoFile("klp", "modules")})
	require.NoError(t, err)

	order, err := klp.Open(repoFile("klp", "order-patch.ko"))
	require.NoError(t, err)
	rep, err := Run(order, ix, Options{Modules: mf})
	require.NoError(t, err)
	res := rep.Resolution
	require.Equal(t, []klp.CheckedObject{{Object: "xfs", Path: repoFile("klp", "modules", "xfs.ko"), OK: 3, Failed: 5}}, res.Checked)
	require.Equal(t, 3, res.Deferred)
	require.Equal(t, 5, res.Errors)
	require.Empty(t, rep.Unchecked)
	require.False(t, rep.OK(false))

	// The sample's ext4 relocation is deferred on a System.map-like list
	// without modules; ext4 has no file here.
	sample, err := klp.Open(repoFile("klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	noMods, err := kallsyms.ParseBytes("vmlinux-only", []byte("ffffffff81000000 T start_kernel\nffffffff81010180 T vfs_read\nffffffff81020000 D jiffies\n"), kallsyms.Options{})
	require.NoError(t, err)
	rep, err = Run(sample, noMods, Options{Modules: mf})
	require.NoError(t, err)
	require.Equal(t, []string{"ext4"}, rep.Unchecked)
	require.Equal(t, []klp.CheckedObject{{Object: "xfs", Path: repoFile("klp", "modules", "xfs.ko"), OK: 1}}, rep.Resolution.Checked)

	// A loaded module whose functions the patch replaces is read too, for
	// its ftrace call sites (nfs_fast is notrace); it is never unchecked.
	lp, err := klp.Open(repoFile("klp", "klp-patch.ko"))
	require.NoError(t, err)
	lp.Funcs = []klp.Func{{Name: "nfs_open", Object: "nfs", Section: ".data"}, {Index: 1, Name: "nfs_fast", Object: "nfs", Section: ".data", Offset: 8}}
	loaded, err := kallsyms.ParseBytes("loaded", []byte("ffffffff81000000 T start_kernel\nffffffff81000100 T klp_enable_patch\nffffffff81010180 T vfs_read\n"+
		"ffffffffc0100000 T nfs_fast\t[nfs]\nffffffffc0100010 T nfs_open\t[nfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	rep, err = Run(lp, loaded, Options{Modules: mf})
	require.NoError(t, err)
	require.Empty(t, rep.Unchecked)
	require.Equal(t, klp.Resolved, rep.Resolution.Funcs[0].Status)
	require.ErrorIs(t, rep.Resolution.Funcs[1].Err, klp.ErrNotTraceable)

	// A loaded nfs whose lines are not nfs.ko's: another build, left out.
	otherNfs, err := kallsyms.ParseBytes("other", []byte("ffffffff81000000 T start_kernel\nffffffff81000100 T klp_enable_patch\nffffffff81010180 T vfs_read\n"+
		"ffffffffc0100000 T nfs_fast\t[nfs]\nffffffffc0100010 T nfs_open\t[nfs]\nffffffffc0100040 t nfs_new_helper\t[nfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	rep, err = Run(lp, otherNfs, Options{Modules: mf})
	require.NoError(t, err)
	require.Equal(t, []string{"nfs"}, rep.OtherBuild)
	require.Equal(t, klp.Resolved, rep.Resolution.Funcs[1].Status, "not checked against another build")

	// A patch for another architecture's module file is refused.
	arm := filepath.Join(t.TempDir(), "xfs.ko")
	copyFile(t, repoFile("modplt", "thumb.o"), arm)
	mfArm, err := FindModules(t.Context(), []string{arm})
	require.NoError(t, err)
	_, err = Run(order, ix, Options{Modules: mfArm})
	require.ErrorIs(t, err, ErrModuleFile)
}

// TestModuleFilesConcurrent: check's workers read a target at once; it is
// read once, and all get it.
func TestModuleFilesConcurrent(t *testing.T) {
	mf, err := FindModules(t.Context(), []string{repoFile("klp", "modules")})
	require.NoError(t, err)
	got := make(chan *klp.Target, 8)
	for range 8 {
		go func() {
			tg, err := mf.Target("xfs", "x86_64", nil, false)
			if err != nil {
				tg = nil
			}
			got <- tg
		}()
	}
	first := <-got
	require.NotNil(t, first)
	for range 7 {
		require.Same(t, first, <-got)
	}
}

// ModuleFiles.Vermagic: the first module by name (KBUILD_MODNAME, so
// "crc-t10dif.ko" sorts as crc_t10dif), compressed or not; none when that
// module has no vermagic, or two files; an unreadable one is an error
// naming it.
func TestModuleFilesVermagic(t *testing.T) {
	demo := repoFile("kbuild", "klp-demo.ko") // Kbuild wrote its vermagic
	m, err := klp.Open(demo)
	require.NoError(t, err)
	want := m.ModInfo("vermagic")
	require.NotEmpty(t, want)

	dir := t.TempDir()
	copyFile(t, demo, filepath.Join(dir, "b", "crc-t10dif.ko.zst"))
	copyFile(t, repoFile("klp", "modules", "xfs.ko"), filepath.Join(dir, "a", "xfs.ko")) // no vermagic; sorts after
	mf, err := FindModules(t.Context(), []string{dir})
	require.NoError(t, err)
	magic, from, err := mf.Vermagic()
	require.NoError(t, err)
	assert.Equal(t, want, magic)
	assert.Equal(t, filepath.Join(dir, "b", "crc-t10dif.ko.zst"), from)

	none, err := FindModules(t.Context(), []string{filepath.Join(dir, "a")})
	require.NoError(t, err)
	magic, from, err = none.Vermagic()
	require.NoError(t, err)
	assert.Empty(t, magic)
	assert.Empty(t, from)

	copyFile(t, demo, filepath.Join(dir, "c", "crc_t10dif.ko")) // a second crc_t10dif
	two, err := FindModules(t.Context(), []string{dir})
	require.NoError(t, err)
	magic, _, err = two.Vermagic()
	require.NoError(t, err)
	assert.Empty(t, magic)

	bad := filepath.Join(t.TempDir(), "af_key.ko")
	require.NoError(t, os.WriteFile(bad, []byte("\x7fELF\x02\x01"), 0o644))
	broken, err := FindModules(t.Context(), []string{bad, filepath.Join(dir, "a")})
	require.NoError(t, err)
	_, _, err = broken.Vermagic()
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad)
}

// arm64Module is an arm64 module in byte order o: .modinfo of modinfo,
// one function fn, and, when obj is not "", a livepatch relocation of a
// call to obj's callee (a patch).
func arm64Module(o binary.ByteOrder, modinfo, fn, obj, callee string) []byte {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: o, Machine: elf.EM_AARCH64}
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte(modinfo), Addralign: 1})
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 4})
	b.AddSymbol(elfobj.BuildSymbol{Name: fn, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 8})
	if obj != "" {
		s := b.AddSymbol(elfobj.BuildSymbol{Name: ".klp.sym." + obj + "." + callee + ",0", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: klp.SHNLivepatch})
		i := b.AddRelocs(".klp.rela."+obj+"..text", true, text, []elfobj.Reloc{{Offset: 4, Sym: s, Type: uint32(elf.R_AARCH64_CALL26)}})
		b.Sections[i-1].Flags |= elf.SHF_ALLOC | klp.SHFRelaLivepatch
	}
	return b.Bytes()
}

// A big-endian arm64 patch and a little-endian arm64 module file have one
// Arch; the kernel never loads both (elf_check_arch()), and the file is
// refused as the patch's module, whichever way round.
func TestModuleFileByteOrder(t *testing.T) {
	ix, err := kallsyms.ParseBytes("kallsyms", []byte("ffff800008000000 T _stext\nffff800008010000 T klp_enable_patch\n"), kallsyms.Options{})
	require.NoError(t, err)
	for _, c := range []struct {
		patch, module binary.ByteOrder
		err           string
	}{
		{binary.BigEndian, binary.LittleEndian, "a little-endian module for arm64, and the patch is big-endian"},
		{binary.LittleEndian, binary.BigEndian, "a big-endian module for arm64, and the patch is little-endian"},
		{binary.BigEndian, binary.BigEndian, ""},
	} {
		dir := t.TempDir()
		ko := filepath.Join(dir, "foo.ko")
		require.NoError(t, os.WriteFile(ko, arm64Module(c.module, "name=foo\x00", "foo_fn", "", ""), 0o644))
		mf, err := FindModules(t.Context(), []string{dir})
		require.NoError(t, err)
		p, err := klp.Parse("p.ko", arm64Module(c.patch, "name=p\x00livepatch=Y\x00", "p_fn", "foo", "foo_fn"))
		require.NoError(t, err)
		require.Equal(t, c.patch, p.ByteOrder)
		rep, err := Run(p, ix, Options{Modules: mf})
		if c.err != "" {
			require.ErrorIs(t, err, ErrModuleFile)
			require.EqualError(t, err, ko+": unusable module file: "+c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, []klp.CheckedObject{{Object: "foo", Path: ko, OK: 1}}, rep.Resolution.Checked)
	}
}

// A kernel with a module of the patch's own name loaded refuses another
// (add_unformed_module(): -EEXIST): a note, not a failure.
func TestAlreadyLoaded(t *testing.T) {
	m, err := klp.Open(repoFile("klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	example, err := os.ReadFile(repoFile("kallsyms", "example.txt"))
	require.NoError(t, err)
	for _, c := range []struct {
		extra string
		want  bool
	}{
		{"", false},
		{"ffffffffc0300000 t livepatch_vfs_read\t[livepatch_sample]\n", true},
		{"ffffffffc0300000 t livepatch_vfs_read\t[livepatch_other]\n", false},
	} {
		ix, err := kallsyms.ParseBytes("k", append(slices.Clone(example), c.extra...), kallsyms.Options{})
		require.NoError(t, err)
		rep, err := Run(m, ix, Options{})
		require.NoError(t, err)
		assert.Equal(t, c.want, rep.AlreadyLoaded, "%q", c.extra)
		assert.True(t, rep.OK(false), "a note only")
	}
}
