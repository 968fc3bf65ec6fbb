// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// TestJSONDocumented: every command's JSON document begins with the
// envelope (schema_version, command, ok, as its exit status says), and
// docs/json.md lists every field it writes: its top-level fields in the
// command's section, the fields of nested objects anywhere on the page.
func TestJSONDocumented(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "json.md"))
	require.NoError(t, err)
	page := string(b)
	section := func(heading string) string {
		i := strings.Index(page, "\n## "+heading)
		require.GreaterOrEqual(t, i, 0, "docs/json.md has no section %q", heading)
		rest := page[i+4:]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	k := filepath.Join(root, "testdata", "kallsyms", "example.txt")
	ko := fixture("livepatch-sample.ko")
	for _, tc := range []struct {
		heading, command string
		args             []string
	}{
		{"resolve (the main job)", "resolve", []string{fixture("err-position.ko"), "--kallsyms", k, "--modules", fixture("modules")}},
		{"resolve (the main job)", "resolve", []string{ko, "--kallsyms", k, "--link", "--cfi-shadow"}},
		{"check", "check", []string{"check", fixture("err-position.ko"), "--kallsyms", k, "--kallsyms", k}},
		{"info", "info", []string{"info", ko}},
		{"link", "link", []string{"link", fixture("patch.o"), "--kallsyms", k}},
		{"plt", "plt", []string{"plt", ko}},
		{"lookup and addr", "lookup", []string{"lookup", "vfs_read", "no_such", "--kallsyms", k}},
		{"lookup and addr", "addr", []string{"addr", "0xffffffff81010180", "0x1", "--kallsyms", k}},
		{"objects", "objects", []string{"objects", "--kallsyms", k}},
		{"Exit statuses and errors", "resolve", []string{fixture("no-such.ko"), "--kallsyms", k}},
	} {
		code, out, _ := runCLI(t, append(tc.args, "--format", "json")...)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%v: %s", tc.args, out)
		assert.Equal(t, float64(schemaVersion), doc["schema_version"], "%v", tc.args)
		assert.Equal(t, tc.command, doc["command"], "%v", tc.args)
		assert.Equal(t, code == 0, doc["ok"], "%v: ok says what the exit status says (%d)", tc.args, code)
		sec := section(tc.heading)
		for key := range doc {
			if key == "schema_version" || key == "command" || key == "ok" {
				continue
			}
			assert.Contains(t, sec, "`"+key+"`", "%v: docs/json.md's %q section lists %s", tc.args, tc.heading, key)
		}
		var nested []string
		collectKeys(doc, false, &nested)
		sort.Strings(nested)
		for _, key := range nested {
			assert.Contains(t, page, "`"+key+"`", "%v: docs/json.md lists the field %s", tc.args, key)
		}
	}
}

// collectKeys appends the keys of v's nested objects (inner: v is one).
func collectKeys(v any, inner bool, keys *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if inner {
				*keys = append(*keys, k)
			}
			collectKeys(e, true, keys)
		}
	case []any:
		for _, e := range x {
			collectKeys(e, true, keys)
		}
	}
}

// TestJSONOnUnusableInput: every command with --format json writes a
// JSON document on exit 2 too: the envelope, ok false, and the error,
// with the file (and line) it names.
func TestJSONOnUnusableInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("ffffffff81000000 T a\nzz T b\n"), 0o644))
	ko := fixture("livepatch-sample.ko")
	for _, args := range [][]string{
		{ko, "--kallsyms", bad},
		{"resolve", ko, "--kallsyms", bad},
		{"link", ko, "--kallsyms", bad},
		{"lookup", "a", "--kallsyms", bad},
		{"addr", "0x1", "--kallsyms", bad},
		{"objects", "--kallsyms", bad},
		{"info", bad},
		{"plt", bad},
		{"bench", "kallsyms", "--kallsyms", filepath.Join(dir, "missing")},
	} {
		code, out, _ := runCLI(t, append(args, "--format", "json")...)
		var doc struct {
			SchemaVersion *int   `json:"schema_version"`
			Command       string `json:"command"`
			OK            *bool  `json:"ok"`
			Error         *struct {
				Kind, Message, File string
				Line                int
				ExitStatus          int `json:"exit_status"`
			} `json:"error"`
		}
		require.Equal(t, 2, code, "%v: %s", args, out)
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%v: %s", args, out)
		require.NotNil(t, doc.SchemaVersion, "%v", args)
		assert.Equal(t, schemaVersion, *doc.SchemaVersion)
		require.NotNil(t, doc.OK)
		assert.False(t, *doc.OK)
		require.NotNil(t, doc.Error, "%v", args)
		assert.Equal(t, "unusable", doc.Error.Kind)
		assert.Equal(t, 2, doc.Error.ExitStatus)
		assert.NotEmpty(t, doc.Error.Message)
		assert.NotEmpty(t, doc.Error.File, "%v: the file it names", args)
		if strings.Contains(doc.Error.Message, bad+":2:") {
			assert.Equal(t, 2, doc.Error.Line, "%v", args)
		}
	}
	// check reads each kernel apart: an unreadable one is its row's
	// failure (exit 1), in the same envelope.
	code, out, _ := runCLI(t, "check", ko, "--kallsyms", bad, "--kallsyms", bad, "--format", "json")
	assert.Equal(t, 1, code)
	var rows struct {
		SchemaVersion int  `json:"schema_version"`
		OK            bool `json:"ok"`
		Kernels       []struct {
			FirstErrorKind string `json:"first_error_kind"`
		} `json:"kernels"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	assert.Equal(t, schemaVersion, rows.SchemaVersion)
	assert.False(t, rows.OK)
	require.Len(t, rows.Kernels, 2)
	assert.Equal(t, "unreadable", rows.Kernels[0].FirstErrorKind)
}
