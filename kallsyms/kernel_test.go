// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// vmlinuxLines are the names of the vmlinux lines of a kallsyms file,
// sorted.
func vmlinuxLines(t *testing.T, path string) []string {
	var out []string
	for _, l := range testutil.ReadSymbolLines(t, path) {
		if l.Object == Vmlinux {
			out = append(out, l.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestKernelKallsymsCorpus: from a System.map alone, what the kernel's own
// kallsyms holds is the corpus's kallsyms of the same build (derived with
// the kernel's rules: everything on amd64, code only on arm64, whose
// Debian config has no CONFIG_KALLSYMS_ALL), name for name (the kallsyms
// build also sorts symbols of one address its own way, and gives x86_64's
// per-cpu symbols type A), and its size is the one the map's
// kallsyms_offsets gives.
func TestKernelKallsymsCorpus(t *testing.T) {
	for _, c := range []struct {
		arch, mapFile, kallsyms string
		all                     bool
		symbols                 int
	}{
		{"amd64", "amd64/System.map-6.1.0-57-amd64", "amd64/kallsyms-6.1.0-57-amd64.txt", true, 94266},
		{"arm64", "arm64/System.map-6.1.0-57-arm64", "arm64/kallsyms-6.1.0-57-arm64.txt", false, 50336},
	} {
		t.Run(c.arch, func(t *testing.T) {
			ix, err := Open(testutil.Corpus(t, c.mapFile), Options{})
			require.NoError(t, err)
			k := ix.KernelKallsyms()
			require.True(t, k.FromMap)
			require.Equal(t, c.all, k.All)
			require.Equal(t, c.symbols, k.Symbols)
			var listed []string
			ix.Symbols(Vmlinux, func(s Symbol) bool {
				if k.Lists(s) {
					listed = append(listed, s.Name)
				}
				return true
			})
			slices.Sort(listed)
			want := vmlinuxLines(t, testutil.Corpus(t, c.kallsyms))
			require.Len(t, want, c.symbols)
			if !slices.Equal(want, listed) {
				t.Fatalf("%d names listed, %d in the kallsyms; first differences: %v", len(listed), len(want), firstDiffs(want, listed, 5))
			}

			// The kallsyms itself is the table.
			kx, err := Open(testutil.Corpus(t, c.kallsyms), Options{})
			require.NoError(t, err)
			kk := kx.KernelKallsyms()
			require.False(t, kk.FromMap)
			require.Equal(t, c.all, kk.All)
			require.Zero(t, kk.Symbols)
			require.True(t, kk.Lists(Symbol{Name: "kallsyms_offsets", Type: 'D'}))
		})
	}
	ix, err := Open(testutil.Corpus(t, "armhf/System.map-6.1.0-50-armmp"), Options{})
	require.NoError(t, err)
	// Debian's armmp kernel keeps code only too: its table's size is what
	// the code ranges of the map hold.
	k := ix.KernelKallsyms()
	require.True(t, k.FromMap)
	require.False(t, k.All, "%d symbols of %d", k.Symbols, ix.Len())
	listed := 0
	ix.Symbols(Vmlinux, func(s Symbol) bool {
		if k.Lists(s) {
			listed++
		}
		return true
	})
	require.Equal(t, k.Symbols, listed)
}

// firstDiffs are up to n names in one sorted list and not the other.
func firstDiffs(a, b []string, n int) []string {
	var out []string
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && len(out) < n {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, "-"+a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, "+"+b[j])
			j++
		default:
			i++
			j++
		}
	}
	return out
}

// TestLookupListed: on the System.map of a kernel whose kallsyms holds
// code only (Debian's arm64), data is not found, as livepatch would not
// find it there, and a name whose occurrences are partly data is counted
// without them; the kallsyms of the same build answers alike with Lookup.
func TestLookupListed(t *testing.T) {
	sm, err := Open(testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64"), Options{})
	require.NoError(t, err)
	ks, err := Open(testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt"), Options{})
	require.NoError(t, err)

	s, err := sm.Lookup(Vmlinux, "jiffies", 0)
	require.NoError(t, err, "the map lists jiffies")
	require.Equal(t, byte('D'), s.Type)
	_, err = sm.LookupListed(Vmlinux, "jiffies", 0)
	require.ErrorIs(t, err, ErrNotFound)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "symbol 'jiffies' not found in symbol table", le.KernelMessage())
	require.Contains(t, le.Help(), "the System.map's jiffies at 0x")
	require.Contains(t, le.Help(), "without CONFIG_KALLSYMS_ALL (its kallsyms table holds 50336 symbols)")
	_, err = ks.Lookup(Vmlinux, "jiffies", 0)
	require.ErrorIs(t, err, ErrNotFound)

	// Code answers as in the kallsyms.
	a, err := sm.LookupListed(Vmlinux, "vfs_read", 0)
	require.NoError(t, err)
	b, err := ks.Lookup(Vmlinux, "vfs_read", 0)
	require.NoError(t, err)
	require.Equal(t, b.Address, a.Address)

	// Every name of the map with code and data occurrences: counts and
	// positions as the kallsyms has them.
	mixed := 0
	seen := map[string]bool{}
	k := sm.KernelKallsyms()
	sm.Symbols(Vmlinux, func(s Symbol) bool {
		if seen[s.Name] || k.Lists(s) {
			return true
		}
		seen[s.Name] = true
		c := sm.Candidates(Vmlinux, s.Name)
		if len(c) < 2 || !slices.ContainsFunc(c, k.Lists) {
			return true
		}
		mixed++
		want := ks.Candidates(Vmlinux, s.Name)
		for pos := range uint64(len(c)) + 1 {
			got, gerr := sm.LookupListed(Vmlinux, s.Name, pos)
			exp, eerr := ks.Lookup(Vmlinux, s.Name, pos)
			require.Equal(t, eerr == nil, gerr == nil, "%s,%d: %v / %v", s.Name, pos, gerr, eerr)
			if eerr == nil {
				require.Equal(t, exp.Address, got.Address, "%s,%d", s.Name, pos)
				require.Equal(t, exp.Pos, got.Pos)
			} else {
				require.Equal(t, errors.Unwrap(eerr), errors.Unwrap(gerr), "%s,%d", s.Name, pos)
			}
		}
		require.NotEmpty(t, want)
		return true
	})
	require.Positive(t, mixed, "names with code and data occurrences in Debian's arm64 map (6)")

	// A kallsyms input: LookupListed is Lookup.
	_, err = ks.LookupListed(Vmlinux, "jiffies", 0)
	require.ErrorIs(t, err, ErrNotFound)
	require.NotContains(t, err.Error(), "CONFIG_KALLSYMS_ALL")
}

// TestLookupListedRules: scripts/kallsyms.c's rules on a made-up map of a
// kernel without CONFIG_KALLSYMS_ALL (its kallsyms_offsets table holds 4
// symbols of the 10 it lists).
func TestLookupListedRules(t *testing.T) {
	ix, err := ParseBytes("System.map", []byte(`ffffffff81000000 T _stext
ffffffff81000000 T start_kernel
ffffffff81000100 t foo
ffffffff81000200 T vfs_read
ffffffff81001000 T _etext
ffffffff81001000 t at_etext
ffffffff82000000 D kallsyms_offsets
ffffffff82000010 D kallsyms_relative_base
ffffffff82000100 d foo
ffffffff82000200 D jiffies
`), Options{})
	require.NoError(t, err)
	k := ix.KernelKallsyms()
	require.Equal(t, KernelKallsyms{All: false, Symbols: 4, FromMap: true,
		text: [2]uint64{0xffffffff81000000, 0xffffffff81001000}}, k)

	_, err = ix.Lookup(Vmlinux, "foo", 0)
	require.ErrorIs(t, err, ErrAmbiguous, "the map lists two")
	s, err := ix.LookupListed(Vmlinux, "foo", 0)
	require.NoError(t, err, "the kernel holds one")
	require.Equal(t, Symbol{Name: "foo", Object: Vmlinux, Address: 0xffffffff81000100, Type: 't', Pos: 1}, s)
	_, err = ix.LookupListed(Vmlinux, "foo", 2)
	require.ErrorIs(t, err, ErrNoSuchPosition)
	require.Equal(t, []Symbol{s}, ix.CandidatesListed(Vmlinux, "foo"))
	require.Len(t, ix.Candidates(Vmlinux, "foo"), 2)

	for name, note := range map[string]string{
		"jiffies":          "the System.map's jiffies at 0xffffffff82000200 (type D): outside the kernel's code, and this kernel was built without CONFIG_KALLSYMS_ALL (its kallsyms table holds 4 symbols)",
		"at_etext":         "the System.map's at_etext at 0xffffffff81001000 (type t): outside the kernel's code",
		"kallsyms_offsets": "the System.map's kallsyms_offsets at 0xffffffff82000000 (type D): no kernel's kallsyms holds it (scripts/kallsyms.c ignores it)",
	} {
		_, err = ix.LookupListed(Vmlinux, name, 0)
		require.ErrorIs(t, err, ErrNotFound, name)
		require.ErrorContains(t, err, note)
	}
	for name, addr := range map[string]uint64{"_etext": 0xffffffff81001000, "vfs_read": 0xffffffff81000200, "start_kernel": 0xffffffff81000000} {
		s, err := ix.LookupListed(Vmlinux, name, 0)
		require.NoError(t, err, name)
		require.Equal(t, addr, s.Address, name)
	}
}

// A /proc/kallsyms of a kernel with CONFIG_KALLSYMS_ALL names the
// kernel's own tables, as a System.map does; its modules tell it from
// one. Its absolute per-cpu symbols (x86_64 before 6.15) are the kernel's
// table's, so livepatch finds them: a booted 6.12 resolved last_ino so.
func TestKallsymsWithTablesAndModules(t *testing.T) {
	text := "0000000000000000 A __per_cpu_start\n0000000000025ee8 A last_ino\n" +
		"ffffffff81000000 T _stext\nffffffff81200000 T vfs_read\nffffffff81400000 T _etext\n" +
		"ffffffff81600000 D kallsyms_offsets\nffffffff81700000 D kallsyms_relative_base\n" +
		"ffffffffa0000000 t ext4_statfs\t[ext4]\n"
	ix := mustParse(t, text, Options{})
	s, err := ix.LookupListed(Vmlinux, "last_ino", 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x25ee8), s.Address)
	assert.False(t, ix.KernelKallsyms().FromMap)
	// The same lines without the module are a System.map's: there the
	// absolute symbol is one scripts/kallsyms.c leaves out.
	ix = mustParse(t, strings.TrimSuffix(text, "ffffffffa0000000 t ext4_statfs\t[ext4]\n"), Options{})
	assert.True(t, ix.KernelKallsyms().FromMap)
}
