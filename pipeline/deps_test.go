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

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// depsFile is one of testdata/kbuild/deps' modules, built by Kbuild:
// klpdep_top depends on klpdep_base and klpdep_mid, klpdep_mid on
// klpdep_base.
func depsFile(name string) string { return repoFile("kbuild", "deps", name) }

// openELF opens the ELF file at path with debug/elf (not the project's
// reader), closed when the test ends, and reads its symbols.
func openELF(t *testing.T, path string) (*elf.File, []elf.Symbol) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	syms, err := f.Symbols()
	require.NoError(t, err)
	return f, syms
}

// symbolIn is the value and section name of symbol name in the ELF file
// at path (debug/elf's reading).
func symbolIn(t *testing.T, path, name string) (uint64, string) {
	t.Helper()
	f, syms := openELF(t, path)
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s.Value, f.Sections[s.Section].Name
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, ""
}

// pc32At checks that the 32-bit field at off in section sec of img holds
// S + A - P for a call with addend -4, as R_X86_64_PLT32 makes it.
func pc32At(t *testing.T, img *modplt.Image, sec string, off, s uint64) {
	t.Helper()
	p := img.Section(sec)
	require.NotNil(t, p, sec)
	got := int32(binary.LittleEndian.Uint32(p.Data[off:]))
	assert.Equal(t, int64(s)-4-int64(p.Addr+off), int64(got), "%s+%#x", sec, off)
}

// TestLinkDependencies links klpdep_top against the corpus's System.map,
// which lists no module: its dependencies are laid out first from their
// files, in modprobe's order (klpdep_base, then klpdep_mid), from the
// module area's start, each past the last and its guard page, and its
// calls into them hold the addresses the tests compute from debug/elf's
// reading of the dependencies' files.
func TestLinkDependencies(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	mf, err := FindModules(t.Context(), []string{repoFile("kbuild", "deps")})
	require.NoError(t, err)
	m, err := klp.Open(depsFile("klpdep-top.ko"))
	require.NoError(t, err)

	img, _, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"klpdep_base_secret", "klpdep_mid_twice"}, img.Unresolved, "without the files")

	img, deps, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, mf)
	require.NoError(t, err)
	require.Len(t, deps, 2)
	base, mid := deps[0], deps[1]
	assert.Equal(t, "klpdep_base", base.Name)
	assert.Equal(t, depsFile("klpdep-base.ko"), base.Path)
	assert.Equal(t, 2, base.Exports)
	assert.Equal(t, "klpdep_mid", mid.Name)
	assert.Equal(t, 1, mid.Exports)
	require.True(t, base.Image.Linked(), "%v %v", base.Image.Unresolved, base.Image.Errors)
	require.True(t, mid.Image.Linked(), "%v %v", mid.Image.Unresolved, mid.Image.Errors)
	require.True(t, img.Linked(), "%v %v", img.Unresolved, img.Errors)

	// Placement: from the module area's start, each past the one before
	// and a guard page. Neither dependency has init: each core is its
	// sections' three pages and a page of the symbols kallsyms keeps.
	assert.Equal(t, uint64(0xffffffffc0000000), base.Image.Sections[0].Addr)
	assert.Equal(t, uint64(0x4000), base.Image.CoreSize)
	assert.Equal(t, uint64(0xffffffffc0005000), mid.Image.Sections[0].Addr)
	assert.Equal(t, uint64(0x4000), mid.Image.CoreSize)
	assert.Equal(t, uint64(0xffffffffc000a000), img.Sections[0].Addr)

	// klpdep_mid's call to klpdep_base_add, and klpdep_top's calls to both.
	v, sec := symbolIn(t, depsFile("klpdep-base.ko"), "klpdep_base_add")
	baseAdd := base.Image.Section(sec).Addr + v
	v, sec = symbolIn(t, depsFile("klpdep-base.ko"), "klpdep_base_secret")
	secret := base.Image.Section(sec).Addr + v
	v, sec = symbolIn(t, depsFile("klpdep-mid.ko"), "klpdep_mid_twice")
	twice := mid.Image.Section(sec).Addr + v
	// readelf -r: klpdep_mid's .text+0x7 calls klpdep_base_add (after its
	// __fentry__ call at +0x1); klpdep_top's .init.text+0x6 calls
	// klpdep_base_secret and +0xd klpdep_mid_twice.
	pc32At(t, mid.Image, ".text", relocAt(t, depsFile("klpdep-mid.ko"), ".rela.text", "klpdep_base_add"), baseAdd)
	pc32At(t, img, ".init.text", 0x6, secret)
	pc32At(t, img, ".init.text", 0xd, twice)

	// An explicit base is the caller's: the dependencies still go from the
	// area's start.
	img, deps, err = Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{Base: 0xffffffffd0000000}, mf)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffd0000000), img.Sections[0].Addr)
	assert.Equal(t, uint64(0xffffffffc0000000), deps[0].Image.Sections[0].Addr)
	assert.True(t, img.Linked())
}

