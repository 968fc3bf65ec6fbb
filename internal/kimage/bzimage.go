// SPDX-License-Identifier: GPL-2.0-only

package kimage

import (
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/kxz"
)

// x86's setup header (arch/x86/boot/header.S; Documentation/arch/x86/boot.rst).
const (
	hdrSetupSects    = 0x1f1 // 512-byte setup sectors after the boot sector (0: 4)
	hdrMagic         = 0x202 // "HdrS"
	hdrVersion       = 0x206 // boot protocol version
	hdrPayloadOffset = 0x248 // from 2.08: the payload, from the protected-mode code
	hdrPayloadLength = 0x24c
	hdrEnd           = 0x250
)

// IsBzImage: x86's boot protocol header ("HdrS" at 0x202).
func IsBzImage(head []byte) bool {
	return len(head) >= hdrMagic+4 && string(head[hdrMagic:hdrMagic+4]) == "HdrS"
}

// BzImagePayload is the vmlinux inside an x86 bzImage (/boot/vmlinuz):
// its payload (boot protocol 2.08 and later) is vmlinux.bin, the kernel's
// ELF with its symbols stripped (objcopy -S), compressed as the build
// chose (CONFIG_KERNEL_*): xz with the x86 BCJ filter (Debian's 6.1),
// zstd (Debian's 6.12 and 7.x), gzip, lz4 (legacy frames: Ubuntu's
// older kernels), lzma or bzip2, all but gzip's followed by the
// decompressed size (size_append). decode gives its first n bytes (all of
// them when it is shorter; xz's decoded no further).
func BzImagePayload(name string, data []byte) (decode func(n int64) ([]byte, error), err error) {
	if len(data) < hdrEnd {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "a bzImage header cut off"}
	}
	if v := binary.LittleEndian.Uint16(data[hdrVersion:]); v < 0x208 {
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("a bzImage of boot protocol %d.%02d, which does not say where its payload is (2.08 does)", v>>8, v&0xff)}
	}
	sects := int(data[hdrSetupSects])
	if sects == 0 {
		sects = 4
	}
	off := uint64(sects+1)*512 + uint64(binary.LittleEndian.Uint32(data[hdrPayloadOffset:]))
	n := uint64(binary.LittleEndian.Uint32(data[hdrPayloadLength:]))
	if off+n > uint64(len(data)) || n < 8 {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("its payload (%d bytes at %#x) is not within the file's %d bytes", n, off, len(data))}
	}
	p := data[off : off+n]
	size := int64(binary.LittleEndian.Uint32(p[n-4:])) // size_append's, for xz and zstd
	payloadErr := func(err error) error {
		return &Error{File: name, Err: ErrMalformed, Msg: "its payload: " + err.Error()}
	}
	var whole func() ([]byte, error)
	switch input.Detect(p) {
	case input.Xz:
		return func(n int64) ([]byte, error) {
			b, err := kxz.Decode(p, size, MaxImage, n)
			if err != nil {
				return nil, payloadErr(err)
			}
			return b, nil
		}, nil
	case input.Zstd:
		whole = func() ([]byte, error) {
			b, _, err := input.DecompressSized(name, p[:n-4], size, MaxImage)
			return b, err
		}
	case input.Gzip:
		whole = func() ([]byte, error) { b, _, err := input.Decompress(name, p, MaxImage); return b, err }
	case input.Bzip2:
		whole = func() ([]byte, error) {
			b, _, err := input.DecompressSized(name, p[:n-4], size, MaxImage)
			return b, err
		}
	default:
		switch {
		case isLZ4Legacy(p):
			whole = func() ([]byte, error) { return lz4Legacy(p[:n-4], size, MaxImage) }
		case isLZMAAlone(p):
			whole = func() ([]byte, error) { return lzmaAlone(p[:n-4], size, MaxImage) }
		default:
			return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("a bzImage whose payload (starting % x) is compressed as klpresolve does not read (xz, zstd, gzip, lz4, lzma and bzip2 are read; not lzo)", p[:min(6, len(p))])}
		}
	}
	// zstd and gzip decode fast: whole, once.
	var img []byte
	return func(n int64) ([]byte, error) {
		if img == nil {
			b, err := whole()
			if err != nil {
				return nil, payloadErr(err)
			}
			img = b
		}
		return img[:min(n, int64(len(img)))], nil
	}, nil
}

// BzImageOf wraps payload as x86's bzImage carries it, for tests: a boot
// sector and one setup sector (setup_sects 1), the setup header (boot
// protocol 2.15) pointing past 16 bytes of protected-mode code at the
// payload.
func BzImageOf(payload []byte) []byte {
	b := make([]byte, 1024+16)
	copy(b, "MZ")
	b[hdrSetupSects] = 1
	copy(b[hdrMagic:], "HdrS")
	binary.LittleEndian.PutUint16(b[hdrVersion:], 0x20f)
	binary.LittleEndian.PutUint32(b[hdrPayloadOffset:], 16)
	binary.LittleEndian.PutUint32(b[hdrPayloadLength:], uint32(len(payload)))
	return append(b, payload...)
}
