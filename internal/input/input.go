// SPDX-License-Identifier: GPL-2.0-only

// Package input opens the files klpresolve reads: a path, "-" for standard
// input, or an io.Reader, transparently decompressing gzip, zstd, xz and
// bzip2 (detected by their magic bytes, never by the file name).
package input

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/klpresolve/klpresolve/diag"
)

// Compression names the container format detected on an input.
type Compression string

// The compression formats that are recognised.
const (
	None  Compression = ""
	Gzip  Compression = "gzip"
	Zstd  Compression = "zstd"
	Xz    Compression = "xz"
	Bzip2 Compression = "bzip2"
)

// DefaultMaxSize caps how many bytes a decompressed input may grow to. A
// compressed file is small on disk, so its decompressed size is not
// justified by the file: a bomb must end as an error, not an OOM.
const DefaultMaxSize = 2 << 30

// ErrIsFolder is returned by Open and ReadFileChecked for a folder
// (os.ReadFile says "read X: is a directory", after opening it).
var ErrIsFolder = errors.New("a folder, not a file")

// statOpened tells an opened path's size when it is a regular file, and
// refuses a folder (ErrIsFolder). A Stat that fails tells nothing: the
// reads that follow say what is wrong.
func statOpened(path string, f *os.File) (size int64, regular bool, err error) {
	st, err := f.Stat()
	switch {
	case err != nil:
		return 0, false, nil
	case st.IsDir():
		return 0, false, fmt.Errorf("%s: %w", path, ErrIsFolder)
	}
	return st.Size(), st.Mode().IsRegular(), nil
}

// ErrTooLarge is returned when an input grows past its size limit
// (diag.ErrTooLarge).
var ErrTooLarge = diag.ErrTooLarge

// ErrCorrupt is wrapped by the error of a compressed input whose data does
// not decode (diag.ErrCorrupt).
var ErrCorrupt = diag.ErrCorrupt

// corruptError is a decoder's failure: "zstd: unexpected EOF".
type corruptError struct {
	c   Compression
	err error
}

func (e *corruptError) Error() string   { return string(e.c) + ": " + e.err.Error() }
func (e *corruptError) Unwrap() []error { return []error{ErrCorrupt, e.err} }

// corruptReader marks its decoder's read errors as corruptError.
type corruptReader struct {
	r io.Reader
	c Compression
}

func (r corruptReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = &corruptError{r.c, err}
	}
	return n, err
}

var (
	magicGzip = []byte{0x1f, 0x8b}
	magicZstd = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicXz   = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	// bzip2: "BZh", the block size digit, then the magic of the first
	// block or of the stream's end (an empty stream).
	magicBzip2      = []byte("BZh")
	magicBzip2Block = []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}
	magicBzip2End   = []byte{0x17, 0x72, 0x45, 0x38, 0x50, 0x90}
)

// detectLen is how many bytes Detect needs to tell every format apart.
const detectLen = 10

// Detect reports the compression of data from its first bytes.
func Detect(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, magicZstd):
		return Zstd
	case bytes.HasPrefix(head, magicXz):
		return Xz
	case bytes.HasPrefix(head, magicGzip):
		return Gzip
	case len(head) >= detectLen && bytes.HasPrefix(head, magicBzip2) && head[3] >= '1' && head[3] <= '9' &&
		(bytes.Equal(head[4:10], magicBzip2Block) || bytes.Equal(head[4:10], magicBzip2End)):
		// "BZh" could begin a text line: the block magic tells.
		return Bzip2
	}
	return None
}

// Source is an opened input: a reader over the decompressed bytes, what it
// was, and a size hint (the file size for a plain regular file, else 0).
type Source struct {
	io.Reader
	Name        string
	Compression Compression
	SizeHint    int64
	closer      io.Closer
	dec         *zstd.Decoder
}

