// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// NewFile (an io.ReaderAt) counts what Open (a path) counts; a size past
// the reader's end is an error that names the module.
func TestNewFile(t *testing.T) {
	p := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "thumb.o")
	want, err := Open(p)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	got, err := NewFile("thumb", bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, want.Arch, got.Arch)
	wc, err := want.Count(Options{})
	require.NoError(t, err)
	gc, err := got.Count(Options{})
	require.NoError(t, err)
	require.Equal(t, wc.Totals, gc.Totals)
	require.Equal(t, wc.PLTCore, gc.PLTCore)
	require.Equal(t, wc.PLTInit, gc.PLTInit)

	_, err = NewFile("short.o", bytes.NewReader(data), int64(len(data))+1)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.ErrorContains(t, err, "short.o")
}

func TestRegionText(t *testing.T) {
	for r, want := range map[Region]string{Core: "core", Init: "init"} {
		require.Equal(t, want, r.String())
		b, err := r.MarshalText()
		require.NoError(t, err)
		require.Equal(t, want, string(b))
	}
}
