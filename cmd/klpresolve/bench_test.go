// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/cmd/klpresolve/internal/bench"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// The benchmarks measure under the runtime's default collector (as go test
// -bench does), not the one-shot setting main gives the commands; GOGC in
// the environment wins; bench once, which times a command's own work in a
// fresh process, keeps the commands' setting.
func TestBenchCollectorSetting(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(oneShotGC))
	t.Setenv("GOGC", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	missing := filepath.Join(t.TempDir(), "missing.ko")

	code, _, errs := runCLI(t, "bench", "plt", missing)
	require.Equal(t, 2, code, errs)
	require.Equal(t, goDefaultGC, debug.SetGCPercent(oneShotGC))

	code, out, errs := runCLI(t, "bench", "once", "read", fixture("livepatch-sample.ko"))
	require.Equal(t, 0, code, errs)
	require.NotEmpty(t, strings.TrimSpace(out))
	require.Equal(t, oneShotGC, debug.SetGCPercent(oneShotGC))

	t.Setenv("GOGC", "300")
	code, _, _ = runCLI(t, "bench", "plt", missing)
	require.Equal(t, 2, code)
	require.Equal(t, oneShotGC, debug.SetGCPercent(oneShotGC))
}

// bench kallsyms and bench proc as a user runs them, children included:
// JSON reports with the one-shot figures measured in fresh processes of
// this binary, and proc's turns of klpresolve objects and cat.
func TestBenchCommands(t *testing.T) {
	selfAsCLI(t)
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	require.NoError(t, bt.Value.Set("20x")) // testing.Benchmark: 20 calls, not a second
	defer func() { _ = bt.Value.Set(old) }()
	k := exampleKallsyms()

	code, out, errs := runCLI(t, "bench", "kallsyms", "--kallsyms", k, "--format", "json")
	require.Equal(t, 0, code, errs)
	var rep struct {
		Benchmark string `json:"benchmark"`
		GOGC      *int   `json:"gogc"`
		Figures   []struct {
			Name   string  `json:"name"`
			Value  float64 `json:"value"`
			Target *struct {
				Op    string
				Bound float64
				Met   bool
			} `json:"target"`
		} `json:"figures"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "kallsyms", rep.Benchmark)
	require.NotNil(t, rep.GOGC)
	f := map[string]float64{}
	targets := 0
	for _, x := range rep.Figures {
		f[x.Name] = x.Value
		if x.Name == "naive_vs_parse" {
			require.NotNil(t, x.Target)
			assert.Equal(t, ">=", x.Target.Op)
			assert.Equal(t, 15.0, x.Target.Bound)
			assert.Equal(t, x.Value >= 15, x.Target.Met, "met says what the value says")
		}
		if x.Target != nil {
			targets++
		}
	}
	assert.GreaterOrEqual(t, targets, 8, "each figure with a goal says whether it met it")
	require.Equal(t, 20.0, f["oneshot_rounds"])
	for _, q := range []string{"min", "q1", "median"} {
		require.Positive(t, f["oneshot_read_file_"+q+"_ms"], q)
		require.Positive(t, f["oneshot_parse_index_"+q+"_ms"], q)
		require.InEpsilon(t, f["oneshot_parse_index_"+q+"_ms"]/f["oneshot_read_file_"+q+"_ms"], f["oneshot_parse_vs_read_"+q], 1e-9, q)
	}
	require.Equal(t, 27.0, f["input_lines"])

	if _, err := exec.LookPath("cat"); err != nil {
		return
	}
	code, out, errs = runCLI(t, "bench", "proc", "--kallsyms", k, "--rounds", "3", "--format", "json")
	require.Equal(t, 0, code, errs)
	rep.GOGC, rep.Figures = nil, nil
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "proc", rep.Benchmark)
	require.Nil(t, rep.GOGC) // it times other processes
	f = map[string]float64{}
	for _, x := range rep.Figures {
		f[x.Name] = x.Value
	}
	require.Equal(t, 3.0, f["rounds"])
	require.Positive(t, f["tool_median_ms"])
	require.Positive(t, f["reference_median_ms"])
	require.InEpsilon(t, f["tool_median_ms"]/f["reference_median_ms"], f["tool_vs_reference_median"], 1e-9)
}

// bench kallsyms --loaded-modules measures the example's kernel with a
// module of the corpus loaded too, and names what it measured; a folder
// with no module in it is a usage error.
func TestBenchKallsymsLoaded(t *testing.T) {
	md4 := testutil.Corpus(t, "amd64/modules/md4.ko")
	selfAsCLI(t)
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	require.NoError(t, bt.Value.Set("20x"))
	defer func() { _ = bt.Value.Set(old) }()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(md4, filepath.Join(dir, "md4.ko")))

	code, out, errs := runCLI(t, "bench", "kallsyms", "--kallsyms", exampleKallsyms(), "--loaded-modules", dir, "--format", "json")
	require.Equal(t, 0, code, errs)
	var rep struct {
		Benchmark string `json:"benchmark"`
		Input     string `json:"input"`
		Figures   []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"figures"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "kallsyms-loaded", rep.Benchmark)
	assert.Equal(t, exampleKallsyms()+", every module under "+dir+" loaded", rep.Input)
	f := map[string]float64{}
	for _, x := range rep.Figures {
		f[x.Name] = x.Value
	}
	assert.Equal(t, 1.0, f["modules_loaded"])
	// What was measured is WriteLoaded's kallsyms: the example's 27 lines
	// and md4's.
	var text bytes.Buffer
	n, err := bench.WriteLoaded(&text, exampleKallsyms(), dir)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Greater(t, bytes.Count(text.Bytes(), []byte("\t[md4]\n")), 0)
	assert.Equal(t, float64(bytes.Count(text.Bytes(), []byte{'\n'})), f["input_lines"])

	code, _, errs = runCLI(t, "bench", "kallsyms", "--kallsyms", exampleKallsyms(), "--loaded-modules", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "no module to load")
}
