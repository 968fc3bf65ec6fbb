// SPDX-License-Identifier: GPL-2.0-only

package input

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"
)

const example = "../../testdata/kallsyms/example.txt"

func TestDetect(t *testing.T) {
	for head, want := range map[string]Compression{
		"\x1f\x8b\x08\x00":                 Gzip,
		"\x28\xb5\x2f\xfd\x00":             Zstd,
		"\xfd7zXZ\x00\x00":                 Xz,
		"BZh91AY&SY\x00\x00":               Bzip2,
		"BZh1\x17rE8P\x90\x00\x00\x00\x00": Bzip2, // empty stream
		"BZh91AY&S":                        None,  // too short to tell
		"BZh9 not bzip2 at all":            None,
		"BZh0AY&SY\x00\x00\x00":            None,
		"ffffffff81000000 T _stext\n":      None,
		"\x7fELF\x02\x01\x01":              None,
		"":                                 None,
	} {
		assert.Equal(t, want, Detect([]byte(head)), "%q", head)
	}
}

// encodings is the example in every format the package reads, with its
// plain bytes.
func encodings(tb testing.TB) (plain []byte, enc map[Compression][]byte) {
	tb.Helper()
	plain, err := os.ReadFile(example)
	require.NoError(tb, err)
	bz, err := os.ReadFile("testdata/example.txt.bz2") // see testdata/Makefile
	require.NoError(tb, err)
	enc = map[Compression][]byte{None: plain, Bzip2: bz}
	for c, w := range map[Compression]func(io.Writer) (io.WriteCloser, error){
		Gzip: func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil },
		Zstd: func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) },
		Xz:   func(w io.Writer) (io.WriteCloser, error) { return xz.NewWriter(w) },
	} {
		var b bytes.Buffer
		zw, err := w(&b)
		require.NoError(tb, err)
		_, err = zw.Write(plain)
		require.NoError(tb, err)
		require.NoError(tb, zw.Close())
		enc[c] = b.Bytes()
	}
	return plain, enc
}

// Every format decompresses to the same bytes through Open, and the
// Source says which it was.
func TestOpenFormats(t *testing.T) {
	plain, enc := encodings(t)
	for c, data := range enc {
		path := filepath.Join(t.TempDir(), "in")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		src, err := Open(path)
		require.NoError(t, err, c)
		assert.Equal(t, c, src.Compression)
		got, err := ReadAll(src, src.SizeHint, 0)
		require.NoError(t, err, c)
		assert.Equal(t, plain, got, c)
		require.NoError(t, src.Close())
	}

	// A damaged bzip2 stream is an error, not a short read.
	_, _, err := Decompress("half.bz2", enc[Bzip2][:len(enc[Bzip2])/2], 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "half.bz2")

	// A bzip2 bomb stops at the limit.
	out, c, err := Decompress("x.bz2", enc[Bzip2], 100)
	assert.Nil(t, out)
	assert.Equal(t, Bzip2, c)
	require.ErrorIs(t, err, ErrTooLarge)
}

// A compressed input cut short or damaged is ErrCorrupt, wrapping the
// decoder's error and naming the input and its format, whether it is
// decompressed whole (Decompress) or read as a stream (Open).
func TestCorrupt(t *testing.T) {
	_, enc := encodings(t)
	for c, data := range enc {
		if c == None {
			continue
		}
		damaged := slices.Clone(data)
		for i := len(data) / 3; i < len(data)/2; i++ {
			damaged[i] ^= 0x5a
		}
		for what, in := range map[string][]byte{"cut": data[:len(data)/2], "damaged": damaged} {
			_, _, err := Decompress("in", in, 0)
			require.ErrorIs(t, err, ErrCorrupt, "%s %s", c, what)
			assert.True(t, strings.HasPrefix(err.Error(), "in: "+string(c)+": "), "%s %s: %v", c, what, err)
			if what == "cut" {
				assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "%s", c)
			}

			path := filepath.Join(t.TempDir(), "in")
			require.NoError(t, os.WriteFile(path, in, 0o644))
			src, err := Open(path)
			if err == nil {
				_, err = ReadAll(src, 0, 0)
				src.Close()
			}
			require.ErrorIs(t, err, ErrCorrupt, "%s %s stream", c, what)
			assert.Contains(t, err.Error(), string(c)+": ", "%s %s stream", c, what)
		}
	}
}

