// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"debug/elf"
	"encoding/binary"
	"io/fs"
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

// TestRunPPC64 links testdata/klp/ppc64le-fix.ko, a livepatch module
// built as Kbuild builds ppc64le ones, against its kernel's symbols: the
// kernel's TOC and ftrace entry points come from them (Kernel), the
// stubs in the kernel's order: the module's own relocations' (_mcount),
// then module_finalize()'s ftrace_caller and ftrace_regs_caller, then
// livepatch's (vfs_read, ext4's helper), each call's nop restoring r2.
func TestRunPPC64(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("klp", "ppc64le-kallsyms.txt"), kallsyms.Options{})
	require.NoError(t, err)
	arch, _ := ix.Arch()
	assert.Equal(t, "ppc64", arch)
	m, err := klp.Open(repoFile("klp", "ppc64le-fix.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true})
	require.NoError(t, err)
	img := rep.Image
	for _, e := range img.Errors {
		t.Errorf("%v", e)
	}
	require.True(t, img.Linked(), "%v", img.Unresolved)
	assert.Equal(t, uint64(64<<10), img.PageSize)
	assert.Equal(t, 5, img.PLTCoreUsed)
	assert.Equal(t, 6, img.PLTCoreMax, "_mcount, vfs_read, ext4_bitmap_helper; the terminator and two ftrace stubs")
	stubs := img.Section(".stubs")
	require.NotNil(t, stubs)
	le := binary.LittleEndian
	var funcdata []uint64
	for off := uint64(0); off+40 <= uint64(len(stubs.Data)); off += 40 {
		funcdata = append(funcdata, le.Uint64(stubs.Data[off+32:]))
	}
	assert.Equal(t, []uint64{0xc000000000071234, 0xc000000000071300, 0xc000000000071400, 0xc000000000500000, 0xc008000000100000, 0}, funcdata,
		"_mcount, ftrace_caller, ftrace_regs_caller, vfs_read, ext4_bitmap_helper; the last one zero")
	// The _mcount stub: ld r12,16(r13) (the kernel's TOC), then
	// addis/addi of _mcount's offset from .TOC. (0xc000000001f0a100).
	hi, lo := le.Uint32(stubs.Data[4:]), le.Uint32(stubs.Data[8:])
	assert.Equal(t, uint32(0xe98d0010), le.Uint32(stubs.Data))
	assert.Equal(t, uint64(0xc000000000071234), 0xc000000001f0a100+uint64(int64(int16(hi))<<16+int64(int16(lo))))

	// Each livepatch call reaches its stub, and the nop after it is
	// ld r2,24(r1).
	f := objectOf(t, m)
	text := img.Section(".text.livepatch_vfs_read")
	require.NotNil(t, text)
	for obj, stub := range map[string]uint64{"vmlinux": 3, "ext4": 4} {
		s := f.SectionByName(".klp.rela." + obj + "..text.livepatch_vfs_read")
		require.NotNil(t, s, obj)
		rt, err := f.RelocTable(s)
		require.NoError(t, err)
		require.Equal(t, 1, rt.Len())
		r, err := rt.Reloc(0)
		require.NoError(t, err)
		require.Equal(t, elf.R_PPC64_REL24, elf.R_PPC64(r.Type))
		insn := le.Uint32(text.Data[r.Offset:])
		assert.Equal(t, uint32(0x48000001), insn&0xfc000003, "bl")
		assert.Equal(t, stubs.Addr+stub*40, text.Addr+r.Offset+uint64(int64(int32(insn<<6)>>6)&^3), obj)
		assert.Equal(t, uint32(0xe8410018), le.Uint32(text.Data[r.Offset+4:]), "%s: ld r2,24(r1)", obj)
	}
}

// TestDebianPPC64ELModules links the modules of Debian's ppc64el 6.1
// kernel (testutil.PPC64EL: its package installed under a root, with a
// System.map made from its vmlinux) against that kernel, as installed
// (its configuration: 64 KiB pages; its modules folder for the modules
// each depends on): every one links, every relocation of its loaded
// sections applied, and never more stubs than the kernel counted. For
// xfs the stubs used are counted here independently: one per distinct
// address an external REL24 reaches, and the two ftrace stubs.
func TestDebianPPC64ELModules(t *testing.T) {
	root := testutil.PPC64EL(t)
	k, err := KernelUnder(t.Context(), root, testutil.PPC64ELRelease)
	require.NoError(t, err)
	require.NotEmpty(t, k.Config)
	c, err := OpenConfig(k.Config)
	require.NoError(t, err)
	lo := c.LinkOptions(modplt.LinkOptions{})
	assert.Equal(t, uint64(64<<10), lo.PageSize, "CONFIG_PPC_64K_PAGES")
	ix, err := kallsyms.Open(k.Symbols, kallsyms.Options{})
	require.NoError(t, err)
	mf, err := FindModules(t.Context(), k.Modules)
	require.NoError(t, err)
	var paths []string
	require.NoError(t, filepath.WalkDir(k.Modules[0], func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".ko") {
			paths = append(paths, p)
		}
		return err
	}))
	require.Greater(t, len(paths), 3000)
	xfs := filepath.Join(k.Modules[0], "kernel", "fs", "xfs", "xfs.ko")
	step := 1
	if testutil.Sampled() {
		step = 25 // (the race detector, or -short: a sample, xfs among them)
	}
	linked, relocs := 0, 0
	for i, p := range paths {
		if i%step != 0 && p != xfs {
			continue
		}
		m, err := klp.Open(p)
		require.NoError(t, err, p)
		img, _, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, lo, mf)
		require.NoError(t, err, p)
		require.Empty(t, img.Errors, p)
		require.Empty(t, img.Unresolved, p)
		require.Less(t, img.PLTCoreUsed, img.PLTCoreMax, p)
		want := 0
		f := objectOf(t, m)
		for si := range f.Sections {
			s := &f.Sections[si]
			if s.Type == elf.SHT_RELA && f.Sections[s.Info].Flags&elf.SHF_ALLOC != 0 && f.Sections[s.Info].Name != ".modinfo" && f.Sections[s.Info].Name != "__versions" {
				want += int(s.Size / 24)
			}
		}
		require.Equal(t, want, img.Relocs, p)
		linked++
		relocs += img.Relocs
		if p == xfs {
			checkXFSStubs(t, m, img, ix)
		}
	}
	t.Logf("%d modules linked, %d relocations", linked, relocs)
}

