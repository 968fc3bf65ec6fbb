package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
