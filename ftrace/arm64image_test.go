// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// a64Index is the arm64 fixture's System.map with every address moved by
// shift, less the lines that keep returns false for.
func a64Index(t *testing.T, shift uint64, keep func(line string) bool) *kallsyms.Index {
	t.Helper()
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(string(shifted(t, mustRead(t, fixture("arm64/System.map")), shift)), "\n") {
		if l != "" && (keep == nil || keep(l)) {
			out.WriteString(l)
		}
	}
	ix, err := kallsyms.ParseBytes("System.map", out.Bytes(), kallsyms.Options{})
	require.NoError(t, err)
	return ix
}

// symAddr is the address of ix's vmlinux symbol name.
func symAddr(t *testing.T, ix *kallsyms.Index, name string) uint64 {
	t.Helper()
	sym, ok := ix.Find(kallsyms.Vmlinux, name, 1)
	require.True(t, ok, name)
	return sym.Address
}

// TestARM64Image: arm64's Image (objcopy -O binary of arm64/vmlinux, as
// arch/arm64/boot makes it; Debian's /boot/vmlinuz) has no symbols: the
// System.map finds its table, whose zero words its .rela.dyn fills. The
// sites are the vmlinux's, and a function is traceable exactly where the
// disassembly shows a patchable entry's two NOPs. Compressed (Image.gz)
// it reads the same.
func TestARM64Image(t *testing.T) {
	ix := a64Index(t, 0, nil)
	img := mustRead(t, fixture("arm64/Image"))
	require.True(t, kimage.IsARM64Image(img))
	// Text with the magic at 56 (a tracefs list could have it) is not one.
	text := []byte(strings.Repeat("vfs_read\n", 6) + "s_ARMd_show\n")
	require.Equal(t, "ARMd", string(text[56:60]))
	assert.False(t, kimage.IsARM64Image(text))
	off := symAddr(t, ix, startSym) - symAddr(t, ix, textSym)
	assert.Equal(t, make([]byte, 40), img[off:off+40], "the table holds zeros")

	s, err := Open(fixture("arm64/Image"), ix)
	require.NoError(t, err)
	v, err := Open(fixture("arm64/vmlinux"), ix)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Len())
	assert.Equal(t, v.addrs, s.addrs)
	assert.Equal(t, uint64(0), s.Slide())
	assert.Equal(t, fixture("arm64/Image"), s.Source())
	assert.Equal(t, 11, matchesOracle(t, s, ix, traced(t, "arm64/available_filter_functions_addrs")))

	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err = w.Write(img)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	p := filepath.Join(t.TempDir(), "Image.gz")
	require.NoError(t, os.WriteFile(p, gz.Bytes(), 0o644))
	z, err := Open(p, ix)
	require.NoError(t, err)
	assert.Equal(t, s.addrs, z.addrs)
}

// TestARM64ImageKASLR: a running kernel's kallsyms (with
// CONFIG_KALLSYMS_ALL) is moved by its KASLR offset, a multiple of 64 KiB;
// the relocations, at link-time addresses, say by how much. An offset no
// kernel moves by finds no relocations for the table.
func TestARM64ImageKASLR(t *testing.T) {
	base := a64Index(t, 0, nil)
	s0, err := Open(fixture("arm64/Image"), base)
	require.NoError(t, err)
	for _, shift := range []uint64{0x10000, 0x2c0000, 0x3f_ffe0_0000} {
		ix := a64Index(t, shift, nil)
		s, err := Open(fixture("arm64/Image"), ix)
		require.NoError(t, err, "%#x", shift)
		assert.Equal(t, shift, s.Slide())
		assert.Equal(t, verdicts(s0, base), verdicts(s, ix), "%#x", shift)
		assert.Equal(t, symAddr(t, ix, "vfs_read"), s.addrs[1])
	}
	_, err = Open(fixture("arm64/Image"), a64Index(t, 0x1000, nil))
	require.ErrorIs(t, err, ErrMismatch)
	assert.ErrorContains(t, err, "no relocations between __rela_start and __rela_end fill its call-site table's 5 zero words")
}

