// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kgen"
)

// vmlinuxLines is the vmlinux part of a kallsyms or System.map file, in
// file order.
func vmlinuxInOrder(tb testing.TB, path string) []testutil.SymbolLine {
	var out []testutil.SymbolLine
	for _, l := range testutil.ReadSymbolLines(tb, path) {
		if l.Object == Vmlinux {
			out = append(out, l)
		}
	}
	return out
}

// sameSymbols checks that ix's vmlinux symbols are want, in order.
func sameSymbols(t *testing.T, ix *Index, want []testutil.SymbolLine) {
	t.Helper()
	var got []testutil.SymbolLine
	ix.Symbols(Vmlinux, func(s Symbol) bool {
		got = append(got, testutil.SymbolLine{Addr: s.Address, Type: string(s.Type), Name: s.Name, Object: s.Object})
		return true
	})
	require.Equal(t, len(want), len(got), "vmlinux symbols")
	diffs := 0
	for i := range want {
		if want[i] != got[i] {
			if diffs++; diffs <= 5 {
				t.Errorf("symbol %d: image %+v, kallsyms %+v", i, got[i], want[i])
			}
		}
	}
	assert.Zero(t, diffs, "symbols that differ")
}

// TestImageDebian61: the kallsyms tables of Debian's 6.1 vmlinuz (amd64:
// a bzImage, xz; arm64: an Image whose words the relocations fill) decode
// to the corpus's kallsyms of the same build, symbol for symbol: name,
// type, link-time address and order.
func TestImageDebian61(t *testing.T) {
	for _, tc := range []struct {
		arch, kind string
		percpu     bool
		text       uint64
	}{
		{"amd64", "bzImage", true, 0xffffffff81000000},
		{"arm64", "arm64 Image", false, 0xffff800008000000},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			if testutil.Sampled() && tc.arch == "amd64" {
				t.Skip("a light run reads the arm64 Image only (xz takes minutes under the race detector)")
			}
			img := testutil.Vmlinuz(t, tc.arch)
			want := vmlinuxInOrder(t, testutil.Corpus(t, fmt.Sprintf("%s/kallsyms-%s.txt", tc.arch, testutil.VmlinuzRelease(tc.arch))))
			ix, err := Open(img, Options{})
			require.NoError(t, err)
			info, ok := ix.Image()
			require.True(t, ok)
			assert.Equal(t, ImageInfo{
				Kind: tc.kind, Layout: LayoutBaseRelative, Release: testutil.VmlinuzRelease(tc.arch),
				Banner: info.Banner, Symbols: len(want), AbsolutePercpu: tc.percpu, Text: tc.text,
			}, info)
			assert.Contains(t, info.Banner, "Linux version "+testutil.VmlinuzRelease(tc.arch)+" (debian-kernel@lists.debian.org)")
			sameSymbols(t, ix, want)
		})
	}
}

// TestImageNotKernel: what is no kernel image, or one without kallsyms,
// says so, naming the file.
func TestImageNotKernel(t *testing.T) {
	dir := t.TempDir()
	// An arm64 Image header over nothing: no tables.
	img := make([]byte, 4096)
	copy(img[56:], "ARM\x64")
	p := filepath.Join(dir, "Image")
	require.NoError(t, os.WriteFile(p, img, 0o644))
	_, err := Open(p, Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoKallsyms), "%v", err)
	assert.ErrorContains(t, err, p+": no kallsyms tables in the kernel image: no kallsyms token table (a kernel built without CONFIG_KALLSYMS has none")
}

