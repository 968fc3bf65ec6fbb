// SPDX-License-Identifier: GPL-2.0-only

// Package kxz decodes the xz streams the kernel's build compresses x86's
// bzImage payload with (scripts/xz_wrap.sh: xz --check=crc32 --x86
// --lzma2): one block, whose filters are x86's branch converter (BCJ) and
// LZMA2. github.com/ulikunitz/xz decodes LZMA2 but no BCJ filter; this
// package reads the container and undoes the filter.
package kxz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ulikunitz/xz/lzma"

	"github.com/klpresolve/klpresolve/internal/hugepage"
)

// ErrFormat: the input is not an xz stream this package reads.
var ErrFormat = errors.New("not a kernel xz stream")

// Filter IDs (the xz file format, 5.3.1).
const (
	filterX86   = 0x04
	filterLZMA2 = 0x21
)

// maxDict bounds the dictionary the decoder allocates, whatever the
// stream asks for: the kernel's build uses 32 MiB (xz_wrap.sh).
const maxDict = 64 << 20

// open reads data's stream and block headers and
// returns the LZMA2 decoder of its block and whether the x86 filter is to
// be undone.
func open(data []byte, size, limit int64) (io.Reader, bool, error) {
	// Stream header: magic, flags, CRC32 of the flags.
	if len(data) < 12 || !bytes.HasPrefix(data, []byte("\xfd7zXZ\x00")) {
		return nil, false, fmt.Errorf("%w: no xz magic", ErrFormat)
	}
	if crc32.ChecksumIEEE(data[6:8]) != binary.LittleEndian.Uint32(data[8:12]) {
		return nil, false, fmt.Errorf("%w: the stream header's checksum does not match", ErrFormat)
	}
	rest := data[12:]
	// Block header: size/4-1, flags, [sizes], filter flags, padding, CRC32.
	if len(rest) < 1 || rest[0] == 0 {
		return nil, false, fmt.Errorf("%w: no block", ErrFormat)
	}
	hsize := (int(rest[0]) + 1) * 4
	if len(rest) < hsize {
		return nil, false, fmt.Errorf("%w: the block header is cut off", ErrFormat)
	}
	hdr := rest[:hsize]
	if crc32.ChecksumIEEE(hdr[:hsize-4]) != binary.LittleEndian.Uint32(hdr[hsize-4:]) {
		return nil, false, fmt.Errorf("%w: the block header's checksum does not match", ErrFormat)
	}
	flags := hdr[1]
	nfilters := int(flags&3) + 1
	p := hdr[2 : hsize-4]
	// Compressed and uncompressed sizes, if present: multibyte integers.
	for _, bit := range []byte{0x40, 0x80} {
		if flags&bit != 0 {
			_, n := binary.Uvarint(p)
			if n <= 0 {
				return nil, false, fmt.Errorf("%w: a bad size in the block header", ErrFormat)
			}
			p = p[n:]
		}
	}
	x86, dict := false, int64(-1)
	for i := range nfilters {
		id, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, false, fmt.Errorf("%w: a bad filter ID", ErrFormat)
		}
		p = p[n:]
		psize, n := binary.Uvarint(p)
		if n <= 0 || uint64(len(p)-n) < psize {
			return nil, false, fmt.Errorf("%w: bad filter properties", ErrFormat)
		}
		props := p[n : n+int(psize)]
		p = p[n+int(psize):]
		switch {
		case id == filterX86 && i < nfilters-1 && psize == 0:
			x86 = true
		case id == filterLZMA2 && i == nfilters-1 && psize == 1 && props[0] <= 40:
			dict = dictSize(props[0])
		default:
			return nil, false, fmt.Errorf("%w: filter %#x (%d bytes of properties) at position %d: only x86 BCJ (without a start offset) before LZMA2 is read", ErrFormat, id, psize, i+1)
		}
	}
	if dict < 0 {
		return nil, false, fmt.Errorf("%w: no LZMA2 filter", ErrFormat)
	}
	// The dictionary need not exceed what is decoded: a small stream
	// that asks for a large one allocates no more than it can fill.
	out := limit
	if size > 0 && size < limit {
		out = size
	}
	r, err := lzma.Reader2Config{DictCap: int(max(4096, min(dict, maxDict, out)))}.NewReader2(bytes.NewReader(rest[hsize:]))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return r, x86, nil
}