// relocAt is the offset of the first relocation in section rela of the
// ELF file at path against symbol name (debug/elf's reading).
func relocAt(t *testing.T, path, rela, name string) uint64 {
	t.Helper()
	f, syms := openELF(t, path)
	data, err := f.Section(rela).Data()
	require.NoError(t, err)
	for i := 0; i+24 <= len(data); i += 24 {
		info := binary.LittleEndian.Uint64(data[i+8:])
		if si := int(info >> 32); si > 0 && syms[si-1].Name == name {
			return binary.LittleEndian.Uint64(data[i:])
		}
	}
	t.Fatalf("%s: no relocation against %s in %s", path, name, rela)
	return 0
}

// TestLinkDependenciesGPL: a copy of klpdep_top under a license that is
// not GPL-compatible gets klpdep_mid_twice (EXPORT_SYMBOL) and not
// klpdep_base_secret (EXPORT_SYMBOL_GPL), as find_symbol() gives them.
func TestLinkDependenciesGPL(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	mf, err := FindModules(t.Context(), []string{depsFile("klpdep-base.ko"), depsFile("klpdep-mid.ko")})
	require.NoError(t, err)
	data, err := os.ReadFile(depsFile("klpdep-top.ko"))
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(data, []byte("license=GPL\x00")))
	bsd := filepath.Join(t.TempDir(), "klpdep-top.ko")
	require.NoError(t, os.WriteFile(bsd, bytes.Replace(data, []byte("license=GPL\x00"), []byte("license=BSD\x00"), 1), 0o644))
	m, err := klp.Open(bsd)
	require.NoError(t, err)
	img, deps, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, mf)
	require.NoError(t, err)
	require.Len(t, deps, 2)
	assert.Equal(t, []string{"klpdep_base_secret"}, img.Unresolved)
}

// TestLinkDependenciesPartial: a dependency without a file leaves what it
// exports unresolved (and the one that needs it does not link); one the
// kernel's symbols list as loaded is not laid out again, and its address
// there is used.
func TestLinkDependenciesPartial(t *testing.T) {
	smap, err := os.ReadFile(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"))
	require.NoError(t, err)
	ix, err := kallsyms.ParseBytes("System.map", smap, kallsyms.Options{})
	require.NoError(t, err)
	mf, err := FindModules(t.Context(), []string{depsFile("klpdep-mid.ko"), depsFile("klpdep-top.ko")})
	require.NoError(t, err)
	m, err := klp.Open(depsFile("klpdep-top.ko"))
	require.NoError(t, err)
	img, deps, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, mf)
	require.NoError(t, err)
	require.Len(t, deps, 2)
	assert.Equal(t, "klpdep_base", deps[0].Name)
	assert.Nil(t, deps[0].Image)
	assert.Empty(t, deps[0].Path)
	assert.Equal(t, []string{"klpdep_base_add"}, deps[1].Image.Unresolved)
	assert.False(t, deps[1].Image.Linked())
	assert.Equal(t, []string{"klpdep_base_secret"}, img.Unresolved)

	// klpdep_base loaded: a kallsyms with its lines (a module's symbols
	// follow vmlinux's).
	var b strings.Builder
	b.Write(smap)
	b.WriteString("ffffffffc1000000 T klpdep_base_add\t[klpdep_base]\nffffffffc1000010 T klpdep_base_secret\t[klpdep_base]\n")
	ix, err = kallsyms.ParseBytes("kallsyms", []byte(b.String()), kallsyms.Options{})
	require.NoError(t, err)
	img, deps, err = Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, mf)
	require.NoError(t, err)
	require.Len(t, deps, 1)
	assert.Equal(t, "klpdep_mid", deps[0].Name)
	require.True(t, deps[0].Image.Linked())
	require.True(t, img.Linked(), "%v", img.Unresolved)
	pc32At(t, deps[0].Image, ".text", relocAt(t, depsFile("klpdep-mid.ko"), ".rela.text", "klpdep_base_add"), 0xffffffffc1000000)
	pc32At(t, img, ".init.text", 0x6, 0xffffffffc1000010)
}

