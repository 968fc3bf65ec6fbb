package input

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A named pipe is a stream: its first bytes go to the check, and a
// refusal ends the read there, whatever the writer still has to send.
func TestReadFileCheckedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		buf := make([]byte, 1<<16)
		for {
			if _, err := f.Write(buf); err != nil { // until the reader goes
				return
			}
		}
	}()
	refuse := errors.New("zeros are no module")
	_, err := ReadFileChecked(fifo, DefaultMaxSize, func([]byte) error { return refuse })
	require.Equal(t, refuse, err, "returned as it is")
}
