package ftrace

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/kxz"
)

// x86's setup header (arch/x86/boot/header.S; Documentation/x86/boot.rst).
const (
	hdrSetupSects    = 0x1f1 // 512-byte setup sectors after the boot sector (0: 4)
	hdrMagic         = 0x202 // "HdrS"
	hdrVersion       = 0x206 // boot protocol version
	hdrPayloadOffset = 0x248 // from 2.08: the payload, from the protected-mode code
	hdrPayloadLength = 0x24c
	hdrEnd           = 0x250
)

// maxImage bounds a decompressed kernel image: Debian's amd64 vmlinux.bin
// is 66 MB.
const maxImage = 1 << 30

// isBzImage: x86's boot protocol header ("HdrS" at 0x202).
func isBzImage(head []byte) bool {
	return len(head) >= hdrMagic+4 && string(head[hdrMagic:hdrMagic+4]) == "HdrS"
}

// bzImagePayload is the vmlinux inside an x86 bzImage (/boot/vmlinuz): its
// payload (boot protocol 2.08 and later) is vmlinux.bin, the kernel's ELF
// with its symbols stripped (objcopy -S), compressed as the build chose
// (CONFIG_KERNEL_*): xz with the x86 BCJ filter (Debian's), zstd or gzip,
// xz's and zstd's followed by the decompressed size (size_append).
func bzImagePayload(name string, data []byte) ([]byte, error) {
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
	var elf []byte
	var err error
	switch input.Detect(p) {
	case input.Xz:
		elf, err = kxz.Decode(p, size, maxImage)
	case input.Zstd:
		elf, _, err = input.Decompress(name, p[:n-4], maxImage)
	case input.Gzip:
		elf, _, err = input.Decompress(name, p, maxImage)
	default:
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("a bzImage whose payload (starting % x) is compressed as klpresolve does not read (xz, zstd and gzip are read; not lz4, lzo, lzma or bzip2)", p[:min(6, len(p))])}
	}
	if err != nil {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "its payload: " + err.Error()}
	}
	if !bytes.HasPrefix(elf, []byte(elfMagic)) {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "its payload is not an ELF vmlinux"}
	}
	return elf, nil
}
