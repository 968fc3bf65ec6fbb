// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"errors"

	"github.com/klpresolve/klpresolve/diag"
)

var (
	// ErrMalformed is wrapped by every error about a malformed file
	// (errors.Is finds it); the error's text names the file and the
	// section.
	// errors.As finds a *diag.FormatError with the file and section.
	ErrMalformed = diag.ErrMalformed
	// ErrTooLarge: the module, decompressed, is larger than 1 GiB.
	ErrTooLarge = diag.ErrTooLarge
	// ErrCorrupt: a compressed module whose data does not decode: cut short
	// (the decoder's io.ErrUnexpectedEOF is wrapped too) or damaged.
	ErrCorrupt = diag.ErrCorrupt
	// ErrUnsupportedArch is returned for a module of an architecture
	// modplt does not link (it names the machine).
	ErrUnsupportedArch = errors.New("unsupported architecture")
	// ErrNotRelocatable is returned for an ELF file that is not ET_REL.
	ErrNotRelocatable = errors.New("not a relocatable object")
	// ErrBadBase is returned by Link for a load address (LinkOptions.Base,
	// InitBase) that module_alloc() could not return: not on a page, or a
	// region that would run past the end of the address space.
	ErrBadBase = errors.New("bad load address")
	// ErrBadPageSize is returned by Link for a LinkOptions.PageSize the
	// architecture's kernels do not have.
	ErrBadPageSize = errors.New("bad page size")
)
