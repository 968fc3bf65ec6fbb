// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// writeCompact writes ix's compact snapshot under dir as name.
func writeCompact(t *testing.T, ix *Index, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, ix.WriteSnapshotFile(p))
	return p
}

// sameAnswers checks that ix answers every name of ref's as ref does:
// each object's candidates (which decode their chunks), then every
// symbol (DecodeAll).
func sameAnswers(t *testing.T, ref, ix *Index) {
	t.Helper()
	for _, o := range ref.Objects() {
		seen := map[string]bool{}
		ref.Symbols(o.Name, func(s Symbol) bool {
			if !seen[s.Name] {
				seen[s.Name] = true
				require.Equal(t, ref.Candidates(o.Name, s.Name), ix.Candidates(o.Name, s.Name), "%s:%s", o.Name, s.Name)
			}
			return true
		})
	}
	require.NoError(t, ix.DecodeAll())
	for _, o := range ref.Objects() {
		var want, got []Symbol
		ref.Symbols(o.Name, func(s Symbol) bool { want = append(want, s); return true })
		ix.Symbols(o.Name, func(s Symbol) bool { got = append(got, s); return true })
		require.Equal(t, want, got, o.Name)
	}
}

// TestArena: compact snapshots of different kernels opened one after
// another with one Arena decode into the same memory, and each answers
// as its text does, whatever the one before left there (the memory is
// filled with 0xff between them); the Arena grows for a larger kernel.
func TestArena(t *testing.T) {
	if _, err := mapAnon(1); err != nil {
		t.Skip("no anonymous mappings here")
	}
	dir := t.TempDir()
	other := strings.NewReplacer("fn_", "gn_", "ffffffff81", "ffffffff82", "helper_", "aid_").Replace(chunkyText())
	texts := []string{sample, chunkyText(), sample, other}
	var a Arena
	defer a.Close()
	var first []byte
	var chunks []snapChunk
	var done []atomic.Bool
	for k, text := range texts {
		ref := mustParse(t, text, Options{})
		p := writeCompact(t, ref, dir, "k.snap")
		ix, err := Open(p, Options{Arena: &a})
		require.NoError(t, err)
		require.Same(t, &a, ix.arena, "kernel %d", k)
		require.Nil(t, ix.anon, "kernel %d", k)
		sameAnswers(t, ref, ix)
		require.NoError(t, ix.Close())
		require.False(t, a.busy)
		require.NotNil(t, a.spare, "kernel %d: its bookkeeping given back", k)
		if k == 2 {
			// The small kernel after the large one: the same memory.
			require.Equal(t, unsafe.SliceData(first), unsafe.SliceData(a.mem.b))
			require.Equal(t, unsafe.SliceData(chunks), unsafe.SliceData(a.spare.chunks))
			require.Equal(t, unsafe.SliceData(done), unsafe.SliceData(a.spare.done))
		}
		first = a.mem.b
		for i := range a.mem.b {
			a.mem.b[i] = 0xff
		}
		// The bookkeeping as a forger would leave it: every chunk marked
		// decoded, with an error, in the wrong place.
		sp := a.spare
		chunks, done = sp.chunks, sp.done
		for i := range sp.done {
			sp.done[i].Store(true)
			sp.errs[i] = ErrMalformed
			sp.chunks[i].s1 = 0
		}
		for i := range sp.first {
			sp.first[i] = ^uint32(0)
		}
		for i := range sp.rank {
			sp.rank[i] = ^uint32(0)
		}
	}
	require.NoError(t, a.Close())
	require.Nil(t, a.mem)
}

