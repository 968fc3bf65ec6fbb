// SPDX-License-Identifier: GPL-2.0-only

package kimage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os/exec"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz/lzma"
)

// arm64Image is an Image header followed by body.
func arm64Image(body string) []byte {
	b := make([]byte, ARM64HeaderSize)
	copy(b[56:], "ARM\x64")
	return append(b, body...)
}

// zbootOf wraps payload as an EFI zboot image compressed with comp.
func zbootOf(comp string, payload []byte) []byte {
	b := make([]byte, 512)
	copy(b, "MZ")
	copy(b[zbootType:], "zimg")
	binary.LittleEndian.PutUint32(b[zbootOffset:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[zbootSize:], uint32(len(payload)))
	copy(b[zbootComp:], comp)
	copy(b[56:], "ARM\x64") // the PE header's magic, as the real header has
	return append(b, payload...)
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestDetect(t *testing.T) {
	elf := func(typ byte) []byte {
		return append([]byte("\x7fELF\x02\x01\x01"), append(make([]byte, 9), typ, 0)...)
	}
	for _, tc := range []struct {
		name string
		head []byte
		want Kind
	}{
		{"Image", arm64Image(""), ARM64},
		{"zboot", zbootOf("gzip", nil), ZBoot},
		{"bzImage", BzImageOf(nil), BzImage},
		{"vmlinux", elf(2), ELF},
		{"relocatable vmlinux", elf(3), ELF},
		{"module", elf(1), None},
		{"text", []byte("ffffffff81000000 T _text\n"), None},
	} {
		assert.Equal(t, tc.want, Detect(tc.head), tc.name)
	}
}

// TestZBoot: an EFI zboot image's payload is its Image, decompressed;
// one compressed in a way not read, or whose payload is no Image, says
// so.
func TestZBoot(t *testing.T) {
	img := arm64Image("the kernel")
	kind, b, err := Vmlinux("vmlinuz", zbootOf("gzip", gz(t, img)))
	require.NoError(t, err)
	assert.Equal(t, ZBoot, kind)
	assert.Equal(t, img, b)

	for _, tc := range []struct {
		name string
		data []byte
		err  error
		msg  string
	}{
		{"lz4", zbootOf("lz4", []byte("12345678")), ErrUnsupported, `a zboot image compressed with "lz4" (gzip, zstd and xz are read)`},
		{"not an Image", zbootOf("gzip", gz(t, []byte("plain bytes"))), ErrUnsupported, "its zboot payload is not an arm64 Image"},
		{"cut", zbootOf("gzip", gz(t, img))[:530], ErrMalformed, "is not within the file's 530 bytes"},
		{"corrupt", zbootOf("gzip", append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{7}, 40)...)), ErrMalformed, "its zboot payload: "},
	} {
		_, _, err := Vmlinux("vmlinuz", tc.data)
		assert.True(t, errors.Is(err, tc.err), "%s: %v", tc.name, err)
		assert.ErrorContains(t, err, "vmlinuz: ")
		assert.ErrorContains(t, err, tc.msg, tc.name)
	}
	_, _, err = Vmlinux("notes.txt", []byte("hello"))
	assert.ErrorContains(t, err, "notes.txt: unsupported kernel image: not a kernel image (bzImage, arm64 Image, EFI zboot or vmlinux ELF)")
}

// FuzzVmlinux: any bytes: a form and bytes, or an error naming the file;
// never a panic.
func FuzzVmlinux(f *testing.F) {
	f.Add(arm64Image("x"))
	f.Add(BzImageOf([]byte("\x28\xb5\x2f\xfd payload")))
	f.Add(zbootOf("zstd22", []byte("\x28\xb5\x2f\xfd payload")))
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00"))
	f.Add(BzImageOf([]byte("\x02\x21\x4c\x18\x05\x00\x00\x00\x50hello\x0b\x00\x00\x00")))
	f.Add(BzImageOf([]byte("\x5d\x00\x00\x10\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00\x01\x02\x03")))
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, b, err := Vmlinux("fuzz", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz" {
				t.Fatalf("error %v is no *Error naming the file", err)
			}
			return
		}
		if kind == None || b == nil {
			t.Fatalf("kind %q, %d bytes, no error", kind, len(b))
		}
	})
}

// TestBzImagePayloads: each compression a kernel's build may choose for
// x86's payload decodes to the payload: lz4's legacy frames (one chunk
// and several), lzma, bzip2 (where the bzip2 command is there to make
// one), each followed by the size as size_append writes it.
func TestBzImagePayloads(t *testing.T) {
	plain := bytes.Repeat([]byte("\x7fELF kernel image bytes, repeated; "), 300000) // 10 MiB: two lz4 chunks
	sized := func(b []byte) []byte { return binary.LittleEndian.AppendUint32(b, uint32(len(plain))) }
	lz4Frame := func(data []byte) []byte {
		out := binary.LittleEndian.AppendUint32(nil, lz4LegacyMagic)
		for len(data) > 0 {
			n := min(len(data), lz4LegacyChunk)
			buf := make([]byte, lz4.CompressBlockBound(n))
			k, err := lz4.CompressBlock(data[:n], buf, nil)
			require.NoError(t, err)
			out = binary.LittleEndian.AppendUint32(out, uint32(k))
			out = append(out, buf[:k]...)
			data = data[n:]
		}
		return out
	}
	var lz bytes.Buffer
	w, err := lzma.NewWriter(&lz)
	require.NoError(t, err)
	_, err = w.Write(plain)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	cases := map[string][]byte{"lz4": lz4Frame(plain), "lzma": lz.Bytes()}
	if bz, err := exec.Command("sh", "-c", "head -c 1000000 /dev/zero | bzip2 -9").Output(); err == nil {
		plain1 := make([]byte, 1000000)
		_, b, err := Vmlinux("vmlinuz", BzImageOf(binary.LittleEndian.AppendUint32(bz, uint32(len(plain1)))))
		require.NoError(t, err, "bzip2")
		assert.Equal(t, plain1, b, "bzip2")
	} else {
		t.Log("no bzip2 command: its payload not checked")
	}
	for name, payload := range cases {
		kind, b, err := Vmlinux("vmlinuz", BzImageOf(sized(payload)))
		require.NoError(t, err, name)
		assert.Equal(t, BzImage, kind)
		assert.True(t, bytes.Equal(plain, b), "%s: %d bytes decoded", name, len(b))
	}
	// A chunk that claims more than the payload has.
	bad := lz4Frame(plain[:1000])
	binary.LittleEndian.PutUint32(bad[4:], 1<<20)
	_, _, err = Vmlinux("vmlinuz", BzImageOf(sized(bad)))
	assert.ErrorIs(t, err, ErrMalformed)
	assert.ErrorContains(t, err, "vmlinuz: malformed kernel image: its payload: lz4: a chunk of 1048576 bytes at 8 runs past the payload's")
}
