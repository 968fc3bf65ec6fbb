// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/symvers"
)

// TestKbuildModuleLinks links klp_demo (testdata/kbuild: a livepatch
// module made by the kernel's own build system with Debian's headers for
// the corpus's amd64 kernel) against that kernel, as insmod and livepatch
// would, and checks every relocation of its .text (Kbuild's __fentry__,
// return-thunk and stack-protector calls, its exported calls, and the
// livepatch relocations) with the tests' own arithmetic: the 32-bit field
// at P holds S + A - P, S read from the kallsyms file by the tests' own
// reader. xfs is not loaded there: its section stays unapplied.
func TestKbuildModuleLinks(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	ko := repoFile("kbuild", "klp-demo.ko")
	ix, err := kallsyms.Open(path, kallsyms.Options{})
	require.NoError(t, err)
	m, err := klp.Open(ko)
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true, CFIShadow: true})
	require.NoError(t, err)
	img := rep.Image
	require.True(t, img.Linked(), "errors %v, unresolved %v", img.Errors, img.Unresolved)
	assert.True(t, rep.OK(false))
	assert.False(t, rep.OK(true), "strict: xfs is deferred")

	// S: the pos-th line of a name in an object.
	lines := testutil.ReadSymbolLines(t, path)
	symAddr := func(object, name string, pos uint64) uint64 {
		t.Helper()
		a, ok := testutil.Nth(lines, object, name, int(max(pos, 1)))
		require.True(t, ok, "%s:%s,%d not in %s", object, name, pos, path)
		return a
	}

	f, err := elf.Open(ko)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	text := img.Section(".text")
	require.NotNil(t, text)
	checked, total := map[string]int{}, 0
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || f.Sections[s.Info].Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		data, err := s.Data()
		require.NoError(t, err)
		require.Zero(t, len(data)%24, s.Name)
		if s.Name == ".klp.rela.xfs..text" {
			continue // deferred: applied when xfs loads
		}
		total += len(data) / 24
		if f.Sections[s.Info].Name != ".text" {
			continue
		}
		for r := data; len(r) > 0; r = r[24:] {
			off := binary.LittleEndian.Uint64(r)
			info := binary.LittleEndian.Uint64(r[8:])
			addend := int64(binary.LittleEndian.Uint64(r[16:]))
			typ := elf.R_X86_64(info & 0xffffffff)
			sym := syms[info>>32-1] // debug/elf leaves out symbol 0
			if typ != elf.R_X86_64_PLT32 && typ != elf.R_X86_64_PC32 {
				continue
			}
			var S uint64
			switch {
			case strings.HasPrefix(sym.Name, klp.SymPrefix):
				sn, n := klp.ParseSymbolName(sym.Name)
				require.Equal(t, 3, n, sym.Name)
				S = symAddr(sn.Object, sn.Name, sn.Pos)
			case sym.Section == elf.SHN_UNDEF:
				S = symAddr(kallsyms.Vmlinux, sym.Name, 1)
			default:
				continue
			}
			P := text.Addr + off
			want := int64(S) + addend - int64(P)
			require.Equal(t, want, int64(int32(want)), "%s: out of reach", sym.Name)
			got := int32(binary.LittleEndian.Uint32(text.Data[off:]))
			assert.Equal(t, int32(want), got, "%s at .text+%#x", sym.Name, off)
			checked[sym.Name]++
		}
	}
	assert.Equal(t, total, img.Relocs, "relocations applied: every one of the loaded sections'")
	// Kbuild's calls and the patch's own: all were seen.
	for _, name := range []string{"__fentry__", "__x86_return_thunk", "__stack_chk_fail", "seq_printf", "klp_enable_patch",
		".klp.sym.vmlinux.kallsyms_lookup_name,0", ".klp.sym.vmlinux.type_show,2", ".klp.sym.ext4.ext4_has_free_clusters,0"} {
		assert.NotZero(t, checked[name], name)
	}
	assert.Zero(t, checked[".klp.sym.xfs.xfs_icount_range,0"])

	// Its core text is in the CFI shadow.
	require.NotNil(t, rep.CFI)
	assert.True(t, rep.CFI.Shadowed, rep.CFI.Reason)
	assert.Empty(t, rep.CFI.Unknown)
}

