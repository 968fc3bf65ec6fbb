// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// TestLicenseLines: every Go file of the project begins with its SPDX
// licence line, and LICENSE is the GPL, version 2.
func TestLicenseLines(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "GNU GENERAL PUBLIC LICENSE\n                       Version 2, June 1991")
	var missing []string
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		n++
		if !sc.Scan() || sc.Text() != "// SPDX-License-Identifier: GPL-2.0-only" {
			missing = append(missing, p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, n, 200)
	assert.Empty(t, missing, "Go files without the SPDX line")
}
