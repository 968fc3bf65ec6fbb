package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	assert.Equal(t, "0 objects", count(0, "object", "objects"))
	assert.Equal(t, "1 object", count(1, "object", "objects"))
	assert.Equal(t, "2 entries", count(2, "entry", "entries"))
	assert.Equal(t, "1 entry", count(1, "entry", "entries"))
}

// A System.map lists vmlinux alone: one object, not "1 objects".
func TestObjectsOneObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "System.map")
	require.NoError(t, os.WriteFile(path, []byte("ffffffff81000000 T _stext\nffffffff81000100 T vfs_read\n"), 0o644))
	code, out, _ := runCLI(t, "objects", "--kallsyms", path)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\n1 object, 2 symbols\n")
	code, out, _ = runCLI(t, "snapshot", "--kallsyms", path, "-o", filepath.Join(t.TempDir(), "s.snap"))
	require.Equal(t, 0, code)
	assert.Contains(t, out, ": 1 object, 2 symbols, ")
}
