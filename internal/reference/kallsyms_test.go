// SPDX-License-Identifier: GPL-2.0-only

package reference_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// The references the benchmarks time klpresolve against must give the
// kernel's answers, or the ratios mean nothing.
const sample = `ffffffff81000000 T _stext
ffffffff81000100 t __func__.0
ffffffff81000200 T vfs_read
ffffffff81000300 t __func__.0
ffffffff81000400 t __func__.0
0000000000000000 A zero_sym
ffffffffc0001000 t helper	[ext4]
ffffffffc0001100 t __func__.0	[ext4]
ffffffffc0001200 t helper	[ext4]
ffffffffc0002000 t helper	[xfs]
`

// Each case is klp_find_object_symbol()'s answer: the address, or 0 for
// an error (not found, ambiguous, or no such position).
func TestKernelLookups(t *testing.T) {
	k := reference.NewKernel([]byte(sample))
	require.Len(t, k.Vmlinux, 6)
	require.Len(t, k.Modules, 2)
	require.Equal(t, "ext4", k.Modules[0].Name)
	require.Len(t, k.Modules[0].Syms, 3)
	cases := []struct {
		obj, name string
		pos       uint64
		want      uint64
	}{
		{"", "vfs_read", 0, 0xffffffff81000200},
		{"", "vfs_read", 1, 0xffffffff81000200},
		{"", "vfs_read", 2, 0},
		{"", "__func__.0", 0, 0}, // unresolvable ambiguity
		{"", "__func__.0", 1, 0xffffffff81000100},
		{"", "__func__.0", 2, 0xffffffff81000300},
		{"", "__func__.0", 3, 0xffffffff81000400},
		{"", "__func__.0", 4, 0},
		{"", "helper", 0, 0}, // a module's, not vmlinux's
		{"", "zero_sym", 0, 0},
		{"", "missing", 0, 0},
		{"ext4", "helper", 0, 0},
		{"ext4", "helper", 1, 0xffffffffc0001000},
		{"ext4", "helper", 2, 0xffffffffc0001200},
		{"ext4", "__func__.0", 0, 0xffffffffc0001100}, // unique in ext4
		{"xfs", "helper", 0, 0xffffffffc0002000},
		{"xfs", "vfs_read", 0, 0},
		{"btrfs", "helper", 0, 0},
	}
	for _, c := range cases {
		for name, lookup := range map[string]func(string, string, uint64) (uint64, bool){
			"old": k.OldLookup, "current": k.CurrentLookup,
		} {
			got, ok := lookup(c.obj, c.name, c.pos)
			require.Equal(t, c.want != 0, ok, "%s %s:%s,%d", name, c.obj, c.name, c.pos)
			require.Equal(t, c.want, got, "%s %s:%s,%d", name, c.obj, c.name, c.pos)
		}
	}
}

func TestNaiveParse(t *testing.T) {
	m := reference.NaiveParse([]byte(sample + "garbage\nzz T bad_address\n"))
	require.Len(t, m, 5) // _stext __func__.0 vfs_read zero_sym helper
	require.Equal(t, []reference.NaiveSym{
		{Addr: 0xffffffffc0001000, Type: "t", Module: "ext4"},
		{Addr: 0xffffffffc0001200, Type: "t", Module: "ext4"},
		{Addr: 0xffffffffc0002000, Type: "t", Module: "xfs"},
	}, m["helper"])
	require.Len(t, m["__func__.0"], 4)
	require.Equal(t, reference.NaiveSym{Addr: 0xffffffff81000200, Type: "T"}, m["vfs_read"][0])
	require.NotContains(t, m, "bad_address")
}

// On a real kernel's symbols, both kernel algorithms agree with the index
// for a sample of every object's names (every __func__.N among them): at
// position 0 (unique or not), at the last position and past it. The old
// walk, 0.3 ms a lookup, is asked one in ten.
func TestKernelLookupsCorpus(t *testing.T) {
	p := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	d, err := os.ReadFile(p)
	require.NoError(t, err)
	ix, err := kallsyms.ParseBytes(p, d, kallsyms.Options{})
	require.NoError(t, err)
	k := reference.NewKernel(d)
	checked := 0
	for _, o := range ix.Objects() {
		if o.Pseudo {
			continue // the kernel's module walk never sees them
		}
		obj := o.Name
		if obj == kallsyms.Vmlinux {
			obj = ""
		}
		last := map[string]int{}
		ix.Symbols(o.Name, func(s kallsyms.Symbol) bool {
			last[s.Name] = max(last[s.Name], s.Pos)
			return true
		})
		names := slices.Sorted(maps.Keys(last)) // the same sample every run
		for n, name := range names {
			count := last[name]
			if n%29 != 0 && !strings.HasPrefix(name, "__func__") {
				continue
			}
			for _, pos := range []uint64{0, uint64(count), uint64(count) + 1} {
				s, err := ix.Lookup(o.Name, name, pos)
				want := s.Address
				if err != nil {
					want = 0
				}
				algs := map[string]func(string, string, uint64) (uint64, bool){"current": k.CurrentLookup}
				if checked%10 == 0 {
					algs["old"] = k.OldLookup
				}
				for alg, lookup := range algs {
					got, ok := lookup(obj, name, pos)
					msg := fmt.Sprintf("%s %s:%s,%d (index: %v)", alg, o.Name, name, pos, err)
					require.Equal(t, want != 0, ok, msg)
					require.Equal(t, want, got, msg)
				}
				checked++
			}
		}
	}
	require.Greater(t, checked, 3000)
}
