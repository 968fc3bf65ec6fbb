// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package main

import (
	"io"
	"os"
)

// isTerminal reports whether w is a character device, which is how a
// terminal looks without Linux's TCGETS (the progress bar is then drawn
// to /dev/null too, harmlessly).
func isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
