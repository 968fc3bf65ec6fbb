// SPDX-License-Identifier: GPL-2.0-only

package kimage

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/input"
)

// The EFI zboot header (drivers/firmware/efi/libstub/zboot-header.S): an
// "MZ" DOS header whose image type is "zimg", then where the compressed
// payload is and how it is compressed (Makefile.zboot's comp-type).
const (
	zbootType    = 4  // "zimg"
	zbootOffset  = 8  // payload offset from the start of the file
	zbootSize    = 12 // payload size, without the size the build appends
	zbootComp    = 24 // compression type, a NUL-terminated name
	zbootHeadLen = 56
)

// IsZBoot: an EFI zboot image's header.
func IsZBoot(head []byte) bool {
	return len(head) >= zbootHeadLen && head[0] == 'M' && head[1] == 'Z' && string(head[zbootType:zbootType+4]) == "zimg"
}

// zbootPayload decompresses a zboot image's payload: arm64's (or
// another architecture's) Image. gzip, zstd ("zstd22") and xz without a
// branch filter are read.
func zbootPayload(name string, data []byte) ([]byte, error) {
	le := binary.LittleEndian
	off, size := uint64(le.Uint32(data[zbootOffset:])), uint64(le.Uint32(data[zbootSize:]))
	comp, _, _ := bytes.Cut(data[zbootComp:zbootHeadLen], []byte{0})
	if off+size > uint64(len(data)) || size < 8 {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("its zboot payload (%d bytes at %#x) is not within the file's %d bytes", size, off, len(data))}
	}
	p := data[off : off+size]
	switch string(comp) {
	case "gzip", "zstd", "zstd22", "xzkern":
	default:
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("a zboot image compressed with %q (gzip, zstd and xz are read)", comp)}
	}
	b, _, err := input.Decompress(name, p, MaxImage)
	if err != nil {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "its zboot payload: " + err.Error()}
	}
	if !IsARM64Image(b) && !bytes.HasPrefix(b, []byte(elfMagic)) {
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: "its zboot payload is not an arm64 Image"}
	}
	return b, nil
}