// Close releases the file and any decoder.
func (s *Source) Close() error {
	if s.dec != nil {
		s.dec.Close()
	}
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// Open opens path ("-" is standard input) and wraps it in a decompressor
// when its magic bytes say so.
func Open(path string) (*Source, error) {
	if path == "-" {
		return Wrap("<stdin>", io.NopCloser(os.Stdin), 0)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var hint int64
	size, regular, err := statOpened(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if regular {
		hint = size
	}
	s, err := Wrap(path, f, hint)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Wrap detects the compression of r and returns a Source over its content.
// sizeHint is the raw size if known (0 if not).
func Wrap(name string, r io.ReadCloser, sizeHint int64) (*Source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(detectLen)
	s := &Source{Name: name, Compression: Detect(head), closer: r}
	switch s.Compression {
	case None:
		s.Reader, s.SizeHint = br, sizeHint
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, &corruptError{Gzip, err})
		}
		s.Reader = corruptReader{zr, Gzip}
	case Zstd:
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("%s: zstd: %w", name, err)
		}
		s.Reader, s.dec = corruptReader{d, Zstd}, d
	case Xz:
		xr, err := xz.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, &corruptError{Xz, err})
		}
		s.Reader = corruptReader{xr, Xz}
	case Bzip2:
		s.Reader = corruptReader{bzip2.NewReader(br), Bzip2}
	}
	return s, nil
}

// ReadAll reads r to the end. It presizes the buffer from hint and doubles
// it when it fills (growing by append costs more than parsing the data),
// and fails with ErrTooLarge past max bytes (max <= 0 means DefaultMaxSize).
func ReadAll(r io.Reader, hint, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxSize
	}
	size := int64(64 << 10)
	if hint > 0 {
		size = hint + 1 // one spare byte so the final read sees io.EOF without growing
	}
	if size > max+1 {
		size = max + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
			}
			n := int64(cap(buf)) * 2
			if n > max+1 {
				n = max + 1
			}
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Decompress returns data itself when it is not compressed, or its
// decompressed bytes (at most max of them) when its magic says gzip, zstd,
// xz or bzip2. name is used in errors.
func Decompress(name string, data []byte, max int64) ([]byte, Compression, error) {
	return DecompressSized(name, data, 0, max)
}

// DecompressSized is Decompress where the caller knows the decompressed
// size (size, 0 if not: a kernel image's build appends it after the
// payload, whose zstd frame does not say it): the output is made that
// size at once, not grown copy by copy. A size past max, or 64 times the
// input, is taken for a lie and not reserved.
func DecompressSized(name string, data []byte, size, max int64) ([]byte, Compression, error) {
	c := Detect(data)
	if c == None {
		return data, None, nil
	}
	if max <= 0 {
		max = DefaultMaxSize
	}
	hint := decompressedSize(c, data, max)
	if size > 0 && size <= max && size <= int64(len(data))*maxRatioHint {
		hint = size
	}
	if c == Zstd {
		return decodeZstd(name, data, hint, max)
	}
	src, err := Wrap(name, io.NopCloser(bytes.NewReader(data)), 0)
	if err != nil {
		return nil, c, err
	}
	defer src.Close()
	out, err := ReadAll(src, hint, max)
	if err != nil {
		return nil, c, fmt.Errorf("%s: %w", name, err)
	}
	return out, c, nil
}

// maxRatioHint bounds the size a compressed input's header may make
// Decompress reserve, as a multiple of the input: a header may lie, and
// a larger output (zstd of long runs) grows the buffer as it comes.
// Modules and symbol lists compress 4-17x.
const maxRatioHint = 64

// decompressedSize is the size data's header gives for its contents (0
// when it gives none): zstd's Frame_Content_Size (of the first frame;
// zstd(1) and the kernel's build write it), gzip's ISIZE (the size
// modulo 2^32, of the last member), bounded by max and maxRatioHint.
func decompressedSize(c Compression, data []byte, max int64) int64 {
	var n int64
	switch c {
	case Zstd:
		var h zstd.Header
		if h.Decode(data) == nil && h.HasFCS {
			n = int64(min(h.FrameContentSize, uint64(max)+1))
		}
	case Gzip:
		if len(data) >= 18 { // a header and a trailer
			n = int64(binary.LittleEndian.Uint32(data[len(data)-4:]))
		}
	}
	return min(n, max, int64(len(data))*maxRatioHint)
}

