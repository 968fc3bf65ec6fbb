// SPDX-License-Identifier: GPL-2.0-only

package kimage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz/lzma"

	"github.com/klpresolve/klpresolve/internal/input"
)

// The kernel's lz4 payload (scripts/Makefile.lib's cmd_lz4: lz4 -l) is in
// lz4's legacy frame format, which lib/decompress_unlz4.c reads: a magic,
// then chunks, each a little-endian 32-bit size and an LZ4 block that
// decodes to at most 8 MiB.
const (
	lz4LegacyMagic = 0x184C2102
	lz4LegacyChunk = 8 << 20
)

func isLZ4Legacy(p []byte) bool {
	return len(p) >= 4 && binary.LittleEndian.Uint32(p) == lz4LegacyMagic
}

// lz4Legacy decodes p's chunks, size bytes in all where the build says
// (size_append), at most limit.
func lz4Legacy(p []byte, size, limit int64) ([]byte, error) {
	out := make([]byte, 0, min(max(size, 0), limit, int64(len(p))*64))
	chunk := make([]byte, lz4LegacyChunk)
	for at := 4; at < len(p); {
		if len(p)-at < 4 {
			return nil, fmt.Errorf("lz4: a chunk's size cut off at %d", at)
		}
		n := int(binary.LittleEndian.Uint32(p[at:]))
		at += 4
		if n == lz4LegacyMagic {
			continue // a concatenated stream's magic
		}
		if n > len(p)-at {
			return nil, fmt.Errorf("lz4: a chunk of %d bytes at %d runs past the payload's %d", n, at, len(p))
		}
		k, err := lz4.UncompressBlock(p[at:at+n], chunk)
		if err != nil {
			return nil, fmt.Errorf("lz4: the chunk at %d: %w", at, err)
		}
		if int64(len(out)+k) > limit {
			return nil, fmt.Errorf("%w (%d bytes)", input.ErrTooLarge, limit)
		}
		out = append(out, chunk[:k]...)
		at += n
	}
	return out, nil
}

// isLZMAAlone: the .lzma ("alone") header cmd_lzma writes: properties
// byte 0x5d (lc 3, lp 0, pb 2), a power-of-two dictionary size.
func isLZMAAlone(p []byte) bool {
	if len(p) < 13 || p[0] != 0x5d {
		return false
	}
	d := binary.LittleEndian.Uint32(p[1:])
	return d >= 4096 && d&(d-1) == 0
}

// lzmaAlone decodes an .lzma stream, at most limit bytes.
func lzmaAlone(p []byte, size, limit int64) ([]byte, error) {
	r, err := lzma.NewReader(bytes.NewReader(p))
	if err != nil {
		return nil, fmt.Errorf("lzma: %w", err)
	}
	b, err := input.ReadAll(r, min(size, limit, int64(len(p))*64), limit)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("lzma: %w", err)
	}
	return b, err
}
