package klp

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/modplt"
)

// Open of a named pipe that never ends (a /dev/zero behind it) is refused
// at its first bytes, by klp and by modplt, with ErrMalformed: before, it
// was read up to the 1 GiB module limit.
func TestOpenEndlessPipe(t *testing.T) {
	for _, open := range []func(string) error{
		func(p string) error { _, err := Open(p); return err },
		func(p string) error { _, err := modplt.Open(p); return err },
	} {
		fifo := filepath.Join(t.TempDir(), "patch.ko")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			zeros := make([]byte, 1<<16)
			for {
				if _, err := f.Write(zeros); err != nil {
					return
				}
			}
		}()
		err := open(fifo)
		require.ErrorIs(t, err, ErrMalformed)
		assert.EqualError(t, err, fifo+`: not an ELF file (no \x7fELF magic)`)
	}
}
