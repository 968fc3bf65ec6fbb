// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"cmp"
	"debug/elf"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// klp_demo (testdata/kbuild) is a livepatch module as the kernel's own
// build system makes it: Kbuild and modpost, Debian's headers for the
// corpus's amd64 kernel (struct klp_func is that build's), debug info
// stripped as Debian installs modules; then converted. The expectations
// below are what klp-demo.c and klp-demo.syms declare.
const (
	kbuildModule = "../testdata/kbuild/klp-demo.ko"
	kbuildPlain  = "../testdata/kbuild/klp-demo-kbuild.ko"
)

// kbuildSyms reads klp-demo.syms, the recipe's list of what the patch
// calls that no object exports. Every name there is unique in its object
// or given its position, so a spec without one means 0, as convert made it.
func kbuildSyms(t *testing.T) []ConvertSymbol {
	b, err := os.ReadFile("../testdata/kbuild/klp-demo.syms")
	require.NoError(t, err)
	var out []ConvertSymbol
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp, err := kallsyms.ParseSpec(line)
		require.NoError(t, err, line)
		out = append(out, ConvertSymbol{Object: sp.Object, Name: sp.Name, Pos: sp.Pos})
	}
	require.Len(t, out, 4)
	return out
}

func TestKbuildModule(t *testing.T) {
	m, err := Open(kbuildModule)
	require.NoError(t, err)
	assert.Equal(t, "klp_demo", m.Name)
	assert.True(t, m.Livepatch)
	assert.Equal(t, "x86_64", m.Arch)
	assert.Equal(t, FormatKLP, m.Format)
	assert.Empty(t, m.Warnings)
	assert.Nil(t, m.notMarked)

	// One .klp.rela section per object for the one .text Kbuild makes
	// (no -ffunction-sections), each call an R_X86_64_PLT32 to the symbol
	// klp-demo.syms names.
	got := map[string][]SymbolName{}
	for _, s := range m.Sections {
		require.NoError(t, s.Err)
		assert.Equal(t, ".klp.rela."+s.Object+"..text", s.Name)
		assert.Equal(t, ".text", s.Target)
		for _, r := range s.Relocs {
			require.NoError(t, r.Err)
			assert.Equal(t, "R_X86_64_PLT32", r.TypeName())
			assert.Equal(t, int64(-4), r.Addend)
			got[s.Object] = append(got[s.Object], r.Sym)
		}
	}
	want := map[string][]SymbolName{}
	for _, c := range kbuildSyms(t) {
		want[c.Object] = append(want[c.Object], SymbolName(c))
	}
	byName := func(a, b SymbolName) int { return cmp.Compare(a.Name, b.Name) }
	for _, names := range got { // the order of calls within .text is the compiler's
		slices.SortFunc(names, byName)
	}
	for _, names := range want {
		slices.SortFunc(names, byName)
	}
	assert.Equal(t, want, got)

	// The static klp_patch, read through the real headers' layout.
	assert.Equal(t, FuncsStatic, m.FuncSource)
	assert.Equal(t, []string{"vmlinux", "ext4", "xfs"}, m.Objects)
	var funcs []SymbolName
	for _, f := range m.Funcs {
		require.Nil(t, f.Err)
		assert.Equal(t, ".data", f.Section)
		funcs = append(funcs, SymbolName{f.Object, f.Name, f.Pos})
	}
	assert.Equal(t, []SymbolName{
		{"vmlinux", "cmdline_proc_show", 0},
		{"ext4", "ext4_statfs", 0},
		{"xfs", "xfs_fs_statfs", 1},
	}, funcs)
	// Each is the first entry of its array (klp-demo.c's
	// vmlinux_funcs, ext4_funcs, xfs_funcs), as debug/elf reads them.
	f, err := elf.Open(kbuildModule)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	at := map[string]uint64{}
	for _, s := range syms {
		at[s.Name] = s.Value
	}
	for i, array := range []string{"vmlinux_funcs", "ext4_funcs", "xfs_funcs"} {
		v, ok := at[array]
		require.True(t, ok, array)
		assert.Equal(t, v, m.Funcs[i].Offset, array)
	}
}

