// SPDX-License-Identifier: GPL-2.0-only

package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	require.NoError(t, WriteBytes(p, []byte("one")))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "one", string(b))

	// A failed write leaves the old content and no temporary file.
	boom := errors.New("boom")
	err = Write(p, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	require.ErrorIs(t, err, boom)
	b, _ = os.ReadFile(p)
	assert.Equal(t, "one", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1)
}

// NoSync writes the same file through the same rename, and leaves no
// temporary file behind.
func TestWriteNoSync(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	require.NoError(t, WriteBytes(p, []byte("old")))
	temps := &Temps{NoSync: true}
	require.NoError(t, temps.WriteBytes(p, []byte("new")))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1)
}

// Errors name the file asked for, not the temporary one.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	err := WriteBytes(dir, []byte("x"))
	assert.EqualError(t, err, "write "+dir+": is a folder")
	missing := filepath.Join(dir, "no", "out")
	err = WriteBytes(missing, []byte("x"))
	assert.EqualError(t, err, "write "+missing+": folder "+filepath.Join(dir, "no")+" does not exist")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)
}

// TestTempsCleanup: a signal handler's Cleanup removes the temporary file
// of a write in progress; the write fails, its target untouched, and a
// write that starts afterwards makes nothing.
func TestTempsCleanup(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	require.NoError(t, WriteBytes(p, []byte("old")))
	temps := &Temps{}
	err := temps.Write(p, func(w io.Writer) error {
		_, err := w.Write([]byte("new, half written"))
		ents, _ := os.ReadDir(dir)
		assert.Len(t, ents, 2, "the target and the temporary file")
		temps.Cleanup() // the signal arrives
		ents, _ = os.ReadDir(dir)
		assert.Len(t, ents, 1, "the temporary file is gone")
		return err
	})
	require.Error(t, err, "the rename finds no file")
	b, _ := os.ReadFile(p)
	assert.Equal(t, "old", string(b))

	err = temps.WriteBytes(p, []byte("later"))
	require.ErrorIs(t, err, errStopped)
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1)

	// A nil *Temps tracks nothing and writes as Write does.
	var none *Temps
	require.NoError(t, none.WriteBytes(p, []byte("nil")))
	none.Cleanup()
	b, _ = os.ReadFile(p)
	assert.Equal(t, "nil", string(b))
}

// TestTempsConcurrent: Cleanup from another goroutine while writes run
// (go test -race): each write either completes or leaves its target as
// it was, and no temporary file remains.
func TestTempsConcurrent(t *testing.T) {
	dir := t.TempDir()
	temps := &Temps{}
	ready, done := make(chan struct{}), make(chan int)
	for i := range 8 {
		go func() {
			p := filepath.Join(dir, "out"+string(rune('a'+i)))
			n := 0
			for ; ; n++ { // until Cleanup: every write after it fails
				if err := temps.WriteBytes(p, []byte("content")); err != nil {
					break
				}
				if n == 0 {
					ready <- struct{}{} // one write done: Cleanup meets the later ones
				}
			}
			done <- n
		}()
	}
	for range 8 {
		<-ready
	}
	temps.Cleanup()
	for range 8 {
		n := <-done
		assert.Positive(t, n)
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 8, "each target written, none replaced by a half")
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".tmp")
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		assert.Equal(t, "content", string(b))
	}
}

// TestTempsWatch: Watch runs once, before the first temporary file is
// made, however many writes follow or race; never for a write in place or
// for no write at all.
func TestTempsWatch(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	var seen []os.DirEntry
	temps := &Temps{Watch: func() {
		calls++
		seen, _ = os.ReadDir(dir)
	}}
	require.NoError(t, temps.WriteBytes(os.DevNull, []byte("x")))
	assert.Equal(t, 0, calls, "a device is written in place: no temporary file")

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, temps.WriteBytes(filepath.Join(dir, fmt.Sprint("out", i)), []byte("x")))
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, calls)
	assert.Empty(t, seen, "called before the first temporary file")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 8)
}
