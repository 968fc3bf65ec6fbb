// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// Fleet releases each kernel's index when its row is made: a raw
// snapshot's mapping, and a text's (Fleet maps texts), are gone when
// Fleet returns, not at some later collection (a thousand raw snapshots
// stayed mapped: 6.4 GB resident). With NoMap the rows are the same.
func TestFleetUnmapsSnapshots(t *testing.T) {
	example := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	text, err := kallsyms.Open(example, kallsyms.Options{})
	require.NoError(t, err)
	dir := t.TempDir()
	var kernels []string
	for _, n := range []string{"a.raw", "b.raw", "c.raw"} {
		p := filepath.Join(dir, n)
		require.NoError(t, text.WriteSnapshotRawFile(p))
		kernels = append(kernels, p)
	}
	b, err := os.ReadFile(example)
	require.NoError(t, err)
	for _, n := range []string{"d.txt", "e.txt"} {
		p := filepath.Join(dir, n)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		kernels = append(kernels, p)
	}
	m, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	rows, _ := Fleet(t.Context(), m, KernelFiles(kernels...), FleetOptions{})
	for _, r := range rows {
		require.True(t, r.OK, "%s: %s", r.Kernel, r.FirstError)
		require.Equal(t, 6, r.Resolved, r.Kernel)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	for _, k := range kernels {
		require.False(t, strings.Contains(string(maps), k), "%s is still mapped", k)
	}
	read, _ := Fleet(t.Context(), m, KernelFiles(kernels...), FleetOptions{NoMap: true})
	for i := range rows {
		rows[i].Time, read[i].Time = 0, 0
	}
	require.Equal(t, rows, read)
}
