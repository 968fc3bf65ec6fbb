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
