// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProcReportsEachSide(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skip("no true(1) on this system")
	}
	in := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(in, make([]byte, 12345), 0o644))
	rep, err := Proc(ProcOptions{Tool: []string{"true"}, Reference: []string{"true", "x"}, Rounds: 5, Input: in})
	require.NoError(t, err)
	got := map[string]Figure{}
	for _, f := range rep.Figures {
		got[f.Name] = f
	}
	require.Equal(t, 5.0, got["rounds"].Value)
	for _, q := range []string{"min", "q1", "median"} {
		require.Positive(t, got["tool_"+q+"_ms"].Value, q)
		require.Positive(t, got["reference_"+q+"_ms"].Value, q)
		require.InDelta(t, got["tool_"+q+"_ms"].Value/got["reference_"+q+"_ms"].Value, got["tool_vs_reference_"+q].Value, 1e-9, q)
		require.Equal(t, "true x", got["reference_"+q+"_ms"].Comment)
	}
	require.Equal(t, 12345.0, got["input_bytes"].Value)
	if runtime.GOOS == "linux" {
		rss := got["tool_max_rss_bytes"].Value
		require.Greater(t, rss, 4096.0) // true(1) maps more than a page
		require.InDelta(t, rss/12345, got["tool_max_rss_vs_input"].Value, 1e-9)
	}
	require.LessOrEqual(t, got["tool_min_ms"].Value, got["tool_q1_ms"].Value)
	require.LessOrEqual(t, got["tool_q1_ms"].Value, got["tool_median_ms"].Value)
}

// A tool that fails is an error, not a fast run.
func TestProcFailingToolIsAnError(t *testing.T) {
	if _, err := exec.LookPath("false"); err != nil {
		t.Skip("no false(1) on this system")
	}
	_, err := Proc(ProcOptions{Tool: []string{"false"}, Reference: []string{"true"}, Rounds: 1})
	require.ErrorContains(t, err, "false: exit status 1")
	_, err = Proc(ProcOptions{})
	require.Error(t, err)
}
