// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// updateDocs rewrites docs/cli and docs/man from the command tree
// (make docs) instead of comparing them.
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli and docs/man from the command tree")

// manDate is the date the man pages carry: fixed, so that they change
// only when the commands do.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// TestGeneratedDocs: docs/cli (a Markdown page per command) and
// docs/man (a man page per command) are what cobra/doc makes of the
// command tree; a change to a command's help without `make docs` fails
// here, naming the stale file.
func TestGeneratedDocs(t *testing.T) {
	tmp := t.TempDir()
	genDocs(t, tmp)
	root := testutil.RepoRoot()
	for _, sub := range []string{"cli", "man"} {
		want, err := filepath.Glob(filepath.Join(tmp, sub, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, want)
		dir := filepath.Join(root, "docs", sub)
		if *updateDocs {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.MkdirAll(dir, 0o755))
		}
		have, _ := filepath.Glob(filepath.Join(dir, "*"))
		names := map[string]bool{}
		for _, f := range want {
			name := filepath.Base(f)
			names[name] = true
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			if *updateDocs {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
				continue
			}
			got, err := os.ReadFile(filepath.Join(dir, name))
			if assert.NoError(t, err, "docs/%s/%s is missing: run make docs", sub, name) {
				assert.True(t, bytes.Equal(b, got), "docs/%s/%s is stale: run make docs", sub, name)
			}
		}
		for _, f := range have {
			assert.True(t, *updateDocs || names[filepath.Base(f)], "docs/%s/%s is no command's: run make docs", sub, filepath.Base(f))
		}
	}
}

// genDocs writes the Markdown and man pages of the command tree under
// dir/cli and dir/man.
func genDocs(t *testing.T, dir string) {
	t.Helper()
	root := newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, nil)
	root.InitDefaultHelpCmd()
	var quiet func(c *cobra.Command)
	quiet = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			quiet(s)
		}
	}
	quiet(root)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cli"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "man"), 0o755))
	require.NoError(t, doc.GenMarkdownTree(root, filepath.Join(dir, "cli")))
	require.NoError(t, doc.GenManTree(root, &doc.GenManHeader{
		Title: "KLPRESOLVE", Section: "1", Date: &manDate, Source: "klpresolve", Manual: "klpresolve manual",
	}, filepath.Join(dir, "man")))
}