// TestImageDebianGenerations: Debian's 6.12 and 7.2 kernels (amd64: a
// bzImage, zstd; arm64: an Image with packed relocations) decode in their
// generation's layout, and the tables describe themselves: with
// CONFIG_KALLSYMS_ALL (all four configurations) the kallsyms_* symbols
// are in the table (6.12 stopped leaving them out), at the very places
// the decoder found the tables. The configuration says whether per-cpu
// symbols are absolute, and the banner names the package's release.
// (Against the -dbg package's System.map, by hand: amd64 6.12's 166,932
// symbols are the map's, but for the per-cpu symbols' type A.)
func TestImageDebianGenerations(t *testing.T) {
	for _, gen := range []string{"6.12", "7.2"} {
		for _, arch := range []string{"amd64", "arm64"} {
			t.Run(gen+"/"+arch, func(t *testing.T) {
				testutil.LightKernel(t, gen, arch)
				root, path := testutil.DebianKernel(t, gen, arch)
				rel := testutil.DebianKernelRelease(gen, arch)
				config, err := os.ReadFile(filepath.Join(root, "boot", "config-"+rel))
				if err != nil {
					config, err = os.ReadFile(filepath.Join(root, "usr/lib/modules", rel, "config"))
				}
				require.NoError(t, err)
				require.Contains(t, string(config), "\nCONFIG_KALLSYMS_ALL=y\n")

				data, err := os.ReadFile(path)
				require.NoError(t, err)
				k, b, err := kimage.Vmlinux(path, data)
				kind := string(k)
				require.NoError(t, err)
				im := &vmImage{name: path, b: b}
				if kind == "arm64 Image" {
					require.NoError(t, im.arm64())
				} else {
					require.NoError(t, im.elf())
				}
				tab, err := im.find()
				require.NoError(t, err)
				_, _, err = im.decode(tab)
				require.NoError(t, err)

				ix, err := ParseBytes(path, data, Options{})
				require.NoError(t, err)
				info, ok := ix.Image()
				require.True(t, ok)
				assert.Equal(t, rel, info.Release)
				assert.Equal(t, kind, info.Kind)
				assert.Equal(t, map[string]string{"6.12": LayoutTablesLast, "7.2": LayoutPCRelative}[gen], info.Layout)
				assert.Equal(t, strings.Contains(string(config), "\nCONFIG_KALLSYMS_ABSOLUTE_PERCPU=y\n"), info.AbsolutePercpu)
				assert.Equal(t, tab.n, info.Symbols)

				at := func(off int) uint64 {
					va, ok := im.va(uint64(off))
					require.True(t, ok)
					return va
				}
				places := map[string]int{
					"kallsyms_num_syms": tab.numSyms, "kallsyms_names": tab.names, "kallsyms_markers": tab.markers,
					"kallsyms_token_table": tab.tokenTable, "kallsyms_token_index": tab.tokenIndex,
					"kallsyms_offsets": tab.offsets, "kallsyms_seqs_of_names": tab.seqs,
				}
				if tab.relativeBase >= 0 {
					places["kallsyms_relative_base"] = tab.relativeBase
				}
				for name, off := range places {
					s, err := ix.Lookup(Vmlinux, name, 0)
					if assert.NoError(t, err, name) {
						assert.Equal(t, at(off), s.Address, "%s", name)
					}
				}
				text, err := ix.Lookup(Vmlinux, "_text", 0)
				require.NoError(t, err)
				assert.Equal(t, info.Text, text.Address)
				s, err := ix.Lookup(Vmlinux, "vfs_read", 0)
				require.NoError(t, err)
				assert.Equal(t, byte('T'), s.Type)
			})
		}
	}
}

// TestImageLayouts: each layout scripts/kallsyms.c has written, as
// fakeImage writes it, decodes to its symbols: names expanded from their
// tokens (a two-byte length too), types, addresses (absolute per-cpu
// ones too), in order.
func TestImageLayouts(t *testing.T) {
	syms := fakeSyms(700)
	for _, tc := range []struct {
		layout string
		percpu bool
	}{
		{LayoutBaseRelative, false}, {LayoutBaseRelative, true},
		{LayoutTablesLast, false}, {LayoutTablesLast, true},
		{LayoutPCRelative, false},
	} {
		t.Run(fmt.Sprintf("%s/percpu=%v", tc.layout, tc.percpu), func(t *testing.T) {
			in := syms
			if tc.percpu {
				// Per-cpu symbols first: their addresses are offsets
				// from 0, stored as they are.
				in = append([]fakeSym{{0, 'A', "fixed_percpu_data"}, {0x1000, 'A', "cpu_tss_rw"}}, syms...)
			}
			ix, err := ParseBytes("fake", fakeImage(tc.layout, in, tc.percpu), Options{})
			require.NoError(t, err)
			info, ok := ix.Image()
			require.True(t, ok)
			assert.Equal(t, ImageInfo{Kind: "vmlinux", Layout: tc.layout, Release: "9.9.9-fake",
				Banner: "Linux version 9.9.9-fake (nobody@nowhere) #1", Symbols: len(in),
				AbsolutePercpu: tc.percpu, Text: fakeText}, info)
			var want []testutil.SymbolLine
			for _, s := range in {
				want = append(want, testutil.SymbolLine{Addr: s.addr, Type: string(s.typ), Name: s.name, Object: Vmlinux})
			}
			sameSymbols(t, ix, want)
		})
	}
}

