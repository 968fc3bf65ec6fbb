// SPDX-License-Identifier: GPL-2.0-only

package cfi

import "errors"

var (
	// ErrOverlap: a module's text shares a page with a loaded module's
	// (add_module_to_shadow()'s "Each page must only contain one module").
	ErrOverlap = errors.New("module text overlaps a loaded module")
	// ErrDuplicate: a module of that name is already loaded.
	ErrDuplicate = errors.New("module already loaded")
	// ErrNoModule: Remove of a module that is not loaded.
	ErrNoModule = errors.New("no such module")
	// ErrBadRange: an empty or wrapping text range.
	ErrBadRange = errors.New("bad text range")
	// ErrClosed: the Set was closed.
	ErrClosed = errors.New("cfi shadow set closed")
	// ErrBadOptions: page size or slot count out of range.
	ErrBadOptions = errors.New("bad cfi options")
)
