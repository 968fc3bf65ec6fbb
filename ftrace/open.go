// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bytes"
	"io"
	"os"

	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Open reads the call sites at path against the kernel's symbols ix: a
// kernel image (vmlinux, plain or gzip/zstd/xz/bzip2 compressed, as
// SUSE's /boot/vmlinux-RELEASE.gz, or arm64's Image, as Debian's
// /boot/vmlinuz, or compressed, as Image.gz; NewImage), x86's compressed kernel
// (a bzImage, /boot/vmlinuz-RELEASE, whose payload is the vmlinux without
// its symbols: xz, zstd or gzip) or a copy of tracefs's
// available_filter_functions_addrs or available_filter_functions
// (ParseTracefs), told apart by their first bytes.
func Open(path string, ix *kallsyms.Index) (*Sites, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &Error{File: path, Err: ErrMalformed, Msg: input.ErrIsFolder.Error()}
	}
	head := make([]byte, 1024)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, &Error{File: path, Err: ErrMalformed, Msg: err.Error()}
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte(elfMagic)) || kimage.IsARM64Image(head):
		return NewImage(path, f, ix)
	case kimage.IsBzImage(head):
		// A compressed kernel: read whole (Debian's amd64 vmlinuz is 8
		// MB), decompressed as far as the call-site table (1.5 s for
		// Debian's xz).
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		raw, err := input.ReadAll(f, 0, kimage.MaxImage)
		if err != nil {
			return nil, &Error{File: path, Err: ErrMalformed, Msg: err.Error()}
		}
		return bzImageSites(path, raw, ix)
	case input.Detect(head) != input.None:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		raw, err := input.ReadAll(f, 0, input.DefaultMaxSize)
		if err != nil {
			return nil, &Error{File: path, Err: ErrMalformed, Msg: err.Error()}
		}
		data, _, err := input.Decompress(path, raw, input.DefaultMaxSize)
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(data, []byte(elfMagic)) || kimage.IsARM64Image(data) {
			return NewImage(path, bytes.NewReader(data), ix)
		}
		return parseTracefs(data, path, ix)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return ParseTracefs(path, f, ix)
}

const elfMagic = "\x7fELF"
