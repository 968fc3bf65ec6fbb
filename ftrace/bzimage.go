// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// headBytes is what bzImageSites decodes first: the ELF header and program
// headers of x86's vmlinux (a few hundred bytes) and room to spare.
const headBytes = 64 << 10

// bzImageSites reads the call sites of x86's bzImage: the program headers
// at the start of its payload and the symbols ix place the table, and the
// payload is decoded only as far as the table's end (61% of Debian's 66 MB
// 6.1 kernel).
func bzImageSites(name string, data []byte, ix *kallsyms.Index) (*Sites, error) {
	decode, err := kimage.BzImagePayload(name, data)
	if err != nil {
		return nil, imageError(err)
	}
	head, err := decode(headBytes)
	if err != nil {
		return nil, imageError(err)
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
		return nil, imageError(err)
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

// imageError is kimage's error as this package's: ErrUnsupported for an
// image it cannot read, else ErrMalformed, with kimage's words.
func imageError(err error) error {
	var e *kimage.Error
	if !errors.As(err, &e) {
		return err
	}
	kind := ErrMalformed
	if errors.Is(e.Err, kimage.ErrUnsupported) {
		kind = ErrUnsupported
	}
	return &Error{File: e.File, Err: kind, Msg: e.Msg}
}
