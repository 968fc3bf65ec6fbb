// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package kallsyms

import (
	"errors"
	"os"
)

func mapFile(f *os.File, size int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile(b []byte) {}

func mapAnon(size int) ([]byte, error) { return nil, errors.ErrUnsupported }
