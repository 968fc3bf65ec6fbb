// SPDX-License-Identifier: GPL-2.0-only

//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile input, one table (docs/limits.md): each case is built by the test,
// not committed, and ends with its exit status and an error that names
// the file and the bound, never a hang, a panic or unbounded memory.
func TestHostileInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	// A gzip bomb in small: one line repeated past --max-symbols.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, err := zw.Write(bytes.Repeat([]byte("ffffffff81000000 t bomb_symbol_name_xxxxxxxxxx\n"), 3000))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	bombPath := write("bomb.gz", bomb.Bytes())
	// One name, 100,000 times.
	dups := write("dups.txt", bytes.Repeat([]byte("ffffffff81000000 t dup_name\n"), 100000))
	// A FIFO nobody writes to.
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() {
		// The reader left blocked in open(2) by the timeout: a writer
		// that comes and goes lets it end.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	sample := fixture("livepatch-sample.ko")
	ex := filepath.Join("..", "..", "testdata", "kallsyms", "example.txt")

	for _, c := range []struct {
		name  string
		args  []string
		stdin io.Reader
		code  int
		want  string // in stdout or stderr
	}{
		{"urandom", []string{"lookup", "vfs_read", "--kallsyms", "/dev/urandom"}, nil, 2, "/dev/urandom:"},
		{"yes on stdin", []string{sample, "--kallsyms", "-"}, yesReader{}, 2, "<stdin>:1:"},
		{"gzip bomb", []string{sample, "--kallsyms", bombPath, "--max-symbols", "1000"}, nil, 2, bombPath + ": input larger than the limit: more than 1000 lines"},
		{"gzip bomb within a raised bound", []string{"lookup", "bomb_symbol_name_xxxxxxxxxx,3000", "--kallsyms", bombPath, "--max-symbols", "3000"}, nil, 0, "0xffffffff81000000"},
		{"stalled FIFO", []string{sample, "--kallsyms", fifo, "--max-time", "1s"}, nil, 3, "--max-time 1s reached while reading the kernel's symbols (" + fifo + ")"},
		{"stalled FIFO in check", []string{"check", sample, "--kallsyms", fifo, "--kallsyms", ex, "--max-time", "1s"}, nil, 3, "--max-time 1s reached while checking"},
		{"stalled FIFO, JSON", []string{sample, "--kallsyms", fifo, "--max-time", "1s", "--format", "json"}, nil, 3, "\"kind\": \"deadline\""},
		{"1 MiB module name", []string{"lookup", "f", "--kallsyms", write("longmod.txt", []byte("ffffffffc0000000 t f\t["+strings.Repeat("m", 1<<20)+"]\n"))}, nil, 2, "module name of 1048576 bytes is longer than MODULE_NAME_LEN-1 (55)"},
		{"NUL in a name", []string{"lookup", "a", "--kallsyms", write("nul.txt", []byte("ffffffff81000000 T a\x00b\n"))}, nil, 2, `nul.txt:1: a NUL byte in the symbol name "a\x00b"`},
		{"CR line ends", []string{"lookup", "a", "--kallsyms", write("cr.txt", []byte("ffffffff81000000 T a\rffffffff81000010 T b\r"))}, nil, 2, "the file's lines end in CR alone"},
		{"a name 100,000 times", []string{"lookup", "dup_name", "--kallsyms", dups}, nil, 1, `100000 symbols named "dup_name" in vmlinux; give a sympos: [1] 0xffffffff81000000 t;`},
		{"negative sympos", []string{"lookup", "vfs_read,-1", "--kallsyms", ex}, nil, 1, "sympos -1 is negative: positions count from 1"},
		{"negative --max-symbols", []string{"lookup", "vfs_read", "--kallsyms", ex, "--max-symbols", "-1"}, nil, 2, "--max-symbols -1: must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// (in parallel: the three --max-time cases wait a second each)
			t.Parallel()
			in := c.stdin
			if in == nil {
				in = strings.NewReader("")
			}
			var out, errb bytes.Buffer
			code := run(c.args, in, &out, &errb)
			assert.Equal(t, c.code, code, "%s%s", out.String(), errb.String())
			assert.Contains(t, out.String()+errb.String(), c.want)
			assert.Less(t, out.Len()+errb.Len(), 4096, "the error stays small")
		})
	}
}
