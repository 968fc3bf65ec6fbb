package pipeline

import (
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
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
	ix, err := kallsyms.Open(path, nil)
	require.NoError(t, err)
	m, err := klp.Open(ko)
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true})
	require.NoError(t, err)
	img := rep.Image
	require.True(t, img.Linked(), "errors %v, unresolved %v", img.Errors, img.Unresolved)
	assert.True(t, rep.OK(false))
	assert.False(t, rep.OK(true), "strict: xfs is deferred")

	// S: the pos-th line of a name in an object.
	lines := testutil.ReadSymbolLines(t, path)
	symAddr := func(object, name string, pos uint64) uint64 {
		t.Helper()
		n := uint64(0)
		for _, l := range lines {
			if l.Object == object && l.Name == name {
				if n++; n == max(pos, 1) {
					return l.Addr
				}
			}
		}
		t.Fatalf("%s:%s,%d not in %s", object, name, pos, path)
		return 0
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
