// SPDX-License-Identifier: GPL-2.0-only

package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A target that is not a regular file is written, never replaced: as
// root, renaming over /dev/null or /dev/full put a regular file there for
// every process on the machine (klpresolve snapshot -o /dev/full did).
// Its write errors are errors.
func TestWriteSpecialFiles(t *testing.T) {
	// Device nodes of its own (null and full, as in /dev), where it may
	// make them (root, a folder not mounted nodev): a regression replaces
	// these, not the machine's.
	dir := t.TempDir()
	null, full := filepath.Join(dir, "null"), filepath.Join(dir, "full")
	if syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3) == nil && syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7) == nil {
		require.NoError(t, WriteBytes(null, []byte("x")))
		err := WriteBytes(full, []byte("x"))
		require.ErrorIs(t, err, syscall.ENOSPC)
		assert.ErrorContains(t, err, full)
		for _, p := range []string{null, full} {
			st, err := os.Lstat(p)
			require.NoError(t, err)
			assert.Equal(t, os.ModeDevice|os.ModeCharDevice, st.Mode().Type(), "%s is still a character device", p)
		}
		entries, _ := os.ReadDir(dir)
		assert.Len(t, entries, 2, "no temporary file left")
	} else {
		t.Log("cannot make device nodes here (not root, or nodev): the FIFO cases only")
	}

	// A FIFO: the bytes go through it, and it stays a FIFO.
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	require.NoError(t, WriteBytes(fifo, []byte("through the pipe")))
	assert.Equal(t, "through the pipe", string(<-got))
	st, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, st.Mode().Type())
	entries, _ := os.ReadDir(filepath.Dir(fifo))
	assert.Len(t, entries, 1, "no temporary file left")

	// A FIFO whose reader has gone: the write's error is the error.
	broken := filepath.Join(t.TempDir(), "broken")
	require.NoError(t, syscall.Mkfifo(broken, 0o600))
	go func() {
		if f, err := os.Open(broken); err == nil {
			f.Close()
		}
	}()
	err = WriteBytes(broken, make([]byte, 1<<20))
	require.ErrorIs(t, err, syscall.EPIPE)
	assert.ErrorContains(t, err, broken)
}

// A symbolic link to a regular file: the file gets the new content, the
// link stays a link.
func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "snapshots", "host.snap")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "current.snap")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, WriteBytes(link, []byte("new")))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode().Type(), "still a link")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
}
