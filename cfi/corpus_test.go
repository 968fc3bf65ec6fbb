// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// corpusModules reads a kallsyms-modules.tsv: each module's base and core
// size, in load order.
func corpusModules(t *testing.T, arch string) []Module {
	f, err := os.Open(testutil.Corpus(t, filepath.Join(arch, "kallsyms-modules.tsv")))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	var mods []Module
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		base, err := strconv.ParseUint(c[2], 0, 64)
		require.NoError(t, err)
		size, err := strconv.ParseUint(c[3], 0, 64)
		require.NoError(t, err)
		mods = append(mods, Module{Name: c[1], TextStart: base, TextEnd: base + size, CheckFn: base})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, mods)
	return mods
}

// checkAll looks up each loaded module's first, middle and last byte and
// one byte past the end of the last page, against the authoritative list.
func checkAll(t *testing.T, s *Set, loaded []Module) {
	t.Helper()
	r := s.NewReader()
	defer r.Close()
	for _, m := range loaded {
		for _, addr := range []uint64{m.TextStart, m.TextStart + (m.TextEnd-m.TextStart)/2, m.TextEnd - 1} {
			fn, src := r.Lookup(addr)
			require.Equal(t, InShadow, src, "%s %#x", m.Name, addr)
			require.Equal(t, m.CheckFn, fn, "%s %#x", m.Name, addr)
		}
	}
	// Pages no loaded module owns miss both paths.
	for _, m := range loaded {
		gap := (m.TextEnd + page - 1) &^ (page - 1)
		if slices.ContainsFunc(loaded, func(o Module) bool { return o.TextStart <= gap && gap < o.TextEnd }) {
			continue
		}
		_, src := r.Lookup(gap)
		require.Equal(t, Miss, src, "%#x past %s", gap, m.Name)
	}
}

// TestCorpusLayouts adds, removes and re-adds the corpus's module
// layouts (real module sizes at the corpus's load addresses), in load
// order and in reverse, which moves the base down at every add.
func TestCorpusLayouts(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		mods := corpusModules(t, arch)
		for _, order := range []string{"load", "reverse"} {
			t.Run(arch+"/"+order, func(t *testing.T) {
				s := newSet(t, Options{})
				list := slices.Clone(mods)
				if order == "reverse" {
					slices.Reverse(list)
				}
				for _, m := range list {
					res, err := s.Add(m)
					require.NoError(t, err)
					require.True(t, res.Shadowed, res.Reason)
					require.Equal(t, int((m.TextEnd-m.TextStart+page-1)/page), res.Pages, m.Name)
				}
				assert.Equal(t, mods[0].TextStart/page, s.cur.Load().base)
				checkAll(t, s, mods)

				// Unload every other module, then load them again.
				var kept []Module
				for i, m := range mods {
					if i%2 == 0 {
						require.NoError(t, s.Remove(m.Name))
					} else {
						kept = append(kept, m)
					}
				}
				checkAll(t, s, kept)
				for i, m := range mods {
					if i%2 == 0 {
						_, err := s.Add(m)
						require.NoError(t, err)
					}
				}
				checkAll(t, s, mods)
				s.Barrier()
				st := s.Stats()
				assert.Zero(t, st.PendingBytes)
				assert.LessOrEqual(t, st.MaxPendingBytes, st.PendingLimit)
			})
		}
	}
}
