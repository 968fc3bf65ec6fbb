// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// Lists from a file or standard input: blanks and line ends separate the
// items, CRLF included; a line starting with '#' is a comment.
func TestListItems(t *testing.T) {
	items, err := readList("l", strings.NewReader("# specs\nvfs_read\r\n\n  jiffies  ext4:x,2\n\t# more\n0x10"))
	require.NoError(t, err)
	assert.Equal(t, []string{"vfs_read", "jiffies", "ext4:x,2", "0x10"}, items)
	items, err = readList("l", strings.NewReader("#\n \n"))
	require.NoError(t, err)
	assert.Empty(t, items)
	// A stream that is no list (/dev/zero) stops at its first long line.
	_, err = readList("<stdin>", io.MultiReader(strings.NewReader("vfs_read\njiffies\n"), zeroReader{}))
	assert.EqualError(t, err, "<stdin>:3: line longer than 1048576 bytes: not a list of specs or addresses")
	var out, errs bytes.Buffer
	code := run([]string{"lookup", "-", "--kallsyms", exampleKallsyms()},
		strings.NewReader("vfs_read\n# a comment\n"), &out, &errs)
	require.Equal(t, 0, code, errs.String())
	assert.Equal(t, "vfs_read: 0xffffffff81010180 T vmlinux position 1\n", out.String())
}

func TestParseHex(t *testing.T) {
	for in, want := range map[string]uint64{"ffffffff81000000": 0xffffffff81000000, "0xFFFFFFFF81000000": 0xffffffff81000000, "0X10": 0x10, " 0x10\t": 0x10} {
		v, err := parseHex(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, v, in)
	}
	_, err := parseHex("0x1ffffffffffffffff")
	assert.EqualError(t, err, `address "0x1ffffffffffffffff" does not fit in 64 bits`)
	_, err = parseHex("vfs_read")
	assert.EqualError(t, err, `address "vfs_read" is not hex`)
	_, err = parseHex("0x")
	assert.EqualError(t, err, `address "0x" is not hex`)
}