// TestARM64ImagePadding: a table's zero words that are the linker's
// padding have a relocation with a zero addend (Debian's 6.12 kernel has
// 341) or none; they are no call site, and the table is still found, at a
// System.map's addresses or moved by KASLR.
func TestARM64ImagePadding(t *testing.T) {
	full := a64Index(t, 0, nil)
	img := mustRead(t, fixture("arm64/Image"))
	relas := symAddr(t, full, relaStartSym) - symAddr(t, full, textSym)
	// The relocation of the table's second word, vfs_read's.
	second := relas + relaEntSize
	require.Equal(t, symAddr(t, full, startSym)+8, binary.LittleEndian.Uint64(img[second:]))
	require.Equal(t, symAddr(t, full, "vfs_read"), binary.LittleEndian.Uint64(img[second+16:]))
	zeroAddend := bytes.Clone(img)
	binary.LittleEndian.PutUint64(zeroAddend[second+16:], 0)
	none := bytes.Clone(img)
	binary.LittleEndian.PutUint64(none[second+8:], 0) // R_AARCH64_NONE
	for _, tc := range []struct {
		name string
		data []byte
	}{{"zero addend", zeroAddend}, {"no relocation", none}} {
		for _, shift := range []uint64{0, 0x2c0000} {
			ix := a64Index(t, shift, nil)
			s, err := NewImage("Image", bytes.NewReader(tc.data), ix)
			require.NoError(t, err, "%s, %#x", tc.name, shift)
			assert.Equal(t, 4, s.Len(), "%s, %#x", tc.name, shift)
			assert.Equal(t, shift, s.Slide())
			sym, err := ix.Lookup(kallsyms.Vmlinux, "vfs_read", 0)
			require.NoError(t, err)
			assert.Equal(t, NotTraceable, s.Function(sym), "%s, %#x: its word is padding now", tc.name, shift)
		}
	}
}

// TestARM64ImageBigEndian: the header's flags say a big-endian kernel,
// whose table and relocations are big-endian words.
func TestARM64ImageBigEndian(t *testing.T) {
	ix := a64Index(t, 0, nil)
	le, err := Open(fixture("arm64/Image"), ix)
	require.NoError(t, err)
	img := mustRead(t, fixture("arm64/Image"))
	text := symAddr(t, ix, textSym)
	swap := func(lo, hi uint64) {
		for o := lo - text; o < hi-text; o += 8 {
			binary.BigEndian.PutUint64(img[o:], binary.LittleEndian.Uint64(img[o:]))
		}
	}
	swap(symAddr(t, ix, startSym), symAddr(t, ix, stopSym))
	swap(symAddr(t, ix, relaStartSym), symAddr(t, ix, relaEndSym))
	_, err = NewImage("Image", bytes.NewReader(img), ix)
	require.ErrorIs(t, err, ErrMismatch, "read as little-endian, the relocations are not")
	img[24] |= 1 // the header flags' big-endian bit
	be, err := NewImage("Image", bytes.NewReader(img), ix)
	require.NoError(t, err)
	assert.Equal(t, le.addrs, be.addrs)
}

