// SPDX-License-Identifier: GPL-2.0-only

// Package kimage recognises a Linux kernel image by its content and gives
// the bytes of the vmlinux it carries: x86's bzImage (its compressed
// payload, vmlinux.bin), arm64's Image (vmlinux's loaded bytes from
// _text) and its EFI zboot form (a compressed Image), and vmlinux itself
// (ELF). The callers find what they need in those bytes: ftrace its
// call-site table, kallsyms the kernel's symbol tables.
package kimage

import (
	"bytes"
	"errors"
	"fmt"
)

// Kind is the form of a kernel image.
type Kind string

// The forms Detect tells apart.
const (
	None    Kind = ""
	BzImage Kind = "bzImage"     // x86's compressed kernel (/boot/vmlinuz)
	ARM64   Kind = "arm64 Image" // arm64's Image (Debian's /boot/vmlinuz)
	ZBoot   Kind = "EFI zboot"   // an EFI zboot image: a compressed Image
	ELF     Kind = "vmlinux"     // vmlinux, an ELF file
)

var (
	// ErrMalformed: the input is an image of a known form, but its
	// headers or payload are broken.
	ErrMalformed = errors.New("malformed kernel image")
	// ErrUnsupported: an image of a form, or compressed in a way, that
	// this package does not read.
	ErrUnsupported = errors.New("unsupported kernel image")
)

// Error is a problem with one image file.
type Error struct {
	File string
	Err  error // ErrMalformed or ErrUnsupported
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v: %s", e.File, e.Err, e.Msg) }

// Unwrap makes errors.Is(err, ErrMalformed) (etc.) true.
func (e *Error) Unwrap() error { return e.Err }

// HeadLen is how many bytes of a file Detect needs to tell every form.
const HeadLen = 1024

// MaxImage bounds a decompressed kernel image: Debian's amd64 vmlinux.bin
// is 58-66 MB, its arm64 Image 37-48 MB.
const MaxImage = 1 << 30

const elfMagic = "\x7fELF"

// Detect tells the form of an image from its first bytes (HeadLen, or
// the whole file when shorter). A compressed file is None: its
// decompressed bytes tell.
func Detect(head []byte) Kind {
	switch {
	case IsZBoot(head): // before bzImage and Image: it has an "MZ" header too
		return ZBoot
	case IsBzImage(head):
		return BzImage
	case IsARM64Image(head):
		return ARM64
	case isKernelELF(head):
		return ELF
	}
	return None
}

// isKernelELF: an ELF executable or shared object (vmlinux is ET_EXEC,
// or ET_DYN where relocatable), not a relocatable object (a module).
func isKernelELF(head []byte) bool {
	if len(head) < 18 || !bytes.HasPrefix(head, []byte(elfMagic)) {
		return false
	}
	t := uint16(head[16]) | uint16(head[17])<<8
	if head[5] == 2 { // ELFDATA2MSB
		t = t>>8 | t<<8
	}
	return t == 2 || t == 3 // ET_EXEC, ET_DYN
}

// Vmlinux gives the vmlinux bytes of image data, whose form is kind
// (Detect's): a bzImage's payload decompressed whole (an ELF file), a
// zboot image's payload decompressed (an arm64 Image), an Image or an ELF
// file as they are. name is used in errors. Decompressed bytes are at
// most MaxImage.
func Vmlinux(name string, data []byte) (Kind, []byte, error) {
	switch kind := Detect(data[:min(len(data), HeadLen)]); kind {
	case BzImage:
		decode, err := BzImagePayload(name, data)
		if err != nil {
			return kind, nil, err
		}
		b, err := decode(MaxImage)
		return kind, b, err
	case ZBoot:
		b, err := zbootPayload(name, data)
		return kind, b, err
	case ARM64, ELF:
		return kind, data, nil
	default:
		return None, nil, &Error{File: name, Err: ErrUnsupported, Msg: "not a kernel image (bzImage, arm64 Image, EFI zboot or vmlinux ELF)"}
	}
}
