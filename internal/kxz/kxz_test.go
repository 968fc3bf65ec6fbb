package kxz

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "ftrace", name))
	require.NoError(t, err)
	return data
}

// TestDecode: the miniature vmlinux compressed as the kernel's build
// compresses bzImage's payload (xz --x86 --lzma2, testdata/ftrace's
// Makefile) decodes to its bytes exactly: its calls (E8) come back
// relative. With the size the kernel appends, and without.
func TestDecode(t *testing.T) {
	want := fixture(t, "vmlinux")
	xz := fixture(t, "vmlinux.xz")
	require.Greater(t, bytes.Count(want, []byte{0xe8}), 5, "calls for the filter to have converted")
	for _, size := range []int64{0, int64(len(want))} {
		got, err := Decode(append(bytes.Clone(xz), binary.LittleEndian.AppendUint32(nil, uint32(len(want)))...), size, 1<<20)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "size hint %d", size)
	}
	// Undoing the filter is what makes them equal.
	r, err := Decode(xz, 0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, want, r)
}

// TestDecodeRefused: what is not the kernel's kind of stream, or is
// damaged, is ErrFormat, saying what.
func TestDecodeRefused(t *testing.T) {
	xz := fixture(t, "vmlinux.xz")
	n := len(fixture(t, "vmlinux"))
	corrupt := func(at int) []byte {
		b := bytes.Clone(xz)
		b[at] ^= 0x55
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		size int64
		want string
	}{
		{"not xz", []byte("hello, world"), 0, "no xz magic"},
		{"stream flags", corrupt(7), 0, "the stream header's checksum does not match"},
		{"block header", corrupt(14), 0, "the block header's checksum does not match"},
		{"cut off", xz[:14], 0, "the block header is cut off"},
		{"another filter", fixture(t, "delta.xz"), 0, "filter 0x3 (1 bytes of properties) at position 1: only x86 BCJ (without a start offset) before LZMA2 is read"},
		{"compressed data", corrupt(len(xz) / 2), 0, "not a kernel xz stream"},
		{"shorter than said", xz, int64(n + 1), "bytes expected"},
		{"longer than said", xz, int64(n - 1), "more than the"},
	} {
		_, err := Decode(tc.data, tc.size, 1<<20)
		require.ErrorIs(t, err, ErrFormat, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	_, err := Decode(xz, 0, int64(n-1))
	require.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "more than")
}

// FuzzDecode: any bytes decode or are ErrFormat; never a panic, never
// more than the limit.
func FuzzDecode(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "ftrace", "vmlinux.xz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, int64(0))
	f.Add(data[:40], int64(100))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		out, err := Decode(data, size, 1<<20)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			return
		}
		require.LessOrEqual(t, len(out), 1<<20)
	})
}
