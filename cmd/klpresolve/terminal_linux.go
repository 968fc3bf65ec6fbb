// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"io"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal (it answers TCGETS).
func isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