// checkXFSStubs: the stubs xfs uses are one per distinct address its
// external REL24s reach (its symbols resolved from the kernel's map or
// the modules xfs depends on, at their laid-out addresses) plus
// ftrace_caller's and ftrace_regs_caller's.
func checkXFSStubs(t *testing.T, m *klp.Module, img *modplt.Image, ix *kallsyms.Index) {
	f := objectOf(t, m)
	targets := map[uint64]bool{}
	for si := range f.Sections {
		s := &f.Sections[si]
		if s.Type != elf.SHT_RELA || f.Sections[s.Info].Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		rt, err := f.RelocTable(s)
		require.NoError(t, err)
		for j := range rt.Len() {
			r, err := rt.Reloc(j)
			require.NoError(t, err)
			if elf.R_PPC64(r.Type) != elf.R_PPC64_REL24 || f.Symbols[r.Sym].Shndx != uint16(elf.SHN_UNDEF) {
				continue
			}
			v, ok := img.SymbolAddr(r.Sym)
			require.True(t, ok, f.Symbols[r.Sym].Name)
			targets[v+uint64(r.Addend)] = true
		}
	}
	for _, name := range []string{"ftrace_caller", "ftrace_regs_caller"} {
		s, ok := ix.Find(kallsyms.Vmlinux, name, 0)
		require.True(t, ok)
		targets[s.Address] = true
	}
	assert.Equal(t, len(targets), img.PLTCoreUsed, "xfs's stubs")
	assert.Greater(t, img.PLTCoreUsed, 300)
}

// objectOf is m's ELF view, read again from its file (klp.Module keeps
// its own to itself).
func objectOf(t testing.TB, m *klp.Module) *elfobj.File {
	t.Helper()
	f, err := elfobj.Open(m.Path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