// TestImageARM64: an arm64 Image says where it was linked only through
// its relocations: .rela.dyn's places (6.1, whose relative_base word the
// Image leaves zero), or, where they are packed (CONFIG_RELR), its words
// that point at its symbols (7.2's addresses are relative to _text).
func TestImageARM64(t *testing.T) {
	syms := fakeSymsAt(fakeARM64Text, 700)
	for _, tc := range []struct {
		layout string
		rela   bool
	}{{LayoutBaseRelative, true}, {LayoutTablesLast, false}, {LayoutPCRelative, false}, {LayoutPCRelative, true}} {
		t.Run(fmt.Sprintf("%s/rela=%v", tc.layout, tc.rela), func(t *testing.T) {
			ix, err := ParseBytes("Image", fakeARM64Image(tc.layout, syms, tc.rela), Options{})
			require.NoError(t, err)
			info, _ := ix.Image()
			assert.Equal(t, "arm64 Image", info.Kind)
			assert.Equal(t, tc.layout, info.Layout)
			assert.Equal(t, uint64(fakeARM64Text), info.Text)
			var want []testutil.SymbolLine
			for _, s := range syms {
				want = append(want, testutil.SymbolLine{Addr: s.addr, Type: string(s.typ), Name: s.name, Object: Vmlinux})
			}
			sameSymbols(t, ix, want)
		})
	}
	// A relocation whose word is neither zero nor its value: no place
	// fits them all.
	b := fakeARM64Image(LayoutBaseRelative, syms, true)
	b[len(b)-101*24-8] = 1 // the last zero word
	_, err := ParseBytes("Image", b, Options{})
	assert.ErrorIs(t, err, ErrImage)
	assert.ErrorContains(t, err, "Image: kernel image not readable: no address puts its 101 relocations on zero words")
}

