// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSniff(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("anything"))
	require.NoError(t, w.Close())
	ix, err := Parse("k", strings.NewReader("ffffffff81000000 T _stext\n"), Options{})
	require.NoError(t, err)
	var snap, raw bytes.Buffer
	require.NoError(t, ix.WriteSnapshot(&snap))
	require.NoError(t, ix.WriteSnapshotRaw(&raw))
	long := strings.Repeat("x", SniffLen+10)

	for _, tc := range []struct {
		name string
		head string
		want bool
	}{
		{"kallsyms", "ffffffff81000000 T _stext\nffffffff81000010 t foo\n", true},
		{"a module's line", "ffffffffc0350000 t ext4_free_inode\t[ext4]\n", true},
		{"32-bit System.map", "c0008000 T stext\n", true},
		{"CRLF and blank lines first", "\r\n\nffffffff81000000 T _stext  \r\n", true},
		{"kptr_restrict's zeros", "0000000000000000 T _stext\n", true},
		{"one line, no line end", "ffffffff81000000 T _stext", true},
		{"cut after SniffLen", "ffffffff81000000 T _stext\n" + long, true},
		{"compact snapshot", snap.String(), true},
		{"raw snapshot", raw.String(), true},
		{"gzip", gz.String(), true},
		{"README", "# Kernels\n\nOne System.map per kernel.\n", false},
		{"expected-plt.tsv", "module\ttotal_relocs\tjc\n", false},
		{"a hex word alone", "deadbeef\n", false},
		{"ELF", "\x7fELF\x02\x01\x01", false},
		{"empty", "", false},
		{"blank lines only", "\n\n  \n", false},
		{"a line longer than SniffLen", long, false},
		{"a module name past MODULE_NAME_LEN", "0 t x\t[" + long + "]\n", false},
		{"a cut line, judged by its start", "0 t [" + long, true},
		{"a cut line without an address", "t [" + long, false},
		{"blanks past SniffLen", "0" + strings.Repeat(" ", SniffLen) + "T x\n", true},
		// Cut as callers cut it: a blank line first left the cut line
		// shorter than SniffLen, and it was parsed as if whole.
		{"a blank line, then a line cut short", ("\n0 0 0 [" + long)[:SniffLen], true},
		{"a blank line, then a cut line without an address", ("\nt [" + long)[:SniffLen], false},
		// A head of blank lines alone from a longer file (FuzzParse: the
		// symbols came after 1,790 blank lines): it may hold symbols.
		{"SniffLen of blank lines, cut", strings.Repeat("\n", SniffLen), true},
		{"SniffLen of blanks and CRs, cut", strings.Repeat(" \r\n", SniffLen/3+1)[:SniffLen], true},
		{"a blank line longer than SniffLen", strings.Repeat(" ", SniffLen), true},
	} {
		assert.Equal(t, tc.want, Sniff([]byte(tc.head)), tc.name)
	}
}

// TestSniffCutLineCR: in a line cut short, a CR before the module's
// bracket is part of the name (the parser trims CRs at line ends only).
func TestSniffCutLineCR(t *testing.T) {
	line := "ffffffff81000000 0 \r [" + strings.Repeat("h", ModuleNameLen-1) + "]" + strings.Repeat(" ", SniffLen) + "\n"
	_, err := ParseBytes("k", []byte(line), Options{})
	require.NoError(t, err, "the parser takes it")
	assert.True(t, Sniff([]byte(line[:SniffLen])))
}