// TestRunDependencies: without a link, the ordinary symbols the loader
// would not find (Report.LoaderMissing) leave out what the dependencies
// modprobe loads first export, when Options.Modules has their files; a
// dependency without a file still explains the rest, and a GPL-only
// export is not one for a module under another license.
func TestRunDependencies(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := klp.Open(depsFile("klpdep-top.ko"))
	require.NoError(t, err)

	rep, err := Run(m, ix, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"klpdep_base_secret", "klpdep_mid_twice"}, rep.LoaderMissing)
	assert.Equal(t, []string{"klpdep_base", "klpdep_mid"}, rep.UnloadedDepends)
	assert.Empty(t, rep.Dependencies)

	all, err := FindModules(t.Context(), []string{repoFile("kbuild", "deps")})
	require.NoError(t, err)
	rep, err = Run(m, ix, Options{Modules: all})
	require.NoError(t, err)
	assert.Empty(t, rep.LoaderMissing)
	assert.Empty(t, rep.UnloadedDepends)
	require.Len(t, rep.Dependencies, 2)
	assert.Equal(t, "klpdep_base", rep.Dependencies[0].Name)
	assert.Equal(t, uint64(0xffffffffc0000000), rep.Dependencies[0].Base())
	assert.Equal(t, 2, rep.Dependencies[0].Exports)
	assert.Equal(t, "klpdep_mid", rep.Dependencies[1].Name)
	assert.True(t, rep.Dependencies[1].Image.Linked())
	assert.Nil(t, rep.Image, "not linked")

	mid, err := FindModules(t.Context(), []string{depsFile("klpdep-mid.ko")})
	require.NoError(t, err)
	rep, err = Run(m, ix, Options{Modules: mid})
	require.NoError(t, err)
	assert.Equal(t, []string{"klpdep_base_secret"}, rep.LoaderMissing)
	assert.Equal(t, []string{"klpdep_base"}, rep.UnloadedDepends, "not laid out: no file")

	data, err := os.ReadFile(depsFile("klpdep-top.ko"))
	require.NoError(t, err)
	bsd := filepath.Join(t.TempDir(), "klpdep-top.ko")
	require.NoError(t, os.WriteFile(bsd, bytes.Replace(data, []byte("license=GPL\x00"), []byte("license=BSD\x00"), 1), 0o644))
	mb, err := klp.Open(bsd)
	require.NoError(t, err)
	rep, err = Run(mb, ix, Options{Modules: all})
	require.NoError(t, err)
	assert.Equal(t, []string{"klpdep_base_secret"}, rep.LoaderMissing)
}

// TestRunDependenciesOtherArch: a module for an architecture modplt does
// not lay out (riscv64 here: klpdep_top's machine field rewritten) still
// runs without a link, its note what the kernel's symbols lack, as it
// did before dependencies were laid out; with a link it is refused.
func TestRunDependenciesOtherArch(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	data, err := os.ReadFile(depsFile("klpdep-top.ko"))
	require.NoError(t, err)
	binary.LittleEndian.PutUint16(data[18:], uint16(elf.EM_RISCV))
	m, err := klp.Parse("riscv64.ko", data)
	require.NoError(t, err)
	all, err := FindModules(t.Context(), []string{repoFile("kbuild", "deps")})
	require.NoError(t, err)

	rep, err := Run(m, ix, Options{Modules: all})
	require.NoError(t, err)
	assert.Empty(t, rep.Dependencies)
	assert.Contains(t, rep.LoaderMissing, "klpdep_mid_twice")
	assert.Equal(t, []string{"klpdep_base", "klpdep_mid"}, rep.UnloadedDepends)

	_, err = Run(m, ix, Options{Modules: all, Link: true})
	assert.ErrorIs(t, err, modplt.ErrUnsupportedArch)
}

// TestDepends: depends= as the kernel names the modules, in order, each
// once: modpost's dashed file names become KBUILD_MODNAME's underscores.
func TestDepends(t *testing.T) {
	assert.Equal(t, []string{"i2c_algo_bit", "drm", "drm_kms_helper"}, dependsNames(" i2c-algo-bit,drm,,drm_kms_helper,i2c_algo_bit, drm "))
	assert.Empty(t, dependsNames(""))
	m, err := klp.Open(depsFile("klpdep-top.ko"))
	require.NoError(t, err)
	assert.Equal(t, []string{"klpdep_base", "klpdep_mid"}, Depends(m))
	m, err = klp.Open(depsFile("klpdep-base.ko"))
	require.NoError(t, err)
	assert.Empty(t, Depends(m))
}