// Decode decodes the first n bytes of data, an xz stream of one block
// with at most the x86 BCJ filter before LZMA2 (all of it when it is
// shorter; trailing bytes, such as the kernel's appended size, are
// left), and nothing past them: a reader that needs only the start of a
// kernel (its headers, a table at a known offset) is spared the time of
// the rest. size, if not 0, is the decoded size the kernel appends: the
// stream must have it, and it presizes the output. More than limit bytes
// is an error.
func Decode(data []byte, size, limit, n int64) ([]byte, error) {
	r, x86, err := open(data, size, limit)
	if err != nil {
		return nil, err
	}
	// The filter's decision at a byte looks up to 4 bytes past it (a
	// branch's displacement): those are decoded, undone and dropped.
	want := max(n, 0) + 4
	if size > 0 {
		want = min(want, size)
	}
	var buf []byte
	if want <= limit && size > 0 {
		// Presized, within the size recorded, in huge pages (a fault
		// per 4 KiB of 40 MB cost a third of the decode's time).
		buf = make([]byte, want)
		hugepage.Advise(buf)
		got, err := io.ReadFull(r, buf)
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return nil, fmt.Errorf("%w: the stream ends after %d bytes; its recorded size is %d", ErrFormat, got, size)
		} else if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	} else {
		var out bytes.Buffer
		if _, err := io.Copy(&out, io.LimitReader(r, min(want, limit+1))); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if buf = out.Bytes(); int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes decoded", ErrFormat, limit)
		}
	}
	if x86 {
		unX86(buf)
	}
	return buf[:min(int64(len(buf)), max(n, 0))], nil
}

// dictSize is LZMA2's dictionary size property (the xz file format,
// 5.3.1): 2 or 3 times a power of two, from 4 KiB; 40 means 4 GiB - 1.
func dictSize(b byte) int64 {
	if b == 40 {
		return 1<<32 - 1
	}
	return (2 | int64(b&1)) << (b/2 + 11)
}

// unX86 undoes x86's BCJ filter over a whole stream, in place (as xz's
// simple/x86.c decodes, from position 0): the encoder made the 32-bit
// displacement of each CALL (E8) and JMP (E9) that looked like a near
// branch absolute, to compress better; the decoder makes it relative
// again. prevMask remembers which of the last three bytes were E8/E9, so
// that the decoder takes exactly the candidates the encoder took.
func unX86(buf []byte) {
	allowed := [8]bool{true, true, true, false, true, false, false, false}
	bitNum := [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
	// A displacement's high byte is 00 or FF for a branch within 16 MiB.
	msb := func(b byte) bool { return b == 0x00 || b == 0xff }
	if len(buf) <= 4 {
		return
	}
	end := len(buf) - 4
	prevPos, prevMask := -1, uint32(0)
	for i := 0; i < end; i++ {
		if buf[i]&0xfe != 0xe8 {
			continue
		}
		if d := i - prevPos; d > 3 {
			prevMask = 0
		} else {
			prevMask = (prevMask << (d - 1)) & 7
			if prevMask != 0 {
				b := buf[i+4-int(bitNum[prevMask])]
				if !allowed[prevMask] || msb(b) {
					prevPos, prevMask = i, prevMask<<1|1
					continue
				}
			}
		}
		prevPos = i
		if !msb(buf[i+4]) {
			prevMask = prevMask<<1 | 1
			continue
		}
		src := binary.LittleEndian.Uint32(buf[i+1:])
		var dest uint32
		for {
			dest = src - uint32(i+5)
			if prevMask == 0 {
				break
			}
			j := bitNum[prevMask] * 8
			if !msb(byte(dest >> (24 - j))) {
				break
			}
			src = dest ^ (1<<(32-j) - 1)
		}
		// Sign-extend from bit 24: the high byte is all 0s or all 1s.
		dest &= 0x01ffffff
		dest |= -(dest & 0x01000000)
		binary.LittleEndian.PutUint32(buf[i+1:], dest)
		i += 4
	}
}
