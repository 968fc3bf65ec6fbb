// SPDX-License-Identifier: GPL-2.0-only

package testutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// EndlessFIFO makes a named pipe called name in a temporary folder and a
// writer that sends zeros into it until its reader goes: /dev/zero behind
// a path that is no device, for tests of readers that must stop early.
func EndlessFIFO(t *testing.T, name string) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		zeros := make([]byte, 1<<16)
		for {
			if _, err := f.Write(zeros); err != nil { // the reader went
				return
			}
		}
	}()
	return fifo
}
