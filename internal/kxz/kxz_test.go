// SPDX-License-Identifier: GPL-2.0-only

package kxz

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
		got, err := Decode(append(bytes.Clone(xz), binary.LittleEndian.AppendUint32(nil, uint32(len(want)))...), size, 1<<20, 1<<20)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "size hint %d", size)
	}
}

// TestDecodePrefix: every prefix is the whole decode's first bytes, the
// filter undone as far as each goes (the 4 bytes past it decoded to
// decide), with the size the kernel appends and without; past the end, the
// whole.
func TestDecodePrefix(t *testing.T) {
	want := fixture(t, "vmlinux")
	xz := fixture(t, "vmlinux.xz")
	for _, size := range []int64{0, int64(len(want))} {
		for n := int64(0); n <= int64(len(want))+10; n += 1 + n/7 {
			got, err := Decode(xz, size, 1<<20, n)
			require.NoError(t, err)
			require.Equal(t, want[:min(n, int64(len(want)))], got, "size %d, prefix %d", size, n)
		}
	}
	// Each E8 of the image, and the bytes around it, as a prefix's end.
	for i := range want {
		if want[i] != 0xe8 {
			continue
		}
		for n := int64(i - 4); n <= int64(i+6); n++ {
			got, err := Decode(xz, int64(len(want)), 1<<20, n)
			require.NoError(t, err)
			require.Equal(t, want[:max(0, n)], got, "prefix %d", n)
		}
	}
	_, err := Decode([]byte("not xz"), 0, 1<<20, 10)
	require.ErrorIs(t, err, ErrFormat)
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
		{"shorter than said", xz, int64(n + 1), fmt.Sprintf("the stream ends after %d bytes; its recorded size is %d", n, n+1)},
	} {
		_, err := Decode(tc.data, tc.size, 1<<20, 1<<20)
		require.ErrorIs(t, err, ErrFormat, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	// Past the limit, with the size or without.
	for _, size := range []int64{0, int64(n)} {
		_, err := Decode(xz, size, int64(n-1), int64(n))
		require.ErrorIs(t, err, ErrFormat)
		assert.ErrorContains(t, err, fmt.Sprintf("more than %d bytes decoded", n-1))
	}
	// A prefix within the limit is not refused.
	got, err := Decode(xz, int64(n), int64(n-1), 100)
	require.NoError(t, err)
	assert.Len(t, got, 100)
}

// FuzzDecode: any bytes decode or are ErrFormat; never a panic, never
// more than the limit; a prefix of a stream that decodes is its decode's
// first bytes.
func FuzzDecode(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "ftrace", "vmlinux.xz"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, int64(0))
	f.Add(data[:40], int64(100))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		out, err := Decode(data, size, 1<<20, 1<<20)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			return
		}
		require.LessOrEqual(t, len(out), 1<<20)
		// A prefix of what decodes is the decode's first bytes.
		n := int64(len(out)) * 2 / 3
		prefix, err := Decode(data, size, 1<<20, n)
		require.NoError(t, err)
		require.Equal(t, out[:n], prefix)
	})
}