// TestARM64ImageBroken: symbols that cannot find the table, and Images
// cut short or lying, are errors of their kinds naming the file.
func TestARM64ImageBroken(t *testing.T) {
	img := mustRead(t, fixture("arm64/Image"))
	full := a64Index(t, 0, nil)
	text := symAddr(t, full, textSym)
	table := symAddr(t, full, startSym) - text
	relas := symAddr(t, full, relaStartSym) - text
	without := func(names ...string) func(string) bool {
		return func(l string) bool {
			f := strings.Fields(l)
			for _, n := range names {
				if f[2] == n {
					return false
				}
			}
			return true
		}
	}
	codeOnly := func(l string) bool { f := strings.Fields(l); return f[1] == "T" || f[1] == "t" }
	lying := func(lines string) *kallsyms.Index {
		ix, err := kallsyms.ParseBytes("lying", []byte(lines), kallsyms.Options{})
		require.NoError(t, err)
		return ix
	}
	// Relocations for the table linked 64 KiB and 128 KiB past where the
	// symbols say.
	twice := bytes.Clone(img)
	for _, base := range []uint64{text + table + 0x10000, text + table + 0x20000} {
		for i := range uint64(5) {
			twice = binary.LittleEndian.AppendUint64(twice, base+8*i)
			twice = binary.LittleEndian.AppendUint64(twice, 1027) // R_AARCH64_RELATIVE
			twice = binary.LittleEndian.AppendUint64(twice, text+0x100+i)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		ix   *kallsyms.Index
		kind error
		want string
	}{
		{"code only", img, a64Index(t, 0, codeOnly), ErrNoTable, "lists no _text, __start_mcount_loc and __stop_mcount_loc to find its call-site table by (a kallsyms without CONFIG_KALLSYMS_ALL, as Debian's arm64 kernels have: give the kernel's System.map)"},
		{"no rela bounds", img, a64Index(t, 0, without(relaStartSym)), ErrNoTable, "its call-site table holds zero words, which relocations fill at boot, and System.map lists no __rela_start and __rela_end"},
		{"cut in the table", img[:table+16], full, ErrMalformed, fmt.Sprintf("reading the call-site table at file offset %#x", table)},
		{"cut in the relocations", img[:relas+30], full, ErrMalformed, fmt.Sprintf("reading its relocations (__rela_start, file offset %#x, 120 bytes): unexpected EOF after 24 bytes", relas)},
		{"cut before the relocations", img[:relas], full, ErrMalformed, fmt.Sprintf("reading its relocations (__rela_start, file offset %#x, 120 bytes): unexpected EOF after 0 bytes", relas)},
		{"header only", img[:kimage.ARM64HeaderSize], full, ErrMalformed, "reading the call-site table"},
		{"bounds reversed", img, lying("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff800008001000 D __stop_mcount_loc\n"), ErrMalformed, "is no table of 8-byte addresses"},
		{"4 GiB of table", img, lying("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff800108002000 D __stop_mcount_loc\n"), ErrMalformed, "is no table of 8-byte addresses"},
		{"64 MiB of table", img, lying("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff80000c002000 D __stop_mcount_loc\n"), ErrMalformed, "reading the call-site table at file offset 0x2000"},
		{"relocations not whole", img, lying(fmt.Sprintf("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff800008002028 D __stop_mcount_loc\n%x R __rela_start\n%x R __rela_end\n", text+relas, text+relas+25)), ErrMalformed, "is no table of relocations"},
		{"another build's relocations", img, lying(fmt.Sprintf("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff800008002028 D __stop_mcount_loc\n%x R __rela_start\n%x R __rela_end\n", text+relas+24, text+relas+48)), ErrMismatch, "no relocations between __rela_start and __rela_end fill its call-site table's 5 zero words"},
		{"two places", twice, lying(fmt.Sprintf("ffff800008000000 T _text\nffff800008002000 D __start_mcount_loc\nffff800008002028 D __stop_mcount_loc\n%x R __rela_start\n%x R __rela_end\n", text+uint64(len(img)), text+uint64(len(twice)))), ErrMismatch, "relocations fill its call-site table's zero words as well at 0xffff800008012000 as at 0xffff800008022000: which is the table's is not known"},
	} {
		_, err := NewImage("Image", bytes.NewReader(tc.data), tc.ix)
		require.ErrorIs(t, err, tc.kind, tc.name)
		assert.ErrorContains(t, err, "Image: ", tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

// TestDebianARM64Vmlinuz: Debian's real arm64 6.1 /boot/vmlinuz, an Image
// (testutil.Vmlinuz), against the corpus's System.map of the same build
// and against it moved by a KASLR offset: one call site per word of the
// table (counted here from the map's bounds), each filled from the
// Image's relocations, and the functions the build leaves without one.
// The corpus's kallsyms lists code only: it cannot place the table.
func TestDebianARM64Vmlinuz(t *testing.T) {
	vmlinuz := testutil.Vmlinuz(t, "arm64")
	smap := testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64")
	ix, err := kallsyms.Open(smap, kallsyms.Options{})
	require.NoError(t, err)
	s, err := Open(vmlinuz, ix)
	require.NoError(t, err)
	assert.Equal(t, int(symAddr(t, ix, stopSym)-symAddr(t, ix, startSym))/8, s.Len())
	assert.Equal(t, 44279, s.Len())
	want := map[string]Verdict{
		"vfs_read": Traceable, "schedule": Traceable, "cmdline_proc_show": Traceable, "kmalloc_trace": Traceable,
		"ring_buffer_lock_reserve": NotTraceable, "tracing_on": NotTraceable, "trace_vbprintk": NotTraceable,
		"irq_work_queue": NotTraceable, "memcpy": NotTraceable, "cpu_switch_to": NotTraceable, "el1h_64_sync_handler": NotTraceable,
		"percpu_ref_init": NotTraceable,
	}
	assertVerdicts(t, s, ix, want)

	const shift = 0x1c000000
	m, moved := openMoved(t, vmlinuz, smap, shift)
	assert.Equal(t, uint64(shift), m.Slide())
	assert.Equal(t, s.Len(), m.Len())
	assertVerdicts(t, m, moved, want)

	code, err := kallsyms.Open(testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	_, err = Open(vmlinuz, code)
	require.ErrorIs(t, err, ErrNoTable)
	assert.ErrorContains(t, err, "give the kernel's System.map")
}
