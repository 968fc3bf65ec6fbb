package input

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
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

// Every format decompresses to the same bytes through Open, and the
// Source says which it was.
func TestOpenFormats(t *testing.T) {
	plain, err := os.ReadFile(example)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, enc func(io.Writer) io.WriteCloser) string {
		var b bytes.Buffer
		w := enc(&b)
		_, err := w.Write(plain)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
		return p
	}
	files := map[Compression]string{
		None: example,
		Gzip: write("x.gz", func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }),
		Zstd: write("x.zst", func(w io.Writer) io.WriteCloser {
			z, err := zstd.NewWriter(w)
			require.NoError(t, err)
			return z
		}),
		Xz: write("x.xz", func(w io.Writer) io.WriteCloser {
			x, err := xz.NewWriter(w)
			require.NoError(t, err)
			return x
		}),
		Bzip2: "testdata/example.txt.bz2", // see testdata/Makefile
	}
	for c, path := range files {
		src, err := Open(path)
		require.NoError(t, err, path)
		assert.Equal(t, c, src.Compression, path)
		got, err := ReadAll(src, src.SizeHint, 0)
		require.NoError(t, err, path)
		assert.Equal(t, plain, got, path)
		require.NoError(t, src.Close())
	}

	// A damaged bzip2 stream is an error, not a short read.
	bz, err := os.ReadFile(files[Bzip2])
	require.NoError(t, err)
	bz = bz[:len(bz)/2]
	_, _, err = Decompress("half.bz2", bz, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "half.bz2")

	// A bzip2 bomb stops at the limit.
	out, c, err := Decompress("x.bz2", mustRead(t, files[Bzip2]), 100)
	assert.Nil(t, out)
	assert.Equal(t, Bzip2, c)
	require.ErrorIs(t, err, ErrTooLarge)
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// FuzzDecompress: any input either comes back as it is (no compression
// detected), or decompresses to at most the limit, or is an error that
// names the input; nothing panics. Seeds: the example in every format,
// cut short and whole.
func FuzzDecompress(f *testing.F) {
	plain, err := os.ReadFile(example)
	require.NoError(f, err)
	bz, err := os.ReadFile("testdata/example.txt.bz2")
	require.NoError(f, err)
	seeds := [][]byte{plain, bz}
	for _, enc := range []func(io.Writer) io.WriteCloser{
		func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
		func(w io.Writer) io.WriteCloser { z, _ := zstd.NewWriter(w); return z },
		func(w io.Writer) io.WriteCloser { x, _ := xz.NewWriter(w); return x },
	} {
		var b bytes.Buffer
		w := enc(&b)
		_, _ = w.Write(plain)
		_ = w.Close()
		seeds = append(seeds, b.Bytes())
	}
	for _, s := range seeds {
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
		case c == None:
			if !bytes.Equal(out, data) {
				t.Fatal("uncompressed input changed")
			}
		case len(out) > limit:
			t.Fatalf("%s output of %d bytes past the limit", c, len(out))
		}
	})
}
