// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// shell returns the Self of a fake child: a shell script that gets the
// operation as $1 and the input as $2.
func shell(t *testing.T, script string) []string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh(1) on this system")
	}
	return []string{"sh", "-c", script, "sh"}
}

func figures(r *Report) map[string]Figure {
	got := map[string]Figure{}
	for _, f := range r.Figures {
		got[f.Name] = f
	}
	return got
}

func TestOneShotReportsEachSide(t *testing.T) {
	// The script counts its runs in a file: an even run prints 1 ms, an
	// odd one 3 ms, and open always 5 ms. The sides take turns, read
	// first, so every read is an even run: 3 ms in any read figure would
	// mean they did not. It fails unless it is given the input.
	dir := t.TempDir()
	script := `n=$(cat "` + dir + `/n" 2>/dev/null || echo 0); echo $((n+1)) > "` + dir + `/n"
case "$1" in
read) if [ $((n % 2)) = 0 ]; then echo 1000000; else echo 3000000; fi ;;
open) echo 5000000 ;;
esac
[ "$2" = in.txt ] || exit 9`
	rep, err := OneShot(OneShotOptions{Self: shell(t, script), Input: "in.txt", Rounds: 4})
	require.NoError(t, err)
	got := figures(rep)
	require.Equal(t, 4.0, got["rounds"].Value)
	require.Equal(t, 1.0, got["read_file_min_ms"].Value)
	require.Equal(t, 1.0, got["read_file_median_ms"].Value)
	require.Equal(t, 5.0, got["parse_index_q1_ms"].Value)
	require.Equal(t, 5.0, got["parse_vs_read_median"].Value)
	require.Equal(t, &Target{Op: "<=", Bound: 2.5, Met: false}, got["parse_vs_read_median"].Target, "5 > 2.5: missed")
	require.Nil(t, got["parse_vs_read_q1"].Target, "the median's target only")
	require.Equal(t, "in.txt", rep.Input)
}

func TestOneShotQuantiles(t *testing.T) {
	// Each read prints the run's number in milliseconds: sorted, the kept
	// reads (after two of warm-up) are 3, 5, 7, ..., 21 ms.
	dir := t.TempDir()
	script := `n=$(cat "` + dir + `/n" 2>/dev/null || echo 0); echo $((n+1)) > "` + dir + `/n"
case "$1" in read) echo $(( (n+1) * 1000000 )) ;; open) echo 2000000 ;; esac`
	rep, err := OneShot(OneShotOptions{Self: shell(t, script), Input: "x", Rounds: 10})
	require.NoError(t, err)
	got := figures(rep)
	// Reads were runs 0, 2, ..., 22 (n+1 = 1, 3, ..., 23 ms); the kept
	// ten are 5, 7, ..., 23 ms.
	require.Equal(t, 5.0, got["read_file_min_ms"].Value)
	require.Equal(t, 9.0, got["read_file_q1_ms"].Value)      // index int(0.25*9) = 2
	require.Equal(t, 13.0, got["read_file_median_ms"].Value) // index int(0.5*9) = 4
	require.InDelta(t, 2.0/13, got["parse_vs_read_median"].Value, 1e-12)
}

// A child that fails or prints something else is an error, not a fast run.
func TestOneShotChildErrors(t *testing.T) {
	_, err := OneShot(OneShotOptions{Self: shell(t, `echo broken >&2; exit 3`), Input: "f"})
	require.ErrorContains(t, err, "exit status 3: broken")
	_, err = OneShot(OneShotOptions{Self: shell(t, `echo soon`), Input: "f"})
	require.ErrorContains(t, err, `printed "soon\n", not a time in nanoseconds`)
	_, err = OneShot(OneShotOptions{Self: shell(t, `echo 0`), Input: "f"})
	require.ErrorContains(t, err, "not a time")
	_, err = OneShot(OneShotOptions{})
	require.Error(t, err)
}

func TestOnce(t *testing.T) {
	p := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	for _, op := range []string{"read", "open"} {
		for _, opts := range []kallsyms.Options{{}, {MapText: true}} {
			d, err := Once(op, p, opts)
			require.NoError(t, err, op)
			require.Positive(t, d, op)
			require.Less(t, d, time.Minute, op)
		}
	}
	_, err := Once("open", filepath.Join(t.TempDir(), "absent"), kallsyms.Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o644))
	_, err = Once("open", empty, kallsyms.Options{MapText: true})
	require.ErrorIs(t, err, kallsyms.ErrEmpty)
	_, err = Once("parse", p, kallsyms.Options{})
	require.ErrorContains(t, err, `unknown operation "parse"`)
}
