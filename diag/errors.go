// SPDX-License-Identifier: GPL-2.0-only

// Package diag holds what klpresolve's packages report bad input with:
// the sentinel errors every package wraps (errors.Is finds them whichever
// package returned the error) and FormatError, which says in which file
// and section the problem is (errors.As finds it).
//
// Diagnostic is the one model of what a check found (Kind, Severity,
// Location, the kernel's message, help); pipeline.Report.Diagnostics lists
// a check's in the loader's order.
//
// It imports nothing of klpresolve's, so every other package, internal
// ones included, may use it.
package diag

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is wrapped by every error about a malformed ELF object
	// (a *FormatError says which file and section).
	ErrMalformed = errors.New("malformed ELF")
	// ErrTooLarge: an input, decompressed, is larger than its limit
	// (docs/limits.md lists them).
	ErrTooLarge = errors.New("input larger than the limit")
	// ErrCorrupt is wrapped by the error of a compressed input whose data
	// does not decode: cut short, damaged, or not what its magic bytes
	// say. The decoder's own error is wrapped too (io.ErrUnexpectedEOF
	// for a cut one).
	ErrCorrupt = errors.New("corrupt compressed data")
	// ErrMalformedConfig is wrapped by the error for a kernel
	// configuration line that is none of the forms the kernel's
	// confdata.c writes.
	ErrMalformedConfig = errors.New("malformed kernel configuration")
)

// FormatError says what is wrong with a file, and where. It wraps
// ErrMalformed.
type FormatError struct {
	File    string
	Section string // "" when the problem is not in one section
	Msg     string
}

func (e *FormatError) Error() string {
	if e.Section != "" {
		return fmt.Sprintf("%s: section %s: %s", e.File, e.Section, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *FormatError) Unwrap() error { return ErrMalformed }