// TestArenaShared: an Arena in use is not shared (the second index maps
// its own memory); closed while in use, it is unmapped when the index
// gives it back; closed, it is not used. A snapshot refused after its
// arrays were made gives the Arena back.
func TestArenaShared(t *testing.T) {
	if _, err := mapAnon(1); err != nil {
		t.Skip("no anonymous mappings here")
	}
	dir := t.TempDir()
	ref := mustParse(t, chunkyText(), Options{})
	p := writeCompact(t, ref, dir, "k.snap")
	var a Arena
	one, err := Open(p, Options{Arena: &a})
	require.NoError(t, err)
	two, err := Open(p, Options{Arena: &a})
	require.NoError(t, err)
	require.Same(t, &a, one.arena)
	require.Nil(t, two.arena)
	require.NotNil(t, two.anon)
	sameAnswers(t, ref, two)
	require.NoError(t, a.Close())
	require.NotNil(t, a.mem, "in use: kept")
	sameAnswers(t, ref, one)
	require.NoError(t, one.Close())
	require.Nil(t, a.mem, "given back closed: unmapped")
	three, err := Open(p, Options{Arena: &a})
	require.NoError(t, err)
	require.Nil(t, three.arena)
	require.NoError(t, three.Close())
	require.NoError(t, two.Close())

	// A chain that goes backwards: refused by loadLazy, after lazyArrays.
	good, build := compactSample(t)
	forged := clone(good)
	l := forged.tables[8*forged.slots:]
	binary.LittleEndian.PutUint32(l[4:], binary.LittleEndian.Uint32(l))
	bad := filepath.Join(dir, "bad.snap")
	require.NoError(t, os.WriteFile(bad, build(forged), 0o644))
	var b Arena
	defer b.Close()
	_, err = Open(bad, Options{Arena: &b})
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "chain to")
	require.False(t, b.busy)
	require.NotNil(t, b.mem)
	ok, err := Open(writeCompact(t, mustParse(t, sample, Options{}), dir, "s.snap"), Options{Arena: &b})
	require.NoError(t, err)
	require.Same(t, &b, ok.arena)
	require.NoError(t, ok.Close())
}

// TestArenaConcurrent: indexes opened and closed on several goroutines
// with one Arena, each taking it or mapping its own, all answer.
func TestArenaConcurrent(t *testing.T) {
	if _, err := mapAnon(1); err != nil {
		t.Skip("no anonymous mappings here")
	}
	ref := mustParse(t, chunkyText(), Options{})
	want, err := ref.Lookup("mod3", "helper_7", 2)
	require.NoError(t, err)
	p := writeCompact(t, ref, t.TempDir(), "k.snap")
	var a Arena
	defer a.Close()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 5 {
				ix, err := Open(p, Options{Arena: &a})
				if err == nil {
					var got Symbol
					if got, err = ix.Lookup("mod3", "helper_7", 2); err == nil && got != want {
						err = fmt.Errorf("got %+v, want %+v", got, want)
					}
					ix.Close()
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
}

// TestArenaNamesKept: a name an index hands out stays right after the
// next index has decoded into the same Arena.
func TestArenaNamesKept(t *testing.T) {
	if _, err := mapAnon(1); err != nil {
		t.Skip("no anonymous mappings here")
	}
	dir := t.TempDir()
	var a Arena
	defer a.Close()
	first := writeCompact(t, mustParse(t, chunkyText(), Options{}), dir, "a.snap")
	other := strings.NewReplacer("fn_", "gn_", "helper_", "aid_").Replace(chunkyText())
	second := writeCompact(t, mustParse(t, other, Options{}), dir, "b.snap")
	ix, err := Open(first, Options{Arena: &a})
	require.NoError(t, err)
	var kept []Symbol
	ix.Symbols("mod2", func(s Symbol) bool { kept = append(kept, s); return len(kept) < 50 })
	require.NoError(t, ix.Close())
	ix, err = Open(second, Options{Arena: &a})
	require.NoError(t, err)
	require.Same(t, &a, ix.arena)
	require.NoError(t, ix.DecodeAll())
	for _, s := range kept {
		require.True(t, strings.HasPrefix(s.Name, "helper_"), s.Name)
	}
	require.NoError(t, ix.Close())
}