// klp_demo's symbol versions against a Module.symvers: one written here
// from its own __versions (the loader takes it; then one CRC changed: it
// refuses that symbol), and Debian's real ones where installed: the
// headers it was built with agree, another ABI's (6.1.0-47) disagree.
func TestKbuildModuleVersions(t *testing.T) {
	m, err := klp.Open(repoFile("kbuild", "klp-demo.ko"))
	require.NoError(t, err)
	sm, err := m.Versions()
	require.NoError(t, err)
	assert.Equal(t, "klp_demo", sm.Name)
	assert.True(t, sm.HasVersions)
	assert.Empty(t, sm.Imports)
	require.NotEmpty(t, sm.Versions)
	var names []string
	for _, v := range sm.Versions {
		names = append(names, v.Name)
	}
	assert.Contains(t, names, "module_layout") // modpost adds it to every module's
	assert.Contains(t, sm.Undefined, "seq_printf")
	for _, u := range sm.Undefined {
		assert.False(t, strings.HasPrefix(u, klp.SymPrefix), u)
	}

	write := func(change string) *symvers.Table {
		var b strings.Builder
		for _, v := range sm.Versions {
			crc := v.CRC
			if v.Name == change {
				crc ^= 0x10
			}
			fmt.Fprintf(&b, "0x%08x\t%s\tvmlinux\tEXPORT_SYMBOL\t\n", crc, v.Name)
		}
		tb, err := symvers.Parse("Module.symvers", strings.NewReader(b.String()))
		require.NoError(t, err)
		return tb
	}
	ix, err := kallsyms.Open(repoFile("kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Symvers: write("")})
	require.NoError(t, err)
	require.NotNil(t, rep.Versions)
	assert.True(t, rep.Versions.OK(), "%v", rep.Versions.Problems)
	assert.Equal(t, len(sm.Versions), rep.Versions.Checked)
	rep, err = Run(m, ix, Options{Symvers: write("seq_printf")})
	require.NoError(t, err)
	require.Len(t, rep.Versions.Problems, 1)
	p := rep.Versions.Problems[0]
	assert.Equal(t, "klp_demo: disagrees about version of symbol seq_printf", p.Message)
	assert.Equal(t, p.ModuleCRC^0x10, uint64(p.KernelCRC))
	assert.False(t, rep.OK(false), "the loader refuses the module")

	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	ix, err = kallsyms.Open(k, kallsyms.Options{})
	require.NoError(t, err)
	tb, err := symvers.Open(testutil.Headers(t, "6.1.0-57-amd64"))
	require.NoError(t, err)
	rep, err = Run(m, ix, Options{Symvers: tb})
	require.NoError(t, err)
	assert.True(t, rep.Versions.OK(), "%v", rep.Versions.Problems)
	assert.True(t, rep.OK(false))
	old, err := symvers.Open(testutil.Headers(t, "6.1.0-47-amd64"))
	require.NoError(t, err)
	rep, err = Run(m, ix, Options{Symvers: old})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Versions.Problems)
	assert.Equal(t, "module_layout", rep.Versions.Problems[0].Symbol)
	assert.ErrorIs(t, &rep.Versions.Problems[0], symvers.ErrVersionMismatch)
	assert.False(t, rep.OK(false))
}

// TestKbuildModuleVermagic checks klp_demo's vermagic (Kbuild wrote
// Debian's 6.1.0-57 one) as the loader's check_modinfo() would: against
// the corpus's modules of that kernel (ModuleFiles.Vermagic: the first by
// name),
// a --vermagic of another release (taken: the module has __versions),
// of the real-time flavour (refused), and, with __versions hidden from
// the loader (no SHF_ALLOC: find_sec() skips it), another release again
// (refused: compared whole).
func TestKbuildModuleVermagic(t *testing.T) {
	ko := repoFile("kbuild", "klp-demo.ko")
	data, err := os.ReadFile(ko)
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	info, err := f.Section(".modinfo").Data()
	require.NoError(t, err)
	_, after, ok := bytes.Cut(info, []byte("\x00vermagic="))
	require.True(t, ok)
	magic := string(after[:bytes.IndexByte(after, 0)])
	require.True(t, strings.HasPrefix(magic, "6.1.0-57-amd64 "), magic)
	require.True(t, symvers.Modversions(magic))

	m, err := klp.Parse(ko, data)
	require.NoError(t, err)
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)

	dir := testutil.Corpus(t, "amd64/modules")
	kos, err := filepath.Glob(filepath.Join(dir, "*.ko"))
	require.NoError(t, err)
	slices.SortFunc(kos, func(a, b string) int { return strings.Compare(klp.ModuleNameFromFile(a), klp.ModuleNameFromFile(b)) })
	mf, err := FindModules(t.Context(), []string{dir})
	require.NoError(t, err)
	kernel, from, err := mf.Vermagic()
	require.NoError(t, err)
	assert.Equal(t, kos[0], from)
	assert.Equal(t, magic, kernel) // the corpus's modules are that build's
	rep, err := Run(m, ix, Options{Modules: mf})
	require.NoError(t, err)
	assert.Nil(t, rep.Vermagic, "not asked")
	rep, err = Run(m, ix, Options{Modules: mf, Vermagic: kernel})
	require.NoError(t, err)
	require.NotNil(t, rep.Vermagic)
	assert.Equal(t, magic, rep.Vermagic.Module)
	assert.Equal(t, magic, rep.Vermagic.Kernel)
	assert.True(t, rep.Vermagic.OK())
	assert.Nil(t, rep.Versions, "no Module.symvers given")
	assert.True(t, rep.OK(false))

	older := strings.Replace(magic, "-57-", "-47-", 1)
	rt := strings.Replace(strings.Replace(magic, "-amd64", "-rt-amd64", 1), " preempt ", " preempt_rt ", 1)
	require.NotEqual(t, magic, rt)
	rep, err = Run(m, ix, Options{Vermagic: older})
	require.NoError(t, err)
	assert.Equal(t, older, rep.Vermagic.Kernel)
	assert.True(t, rep.Vermagic.OK())
	assert.True(t, rep.Vermagic.ReleaseSkipped)
	assert.True(t, rep.OK(false))

	rep, err = Run(m, ix, Options{Vermagic: rt})
	require.NoError(t, err)
	require.False(t, rep.Vermagic.OK())
	assert.ErrorIs(t, rep.Vermagic.Problem, symvers.ErrVermagic)
	assert.Equal(t, "klp_demo: version magic '"+magic+"' should be '"+rt+"'", rep.Vermagic.Problem.Message)
	assert.False(t, rep.OK(false))

	// __versions without SHF_ALLOC (its flags are the 8 bytes after the
	// section header's name and type).
	vers := f.Section("__versions")
	require.NotNil(t, vers)
	require.NotZero(t, vers.Flags&elf.SHF_ALLOC)
	idx := slices.Index(f.Sections, vers)
	off := binary.LittleEndian.Uint64(data[0x28:]) + uint64(idx)*uint64(binary.LittleEndian.Uint16(data[0x3a:])) + 8
	hidden := slices.Clone(data)
	binary.LittleEndian.PutUint64(hidden[off:], uint64(vers.Flags&^elf.SHF_ALLOC))
	m, err = klp.Parse(ko, hidden)
	require.NoError(t, err)
	sm, err := m.Versions()
	require.NoError(t, err)
	assert.False(t, sm.HasVersions)
	rep, err = Run(m, ix, Options{Vermagic: older})
	require.NoError(t, err)
	assert.False(t, rep.Vermagic.ReleaseSkipped)
	assert.False(t, rep.Vermagic.OK())
}
