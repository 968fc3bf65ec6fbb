// SPDX-License-Identifier: GPL-2.0-only

// Package scripts holds the project's shell helpers; its test checks
// fuzz-one's verdicts with stand-ins for the go command.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGo writes a stand-in for go that prints out and exits with status;
// it counts its runs in a file beside it.
func fakeGo(t *testing.T, out string, status int) (path, runs string) {
	t.Helper()
	dir := t.TempDir()
	runs = filepath.Join(dir, "runs")
	path = filepath.Join(dir, "go")
	script := "#!/bin/sh\necho run >> '" + runs + "'\ncat <<'EOF'\n" + out + "\nEOF\nexit " + string(rune('0'+status)) + "\n"
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path, runs
}

func runFuzzOne(t *testing.T, goCmd string) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on this system")
	}
	cmd := exec.Command("bash", "fuzz-one", "example.com/pkg", "FuzzX", "1s", "1s")
	cmd.Env = append(os.Environ(), "GO="+goCmd)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

func count(t *testing.T, runs string) int {
	b, err := os.ReadFile(runs)
	require.NoError(t, err)
	return strings.Count(string(b), "run")
}

func TestFuzzOneVerdicts(t *testing.T) {
	// A clean run: once, passed.
	g, runs := fakeGo(t, "fuzz: elapsed: 1s, execs: 10\nPASS\nok  example.com/pkg 1.0s", 0)
	code, out := runFuzzOne(t, g)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, 1, count(t, runs))

	// Go 1.26's deadline race, nothing found: run again, then tolerated.
	g, runs = fakeGo(t, "--- FAIL: FuzzX (1.10s)\n    context deadline exceeded\nFAIL", 1)
	code, out = runFuzzOne(t, g)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, 2, count(t, runs))
	assert.Contains(t, out, "tolerated")

	// A finding: fails at once, its output shown.
	g, runs = fakeGo(t, "--- FAIL: FuzzX (0.5s)\n    fuzz_test.go:20: boom\n    Failing input written to testdata/fuzz/FuzzX/abc\n    context deadline exceeded", 1)
	code, out = runFuzzOne(t, g)
	assert.Equal(t, 1, code, out)
	assert.Equal(t, 1, count(t, runs))
	assert.Contains(t, out, "Failing input written")

	// Anything else (a build failure): fails at once.
	g, runs = fakeGo(t, "x.go:1:1: syntax error", 2)
	code, out = runFuzzOne(t, g)
	assert.Equal(t, 1, code, out)
	assert.Equal(t, 1, count(t, runs))
	assert.Contains(t, out, "syntax error")
}