// The committed livepatch module is what Convert makes of the committed
// Kbuild output and klp-demo.syms: the recipe still holds.
func TestKbuildModuleConverts(t *testing.T) {
	plain, err := os.ReadFile(kbuildPlain)
	require.NoError(t, err)
	out, err := Convert("klp-demo.ko", plain, kbuildSyms(t))
	require.NoError(t, err)
	want, err := os.ReadFile(kbuildModule)
	require.NoError(t, err)
	require.Equal(t, want, out)

	// Kbuild's module, before: ordinary undefined symbols modpost warned
	// about, no livepatch section.
	f, err := elf.NewFile(bytes.NewReader(plain))
	require.NoError(t, err)
	syms, err := f.Symbols()
	require.NoError(t, err)
	undef := map[string]bool{}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" {
			undef[s.Name] = true
		}
	}
	for _, c := range kbuildSyms(t) {
		assert.True(t, undef[c.Name], c.Name)
	}
	m, err := NewFile(kbuildPlain, bytes.NewReader(plain), int64(len(plain)))
	require.NoError(t, err)
	assert.Equal(t, FormatNone, m.Format)
	assert.Len(t, m.Funcs, 3)
}

// Against the corpus's kernel (the build the headers are of): every
// livepatch relocation and patched function resolves to the address the
// kallsyms file lists for it, as the tests' own reading of that file
// finds it; xfs, not loaded there, is deferred, and checked against its
// real .ko.
func TestKbuildModuleResolves(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	xfsPath := testutil.Corpus(t, "amd64/modules/xfs.ko")
	// addr: the address of the pos-th (1-based) line of name in object.
	lines := testutil.ReadSymbolLines(t, path)
	addr := func(object, name string, pos int) uint64 {
		t.Helper()
		a, ok := testutil.Nth(lines, object, name, pos)
		require.True(t, ok, "%s:%s,%d not in %s", object, name, pos, path)
		return a
	}
	ix, err := kallsyms.Open(path, kallsyms.Options{})
	require.NoError(t, err)
	m, err := Open(kbuildModule)
	require.NoError(t, err)

	res := m.Resolve(ix, ResolveOptions{})
	require.Nil(t, res.LoadErr)
	want := map[string]uint64{
		"kallsyms_lookup_name":   addr("vmlinux", "kallsyms_lookup_name", 1),
		"type_show":              addr("vmlinux", "type_show", 2),
		"ext4_has_free_clusters": addr("ext4", "ext4_has_free_clusters", 1),
	}
	require.NotEqual(t, addr("vmlinux", "type_show", 1), want["type_show"])
	for _, r := range res.Results {
		if r.Object == "xfs" {
			assert.Equal(t, Deferred, r.Status, r.Name)
			continue
		}
		require.Equal(t, Resolved, r.Status, "%s: %v", r.Name, r.Err)
		assert.Equal(t, want[r.Name], r.Address, r.Name)
	}
	assert.Equal(t, []int{3, 1, 0}, []int{res.Resolved, res.Deferred, res.Errors})
	assert.Equal(t, []string{"xfs"}, res.DeferredObjects)

	require.Len(t, res.Funcs, 3)
	assert.Equal(t, Resolved, res.Funcs[0].Status)
	assert.Equal(t, addr("vmlinux", "cmdline_proc_show", 1), res.Funcs[0].Address)
	assert.Equal(t, Resolved, res.Funcs[1].Status)
	assert.Equal(t, addr("ext4", "ext4_statfs", 1), res.Funcs[1].Address)
	assert.Equal(t, Deferred, res.Funcs[2].Status)
	assert.True(t, res.OK(false))
	assert.False(t, res.OK(true), "strict: xfs is deferred")

	// xfs checked against its file: its relocation and its function.
	xm, err := Open(xfsPath)
	require.NoError(t, err)
	tg, err := NewTarget(xm, ix.ListsData())
	require.NoError(t, err)
	require.Equal(t, "xfs", tg.Name)
	res = m.Resolve(ix, ResolveOptions{Targets: map[string]*Target{"xfs": tg}})
	require.Len(t, res.Checked, 1)
	assert.Equal(t, CheckedObject{Object: "xfs", Path: xfsPath, OK: 2}, res.Checked[0])
	assert.Equal(t, 0, res.Errors)
}
