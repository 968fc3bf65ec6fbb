// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func openFixture(t *testing.T, name string) *Module {
	t.Helper()
	m, err := Open(filepath.Join(testutil.RepoRoot(), "testdata", "modplt", name))
	require.NoError(t, err)
	return m
}

// TestThumbFixture counts testdata/modplt/thumb.S (Thumb-2 and ARM state,
// zero and non-zero addends in the instructions); the figures follow
// from the comments in the source.
func TestThumbFixture(t *testing.T) {
	m := openFixture(t, "thumb.o")
	require.Equal(t, "arm", m.Arch)
	k, err := m.Count(Options{})
	require.NoError(t, err)
	byName := map[string]SectionCount{}
	for _, s := range k.Sections {
		byName[s.Name] = s
	}
	text := byName[".rel.text"]
	assert.Equal(t, 8, text.Branches)
	assert.Equal(t, 1, text.SameSection)   // bl near
	assert.Equal(t, 2, text.NonZeroAddend) // bl memmove+8, twice
	// memset (2 -> 1), memcpy THM_CALL, memcpy THM_JUMP24, memmove+8 twice,
	// far_fn.
	assert.Equal(t, 6, text.PLT)
	assert.Equal(t, 1, byName[".rel.text.unlikely"].PLT)
	init := byName[".rel.init.text"]
	assert.Equal(t, Init, init.Region)
	assert.Equal(t, 3, init.PLT) // memset (2 -> 1), memcpy JUMP24, memcpy+16
	assert.Equal(t, 7+2, k.PLTCore)
	assert.Equal(t, 3+2, k.PLTInit)
	assert.Equal(t, uint64(128), k.PLTSizeCore)
	assert.Empty(t, k.Warnings)

	o, err := m.Count(Options{Mode: ModeOptimal})
	require.NoError(t, err)
	// Core, Thumb entries: memset, memcpy (shared by BL and B.W),
	// memmove+8, far_fn. Init, ARM entries: memset, memcpy, memcpy+16.
	assert.Equal(t, 4+2, o.PLTCore)
	assert.Equal(t, 3+2, o.PLTInit)
}

// TestGOTFixture counts testdata/modplt/got.c, built with -fpic -fno-plt.
func TestGOTFixture(t *testing.T) {
	m := openFixture(t, "got.o")
	require.Equal(t, "x86_64", m.Arch)
	k, err := m.Count(Options{})
	require.NoError(t, err)
	// Per section, distinct (type, symbol, addend): .text ext_f, ext_a,
	// ext_g, ext_b; .init.text ext_f, ext_b, ext_g.
	assert.Equal(t, 7, k.GOT)
	assert.Equal(t, []int{4, 3}, []int{k.Sections[0].GOT, k.Sections[1].GOT})
	assert.Zero(t, k.PLTCore+k.PLTInit)
	assert.Zero(t, k.PLTSizeCore)
	assert.Empty(t, k.Warnings) // x86_64 modules have no PLT sections
	o, err := m.Count(Options{Mode: ModeOptimal})
	require.NoError(t, err)
	assert.Equal(t, 4, o.GOT) // one table: ext_f, ext_a, ext_g, ext_b
}