// FuzzDecompress: any input either comes back as it is (no compression
// detected), or decompresses to at most the limit, or is an error that
// names the input; nothing panics. Seeds: the example in every format,
// cut short and whole.
func FuzzDecompress(f *testing.F) {
	_, enc := encodings(f)
	for _, s := range enc {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		out, c, err := Decompress("fuzz.in", data, limit)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "fuzz.in") {
				t.Fatalf("error does not name the input: %v", err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error is neither ErrCorrupt nor ErrTooLarge: %v", err)
			}
		case c == None:
			if !bytes.Equal(out, data) {
				t.Fatal("uncompressed input changed")
			}
		case len(out) > limit:
			t.Fatalf("%s output of %d bytes past the limit", c, len(out))
		}
	})
}

// ReadAt gives exactly size bytes, or an error naming the input: a reader
// shorter than size is not padded with zeros.
func TestReadAt(t *testing.T) {
	data := []byte("0123456789")
	got, err := ReadAt("in", bytes.NewReader(data), 10, 100)
	require.NoError(t, err)
	require.Equal(t, data, got)
	got, err = ReadAt("in", bytes.NewReader(data), 4, 100)
	require.NoError(t, err)
	require.Equal(t, data[:4], got)

	_, err = ReadAt("in", bytes.NewReader(data), 16, 100)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.EqualError(t, err, "in: unexpected EOF: 10 of 16 bytes")
	_, err = ReadAt("in", bytes.NewReader(data), 101, 100)
	require.ErrorIs(t, err, ErrTooLarge)
	require.EqualError(t, err, "in: input larger than the limit: size 101, more than 100")
	_, err = ReadAt("in", bytes.NewReader(data), -1, 100)
	require.Error(t, err)
	_, err = ReadAt("in", failingReaderAt{}, 4, 100)
	require.EqualError(t, err, "in: device on fire")
}

type failingReaderAt struct{}

func (failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errors.New("device on fire") }

// TestDecompressPresized: a zstd frame that records its size (EncodeAll,
// zstd(1)) and a gzip stream (ISIZE) decompress into a buffer of that
// size, not one doubled from 64 KiB; a zstd frame without it still
// decodes; a lying size reserves at most maxRatioHint times the input; a
// zstd bomb stops at the limit.
func TestDecompressPresized(t *testing.T) {
	plain, enc := encodings(t)
	enc0, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	sized := enc0.EncodeAll(plain, nil)
	require.NoError(t, enc0.Close())
	var h zstd.Header
	require.NoError(t, h.Decode(sized))
	require.True(t, h.HasFCS)

	for name, data := range map[string][]byte{"sized.zst": sized, "stream.zst": enc[Zstd], "x.gz": enc[Gzip]} {
		out, _, err := Decompress(name, data, 0)
		require.NoError(t, err, name)
		assert.Equal(t, plain, out, name)
		assert.LessOrEqual(t, cap(out), len(plain)+1, "%s: presized", name)
	}
	assert.Equal(t, int64(len(plain)), decompressedSize(Zstd, sized, DefaultMaxSize))
	assert.Equal(t, int64(len(plain)), decompressedSize(Gzip, enc[Gzip], DefaultMaxSize))
	// Two frames: the header sizes the first; the buffer grows for the
	// second.
	two := append(slices.Clone(sized), sized...)
	assert.Equal(t, int64(len(plain)), decompressedSize(Zstd, two, DefaultMaxSize))
	out, _, err := Decompress("two.zst", two, 0)
	require.NoError(t, err)
	assert.Equal(t, append(slices.Clone(plain), plain...), out)

	// A gzip trailer claiming 4 GiB - 1, and the limit.
	liar := slices.Clone(enc[Gzip])
	binary.LittleEndian.PutUint32(liar[len(liar)-4:], 0xffffffff)
	assert.Equal(t, int64(len(liar))*maxRatioHint, decompressedSize(Gzip, liar, DefaultMaxSize))
	assert.Equal(t, int64(100), decompressedSize(Zstd, sized, 100))

	out, c, err := Decompress("bomb.zst", sized, 100)
	assert.Nil(t, out)
	assert.Equal(t, Zstd, c)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, "bomb.zst")
	_, _, err = Decompress("half.zst", sized[:len(sized)/2], 0)
	assert.ErrorContains(t, err, "half.zst: zstd:")
}