// decodeZstd decodes a whole zstd input into one buffer of hint bytes
// (grown if the frames hold more): DecodeAll writes frames straight into
// it, where a streaming decoder keeps a window of history besides (2.7
// MB of allocation for a 2.5 MB module).
func decodeZstd(name string, data []byte, hint, max int64) ([]byte, Compression, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max)))
	if err != nil {
		return nil, Zstd, fmt.Errorf("%s: zstd: %w", name, err)
	}
	defer d.Close()
	out, err := d.DecodeAll(data, make([]byte, 0, hint))
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrFrameSizeExceeded):
		return nil, Zstd, fmt.Errorf("%s: %w (%d bytes)", name, ErrTooLarge, max)
	case err != nil:
		return nil, Zstd, fmt.Errorf("%s: %w", name, &corruptError{Zstd, err})
	case int64(len(out)) > max:
		return nil, Zstd, fmt.Errorf("%s: %w (%d bytes)", name, ErrTooLarge, max)
	}
	return out, Zstd, nil
}

// headLen is how much of a stream ReadFileChecked and ReadAllChecked show
// their check: enough for every magic and a line of text.
const headLen = 256

// ReadFileChecked reads path whole, for a file whose first bytes say what
// it is (an object file's magic): when path is not a regular file (a pipe, a
// device), its first bytes (all of them when it is shorter) go to check,
// with path, before the rest is read, and an error from check is returned, so that
// /dev/zero or a disk given by mistake is refused at once instead of read
// up to max. A regular file's size is known, and bounded, before it is
// read; check sees nothing of it (its parser does).
func ReadFileChecked(path string, max int64, check func(name string, head []byte) error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, regular, err := statOpened(path, f)
	if err != nil {
		return nil, err
	}
	if regular {
		// Refused past max before anything is read: a vmlinux or a disk
		// image given by mistake is not read into memory first.
		if size > max {
			return nil, fmt.Errorf("%s: %w (%d bytes, more than %d)", path, ErrTooLarge, size, max)
		}
		data, err := ReadAll(f, size, max)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return data, nil
	}
	return ReadAllChecked(path, f, max, check)
}

// ReadAllChecked is ReadAll of a stream, name, whose first bytes go to
// check first (see ReadFileChecked). check's error is returned as it is
// (it names the input itself); the others are prefixed with name.
func ReadAllChecked(name string, r io.Reader, max int64, check func(name string, head []byte) error) ([]byte, error) {
	head := make([]byte, headLen)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return head, check(name, head)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := check(name, head); err != nil {
		return nil, err
	}
	rest, err := ReadAll(r, 0, max-int64(n))
	switch {
	case errors.Is(err, ErrTooLarge): // the limit of the whole, not of the rest
		return nil, fmt.Errorf("%s: %w (%d bytes)", name, ErrTooLarge, max)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return append(head, rest...), nil
}

// ReadAt reads size bytes from r, refusing a size past max before
// allocating anything. name is used in errors. A reader that ends before
// size bytes is an error (io.ErrUnexpectedEOF), not a buffer padded with
// zeros.
func ReadAt(name string, r io.ReaderAt, size, max int64) ([]byte, error) {
	if size > max {
		return nil, fmt.Errorf("%s: %w: size %d, more than %d", name, ErrTooLarge, size, max)
	}
	if size < 0 {
		return nil, fmt.Errorf("%s: size %d out of range (0 to %d)", name, size, max)
	}
	data := make([]byte, size)
	n, err := r.ReadAt(data, 0)
	switch {
	case int64(n) == size: // io.ReaderAt may say io.EOF with the last byte
	case err == nil || err == io.EOF:
		return nil, fmt.Errorf("%s: %w: %d of %d bytes", name, io.ErrUnexpectedEOF, n, size)
	default:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// Lines yields data's lines, numbered from 1, without their "\n" (a last
// line without one too): what the line-based parsers (a kernel
// configuration, Module.symvers, tracefs's lists) read in order to name
// a bad line in their errors.
func Lines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !yield(n, line) {
				return
			}
		}
	}
}
