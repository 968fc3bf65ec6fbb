package ftrace

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/kxz"
	"github.com/klpresolve/klpresolve/kallsyms"
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
// decode gives its first n bytes (all of them when it is shorter; xz's
// decoded no further).
func bzImagePayload(name string, data []byte) (decode func(n int64) ([]byte, error), err error) {
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
			b, err := kxz.Decode(p, size, maxImage, n)
			if err != nil {
				return nil, payloadErr(err)
			}
			return b, nil
		}, nil
	case input.Zstd:
		whole = func() ([]byte, error) { b, _, err := input.Decompress(name, p[:n-4], maxImage); return b, err }
	case input.Gzip:
		whole = func() ([]byte, error) { b, _, err := input.Decompress(name, p, maxImage); return b, err }
	default:
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("a bzImage whose payload (starting % x) is compressed as klpresolve does not read (xz, zstd and gzip are read; not lz4, lzo, lzma or bzip2)", p[:min(6, len(p))])}
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

// headBytes is what bzImageSites decodes first: the ELF header and program
// headers of x86's vmlinux (a few hundred bytes) and room to spare.
const headBytes = 64 << 10

// bzImageSites reads the call sites of x86's bzImage: the program headers
// at the start of its payload and the symbols ix place the table, and the
// payload is decoded only as far as the table's end (61% of Debian's 66 MB
// 6.1 kernel).
func bzImageSites(name string, data []byte, ix *kallsyms.Index) (*Sites, error) {
	decode, err := bzImagePayload(name, data)
	if err != nil {
		return nil, err
	}
	head, err := decode(headBytes)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(head, []byte(elfMagic)) {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "its payload is not an ELF vmlinux"}
	}
	f, err := progHeaders(name, head)
	if err != nil {
		return nil, err
	}
	im := &image{f: f}
	t, err := im.table(name, ix)
	if err != nil {
		return nil, err
	}
	img, err := decode(int64(t.off + t.size))
	if err != nil {
		return nil, err
	}
	return im.sites(bytes.NewReader(img), name, ix, t)
}

// progHeaders is the ELF header and program headers at the start of
// vmlinux, b, whose section headers (at its end) are not at hand: all the
// table's place needs (its bounds are the kernel's symbols': the payload
// has none of its own).
func progHeaders(name string, b []byte) (*elf.File, error) {
	bad := func(msg string) error {
		return &Error{File: name, Err: ErrMalformed, Msg: "its payload's vmlinux: " + msg}
	}
	var h elf.Header64
	if len(b) < binary.Size(h) || b[elf.EI_CLASS] != byte(elf.ELFCLASS64) || b[elf.EI_DATA] != byte(elf.ELFDATA2LSB) {
		return nil, bad("not a little-endian 64-bit ELF file (x86_64's)")
	}
	le := binary.LittleEndian
	if _, err := binary.Decode(b, le, &h); err != nil {
		return nil, bad(err.Error())
	}
	f := &elf.File{FileHeader: elf.FileHeader{
		Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Version: elf.Version(b[elf.EI_VERSION]),
		ByteOrder: le, Type: elf.Type(h.Type), Machine: elf.Machine(h.Machine), Entry: h.Entry,
	}}
	var p elf.Prog64
	if h.Phentsize != uint16(binary.Size(p)) && h.Phnum > 0 {
		return nil, bad(fmt.Sprintf("program headers of %d bytes", h.Phentsize))
	}
	for i := range uint64(h.Phnum) {
		at := h.Phoff + i*uint64(binary.Size(p))
		if at > uint64(len(b)) || uint64(len(b))-at < uint64(binary.Size(p)) {
			return nil, bad(fmt.Sprintf("program header %d at %#x is past the first %d bytes", i, at, len(b)))
		}
		if _, err := binary.Decode(b[at:], le, &p); err != nil {
			return nil, bad(err.Error())
		}
		f.Progs = append(f.Progs, &elf.Prog{ProgHeader: elf.ProgHeader{
			Type: elf.ProgType(p.Type), Flags: elf.ProgFlag(p.Flags), Off: p.Off, Vaddr: p.Vaddr,
			Paddr: p.Paddr, Filesz: p.Filesz, Memsz: p.Memsz, Align: p.Align,
		}})
	}
	return f, nil
}