// ReadFile reads a file whole and refuses one past max before reading it
// (a sparse file claims its size at no cost).
// A regular file is read whole without the check (its size is known),
// and refused past the limit before it is read.
func TestReadFileChecked(t *testing.T) {
	refuse := func(string, []byte) error { return errors.New("the check ran") }
	plain, _ := encodings(t)
	got, err := ReadFileChecked(example, 1<<20, refuse)
	require.NoError(t, err)
	assert.Equal(t, plain, got)

	big := filepath.Join(t.TempDir(), "big.ko")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, 3<<30))
	_, err = ReadFileChecked(big, 1<<30, refuse)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.EqualError(t, err, big+": input larger than the limit (3221225472 bytes, more than 1073741824)")
	_, err = ReadFileChecked(filepath.Join(t.TempDir(), "absent"), 1<<30, refuse)
	assert.ErrorIs(t, err, os.ErrNotExist)

	// A folder is named for what it is, by both ways in, before any read.
	dir := t.TempDir()
	_, err = ReadFileChecked(dir, 1<<30, refuse)
	require.ErrorIs(t, err, ErrIsFolder)
	assert.EqualError(t, err, dir+": a folder, not a file")
	_, err = Open(dir)
	require.ErrorIs(t, err, ErrIsFolder)
	assert.EqualError(t, err, dir+": a folder, not a file")
}

// zeros is /dev/zero: it never ends.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A stream's first bytes go to the check before the rest is read: one
// that never ends is refused at once, and one that passes is read whole,
// shorter than the head or longer.
func TestReadAllChecked(t *testing.T) {
	refuse := errors.New("not a module")
	var seen []byte
	_, err := ReadAllChecked("in", zeros{}, DefaultMaxSize, func(_ string, head []byte) error {
		seen = head
		return refuse
	})
	require.ErrorIs(t, err, refuse)
	assert.Len(t, seen, headLen)

	pass := func(string, []byte) error { return nil }
	for _, n := range []int{0, 10, headLen, headLen + 1, 100000} {
		data := bytes.Repeat([]byte{'x'}, n)
		got, err := ReadAllChecked("in", bytes.NewReader(data), DefaultMaxSize, pass)
		require.NoError(t, err, n)
		assert.Equal(t, data, got, n)
	}
	// A short stream still goes to the check.
	_, err = ReadAllChecked("in", strings.NewReader("short"), DefaultMaxSize, func(_ string, head []byte) error {
		assert.Equal(t, "short", string(head))
		return refuse
	})
	require.ErrorIs(t, err, refuse)
	// The limit still holds past the head.
	_, err = ReadAllChecked("in", zeros{}, 1<<20, pass)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.EqualError(t, err, "in: input larger than the limit (1048576 bytes)")

}

// TestLines: each line with its number, without "\n"; a last line without
// one; blank lines kept; nothing for no data; stopping early stops.
func TestLines(t *testing.T) {
	type line struct {
		n int
		s string
	}
	collect := func(data string) []line {
		var out []line
		for n, l := range Lines([]byte(data)) {
			out = append(out, line{n, string(l)})
		}
		return out
	}
	assert.Equal(t, []line{{1, "a"}, {2, ""}, {3, "b\r"}, {4, "c"}}, collect("a\n\nb\r\nc"))
	assert.Equal(t, []line{{1, "a"}}, collect("a\n"))
	assert.Empty(t, collect(""))
	n := 0
	for range Lines([]byte("1\n2\n3\n")) {
		if n++; n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n)
}