// TestImageBroken: tables that do not hold together are not read: a
// marker off by one, a name record running past the markers, a token
// index that does not fit its table, addresses out of order.
func TestImageBroken(t *testing.T) {
	syms := fakeSyms(700)
	good := fakeImage(LayoutTablesLast, syms, false)
	_, err := ParseBytes("fake", good, Options{})
	require.NoError(t, err)
	find := func(b []byte) tables {
		im := &vmImage{name: "fake", b: b}
		require.NoError(t, im.elf())
		tab, err := im.find()
		require.NoError(t, err)
		return tab
	}
	tab := find(good)
	le := binary.LittleEndian
	for _, tc := range []struct {
		name  string
		spoil func(b []byte)
		err   error
		msg   string
	}{
		{"marker", func(b []byte) { le.PutUint32(b[tab.markers+4:], le.Uint32(b[tab.markers+4:])+1) }, ErrImage, "but no names and markers before it that decode"},
		{"record length", func(b []byte) { b[tab.names] = 0 }, ErrImage, "but no names and markers before it that decode"},
		{"token index", func(b []byte) { le.PutUint16(b[tab.tokenIndex+2*0x41:], 0) }, ErrNoKallsyms, "no kallsyms token table"},
		{"order", func(b []byte) { le.PutUint32(b[tab.offsets+4*10:], 0) }, ErrImage, "kallsyms symbol 10 (fn_10_read) at 0xffffffff81000000 is below the one before it (0xffffffff81000090): the table is in address order"},
		{"digits", func(b []byte) { copy(b[tab.tokenTable+int(le.Uint16(b[tab.tokenIndex+2*0x35:])):], "X") }, ErrNoKallsyms, "no kallsyms token table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tc.spoil(b)
			_, err := ParseBytes("fake", b, Options{})
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.err), "%v", err)
			assert.ErrorContains(t, err, "fake: ")
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// TestImageAgainstDbgMap: the table in Debian's 6.12 amd64 image is
// what its real System.map (the -dbg package's) says the kernel's table
// holds (KernelKallsyms.Lists, by 6.12's rules, which keep the kallsyms_*
// names): every symbol, name and address, the same number as the table's
// size in the map; the types too, but for the per-cpu symbols, which
// scripts/kallsyms.c types A (--absolute-percpu).
func TestImageAgainstDbgMap(t *testing.T) {
	testutil.LightKernel(t, "6.12", "amd64")
	mapPath := testutil.DebianDbgMap(t, "6.12", "amd64")
	_, img := testutil.DebianKernel(t, "6.12", "amd64")
	m, err := Open(mapPath, Options{})
	require.NoError(t, err)
	k := m.KernelKallsyms()
	require.Equal(t, kgen.Linux6_12, k.Generation)
	ix, err := Open(img, Options{})
	require.NoError(t, err)
	info, _ := ix.Image()
	assert.Equal(t, info.Symbols, k.Symbols)
	type key struct {
		name string
		addr uint64
	}
	want := map[key][]byte{}
	listed := 0
	m.Symbols(Vmlinux, func(s Symbol) bool {
		if k.Lists(s) {
			want[key{s.Name, s.Address}] = append(want[key{s.Name, s.Address}], s.Type)
			listed++
		}
		return true
	})
	assert.Equal(t, info.Symbols, listed)
	percpu := 0
	ix.Symbols(Vmlinux, func(s Symbol) bool {
		types := want[key{s.Name, s.Address}]
		if !assert.NotEmpty(t, types, "%s at %#x: not in the map", s.Name, s.Address) {
			return false
		}
		if s.Type != types[0] {
			assert.Equal(t, byte('A'), s.Type, "%s", s.Name)
			assert.Less(t, s.Address, uint64(1<<32), "%s: a per-cpu offset", s.Name)
			percpu++
		}
		want[key{s.Name, s.Address}] = types[1:]
		return true
	})
	assert.Greater(t, percpu, 100)
}

// TestSlide: a KASLR offset moves vmlinux's addresses (not the absolute
// per-cpu ones), given as such or as the running kernel's _text; a
// snapshot refuses it.
func TestSlide(t *testing.T) {
	const d = 0x1c000000
	in := append([]fakeSym{{0, 'A', "fixed_percpu_data"}}, fakeSyms(40)...)
	img := fakeImage(LayoutTablesLast, in, true)
	for _, o := range []Options{{Slide: d}, {SlideTo: fakeText + d}} {
		ix, err := ParseBytes("fake", img, o)
		require.NoError(t, err)
		s, ok := ix.Find(Vmlinux, "_text", 1)
		require.True(t, ok)
		assert.Equal(t, uint64(fakeText+d), s.Address)
		p, _ := ix.Find(Vmlinux, "fixed_percpu_data", 1)
		assert.Zero(t, p.Address, "absolute: not moved")
		info, _ := ix.Find(Vmlinux, "fn_3_read", 1)
		assert.Equal(t, uint64(fakeText+d+0x30), info.Address)
	}
	_, err := ParseBytes("fake", img, Options{Slide: 1, SlideTo: 2})
	assert.ErrorIs(t, err, ErrSlide)
	text := "ffffffff81000000 T foo\n"
	_, err = ParseBytes("map", []byte(text), Options{SlideTo: 0xffffffff9c000000})
	assert.ErrorIs(t, err, ErrSlide)
	assert.ErrorContains(t, err, "map: cannot slide the kernel's addresses: it lists no _text nor _stext")
	ix, err := ParseBytes("map", []byte(text), Options{})
	require.NoError(t, err)
	snap := filepath.Join(t.TempDir(), "k.snap")
	require.NoError(t, ix.WriteSnapshotFile(snap))
	_, err = Open(snap, Options{Slide: d})
	assert.ErrorIs(t, err, ErrSlide)
	assert.ErrorContains(t, err, "a snapshot keeps the addresses it was written with")
}

// TestImageHostile: a truncated image and a table whose tokens expand a
// name past the kernel's limit are errors naming the file and what is
// wrong, never a panic.
func TestImageHostile(t *testing.T) {
	img := fakeImage(LayoutTablesLast, fakeSyms(300), false)
	var z bytes.Buffer
	w, err := zstd.NewWriter(&z)
	require.NoError(t, err)
	_, err = w.Write(img)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	payload := binary.LittleEndian.AppendUint32(z.Bytes(), uint32(len(img)))
	bz := kimage.BzImageOf(payload)
	ix, err := ParseBytes("vmlinuz", bz, Options{})
	require.NoError(t, err, "the whole bzImage reads")
	info, _ := ix.Image()
	assert.Equal(t, "bzImage", info.Kind)

	_, err = ParseBytes("vmlinuz", bz[:len(bz)-len(payload)/2], Options{})
	assert.ErrorIs(t, err, ErrImage)
	assert.ErrorContains(t, err, "vmlinuz: kernel image not readable: its payload (")
	cut := kimage.BzImageOf(append(z.Bytes()[:z.Len()/2], 0, 0, 0, 0))
	_, err = ParseBytes("vmlinuz", cut, Options{})
	assert.ErrorIs(t, err, ErrImage)
	assert.ErrorContains(t, err, "vmlinuz: kernel image not readable: its payload: ")

	// 300 tokens of "_read": 1,500 bytes from a record the markers accept.
	long := fakeSymsAt(fakeText, 40)
	long[20].name = strings.Repeat("_read", 300)
	_, err = ParseBytes("fake", fakeImage(LayoutTablesLast, long, false), Options{})
	assert.ErrorIs(t, err, ErrImage)
	assert.ErrorContains(t, err, "fake: kernel image not readable: kallsyms symbol 20 decodes to a name of 1500 bytes, longer than the kernel's KSYM_NAME_LEN-1 (511)")
}

// TestMaxSymbols: a stream of more lines than any kernel has symbols
// stops at the bound (a gzip of millions of copies of one line), and the
// bound is the caller's to raise.
func TestMaxSymbols(t *testing.T) {
	line := []byte("ffffffff81000000 t bomb_symbol_name_xxxxxxxxxx\n")
	var z bytes.Buffer
	w, err := zstd.NewWriter(&z)
	require.NoError(t, err)
	blocks := 2000 // two million lines, 96 MB, in a few kB
	if testutil.Sampled() {
		blocks = 200
	}
	for range blocks {
		_, err = w.Write(bytes.Repeat(line, 1000))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	bound := blocks * 1000 / 2
	_, err = Parse("bomb.zst", bytes.NewReader(z.Bytes()), Options{MaxSymbols: bound})
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorContains(t, err, fmt.Sprintf("bomb.zst: input larger than the limit: more than %d lines", bound))
	ix, err := Parse("bomb.zst", bytes.NewReader(z.Bytes()), Options{MaxSymbols: 2 * blocks * 1000})
	require.NoError(t, err)
	assert.Equal(t, blocks*1000, ix.Len())
}

// TestHostileLines: a module name past MODULE_NAME_LEN, a NUL in a name
// and lines ended by CR alone are errors that say so.
func TestHostileLines(t *testing.T) {
	for _, tc := range []struct{ text, msg string }{
		{"ffffffffc0000000 t f\t[" + strings.Repeat("m", 56) + "]\n", "module name of 56 bytes is longer than MODULE_NAME_LEN-1 (55)"},
		{"ffffffffc0000000 t f\t[" + strings.Repeat("m", 1<<20) + "]\n", "module name of 1048576 bytes is longer than MODULE_NAME_LEN-1 (55)"},
		{"ffffffff81000000 T a\x00b\n", "a NUL byte in the symbol name"},
		{"ffffffff81000000 T a\rffffffff81000010 T b\r", "a carriage return inside the line: the file's lines end in CR alone"},
	} {
		_, err := ParseBytes("k", []byte(tc.text), Options{})
		require.Error(t, err, tc.msg)
		assert.ErrorIs(t, err, ErrMalformed)
		assert.ErrorContains(t, err, tc.msg)
	}
	ix, err := ParseBytes("k", []byte("ffffffffc0000000 t f\t["+strings.Repeat("m", 55)+"]\n"), Options{})
	require.NoError(t, err, "55 bytes is the most")
	assert.True(t, ix.HasObject(strings.Repeat("m", 55)))
}

// An ambiguity keeps MaxCandidates candidates and counts them all: a
// name with millions of copies costs the error no more.
func TestCandidatesBounded(t *testing.T) {
	ix, err := ParseBytes("dups", bytes.Repeat([]byte("ffffffff81000000 t dup_name\n"), 100000), Options{})
	require.NoError(t, err)
	for _, pos := range []uint64{0, 100001} {
		_, err = ix.Lookup(Vmlinux, "dup_name", pos)
		var le *LookupError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 100000, le.Count)
		require.Len(t, le.Candidates, MaxCandidates)
		assert.Equal(t, MaxCandidates, le.Candidates[MaxCandidates-1].Pos)
	}
	_, err = ix.Lookup(Vmlinux, "dup_name", 0)
	assert.ErrorContains(t, err, "[8] 0xffffffff81000000 t; ... 99992 more)")
	c, n := ix.appendCandidates(nil, &ix.objs[0], "dup_name", -1)
	assert.Len(t, c, 100000, "Candidates lists them all")
	assert.Equal(t, 100000, n)
}
