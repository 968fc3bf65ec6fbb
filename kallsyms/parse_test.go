// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		text string
		line int
		msg  string
	}{
		{"ffffffff81000000 T a\nT nope\n", 2, "hex address"},
		{"ffffffff81000000 T a\n\nffffffff81000000T b\n", 3, "ADDRESS TYPE NAME"},
		{"ffffffff81000000 T\n", 1, "one-letter type"},
		{"ffffffff81000000 TT name\n", 1, "one-letter type"},
		{"11ffffffff81000000 T a\n", 1, "16 hex digits"},
		{"ffffffff81000000 T a\tnot-a-module\n", 1, "[module]"},
		{"ffffffff81000000 T a\t[]\n", 1, "[module]"},
		{"ffffffff81000000 T " + strings.Repeat("x", 512) + "\n", 1, "KSYM_NAME_LEN"},
		// A module given for the symbol list.
		{"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00>\x00", 1, "an ELF file (a module?), not a symbol list: give /proc/kallsyms, a System.map, a kernel image"},
	}
	for _, tt := range tests {
		_, err := Parse("in.txt", strings.NewReader(tt.text), Options{})
		var pe *ParseError
		require.ErrorAs(t, err, &pe, tt.text)
		assert.ErrorIs(t, err, ErrMalformed)
		assert.Equal(t, tt.line, pe.Line, tt.text)
		assert.Equal(t, "in.txt", pe.File)
		assert.Contains(t, pe.Msg, tt.msg)
	}
	// 511 bytes is the longest name allowed.
	_, err := Parse("in", strings.NewReader("ffffffff81000000 T "+strings.Repeat("x", 511)+"\n"), Options{})
	assert.NoError(t, err)
}

// A compressed symbol list cut short (a partial download) or damaged is
// ErrCorrupt, read from a path (as a stream) or from a reader, and the
// error names the file and the format.
func TestCompressedInputCorrupt(t *testing.T) {
	text, err := os.ReadFile("../testdata/kallsyms/example.txt")
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(bytes.Repeat(text, 50))
	require.NoError(t, zw.Close())
	cut := gz.Bytes()[:gz.Len()/2]
	path := filepath.Join(t.TempDir(), "kallsyms.gz")
	require.NoError(t, os.WriteFile(path, cut, 0o644))
	_, err = Open(path, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.EqualError(t, err, path+": gzip: unexpected EOF")
	_, err = Parse("in.gz", bytes.NewReader(cut), Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.EqualError(t, err, "in.gz: gzip: unexpected EOF")
}

// zeros is /dev/zero: it never ends.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A stream with no line end for a megabyte is no symbol list: it stops
// there (/dev/zero, a disk given by mistake: before, it was read to the
// 4 GiB limit, 5 GB resident after 20 s), with its line number, after a
// good part too.
func TestStreamWithoutLineEnds(t *testing.T) {
	_, err := Parse("/dev/zero", zeros{}, Options{})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, ErrMalformed)
	assert.Equal(t, 1, pe.Line)
	assert.Contains(t, err.Error(), "/dev/zero:1: no line end in ")
	assert.Contains(t, err.Error(), "bytes: not a symbol list")

	text, err := os.ReadFile("../testdata/kallsyms/example.txt")
	require.NoError(t, err)
	_, err = Parse("in", io.MultiReader(bytes.NewReader(text), zeros{}), Options{})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, bytes.Count(text, []byte{'\n'})+1, pe.Line)
	assert.Equal(t, "in", pe.File)
}

func TestParseAcceptsCRLFAndBlanks(t *testing.T) {
	ix := mustParse(t, "ffffffff81000000 T a \r\n\r\nffffffffc0000000 t b\t[m]  \r\n", Options{})
	s, err := ix.Lookup("m", "b", 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffc0000000), s.Address)
	s, err = ix.Lookup("", "a", 0)
	require.NoError(t, err)
	assert.Equal(t, "a", s.Name)
}

func TestRestrictedAndEmpty(t *testing.T) {
	zeroed := "0000000000000000 T _stext\n0000000000000000 t helper\n0000000000000000 t x\t[m]\n"
	_, err := Parse("/proc/kallsyms", strings.NewReader(zeroed), Options{})
	require.ErrorIs(t, err, ErrRestricted)
	assert.Contains(t, err.Error(), "kptr_restrict=0")
	_, err = Parse("e", strings.NewReader("\n\n"), Options{})
	require.ErrorIs(t, err, ErrEmpty)
}

// TestPlaceholder: the System.map in /boot of Debian's kernel image
// packages is this one line (the real one is in the -dbg package); it is
// named for what it is, however it is read, and only when it begins the
// input.
func TestPlaceholder(t *testing.T) {
	const stub = "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"
	assert.True(t, IsPlaceholder([]byte(stub)))
	_, err := ParseBytes("/boot/System.map-6.1.0-57-amd64", []byte(stub), Options{})
	require.ErrorIs(t, err, ErrPlaceholder)
	assert.Equal(t, "/boot/System.map-6.1.0-57-amd64: "+ErrPlaceholder.Error(), err.Error())
	assert.NotErrorIs(t, err, ErrMalformed)
	_, err = Parse("<stdin>", strings.NewReader(stub), Options{})
	require.ErrorIs(t, err, ErrPlaceholder)
	path := filepath.Join(t.TempDir(), "System.map-6.1.0-57-amd64")
	require.NoError(t, os.WriteFile(path, []byte(stub), 0o644))
	for _, o := range []Options{{}, {MapText: true}, {NoMap: true}} {
		_, err = Open(path, o)
		require.ErrorIs(t, err, ErrPlaceholder, "%+v", o)
	}
	// The test is on the words, whatever follows "in the": the fast path
	// and the line-by-line one must agree (FuzzParse found them apart).
	for _, s := range []string{"ffffffffffffffff B The real System.map is in the\n", "ffffffffffffffff B The real System.map is in the"} {
		_, err = ParseBytes("map", []byte(s), Options{})
		require.ErrorIs(t, err, ErrPlaceholder, "%q", s)
	}
	// The same line after a real one is a malformed line 2.
	_, err = ParseBytes("map", []byte("ffffffff81000000 T _stext\n"+stub), Options{})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Line)
	assert.False(t, IsPlaceholder([]byte("ffffffff81000000 T _stext\n")))
}

func TestUnsortedVmlinuxIsSortedByAddress(t *testing.T) {
	// sympos counts in address order, whatever the file order.
	ix := mustParse(t, "ffffffff81000300 t dup\nffffffff81000100 t dup\nffffffff81000200 T x\n", Options{})
	s, err := ix.Lookup("", "dup", 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffff81000100), s.Address)
}

func TestModuleLinesSplitAcrossTheFile(t *testing.T) {
	// Not what the kernel prints, but an index must still group them.
	ix := mustParse(t, "ffffffff81000000 T a\nffffffffc0000000 t h\t[m]\nffffffffc1000000 t h\t[n]\nffffffffc0000100 t h\t[m]\n", Options{})
	s, err := ix.Lookup("m", "h", 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffc0000100), s.Address)
	assert.Equal(t, 2, ix.Objects()[1].Symbols)
}

// A table filled in parts by several workers must answer every lookup as
// one filled by a single goroutine, chains in kallsyms order included,
// also when probes cross from one part into the next.
func TestFillSplit(t *testing.T) {
	var b strings.Builder
	type want struct {
		name string
		pos  uint64
		addr uint64
	}
	var all []want
	seen := map[string]uint64{}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 40000 {
		name := fmt.Sprintf("sym_%d", r.IntN(15000)) // many repeated names
		seen[name]++
		addr := 0xffffffff81000000 + uint64(i)*16
		fmt.Fprintf(&b, "%016x t %s\n", addr, name)
		all = append(all, want{name, seen[name], addr})
	}
	ix, err := ParseBytes("split", []byte(b.String()), Options{})
	require.NoError(t, err)
	hashes := ix.hashAll()
	o := &ix.objs[0]
	late := 0
	for _, w := range []int{1, 2, 3, 7} {
		clear(ix.slots)
		clear(ix.next)
		if w == 1 {
			ix.fill(o, hashes, o.end, o.start)
		} else {
			late += ix.fillSplit(o, hashes, w, 2, nil, false)
		}
		for _, x := range all {
			s, err := ix.Lookup(Vmlinux, x.name, x.pos)
			require.NoError(t, err, "w=%d %s,%d", w, x.name, x.pos)
			require.Equal(t, x.addr, s.Address, "w=%d %s,%d", w, x.name, x.pos)
		}
		_, err := ix.Lookup(Vmlinux, all[0].name, seen[all[0].name]+1)
		require.ErrorIs(t, err, ErrNoSuchPosition)
	}
	require.Positive(t, late, "no probe crossed a part's end: the test does not cover the late pass")

	// Built by ParseBytes, vmlinux's table came from the runs its chunks
	// sorted while they were parsed (no fill scratch kept) when it is
	// filled on several cores; on one, nothing was sorted.
	if splitTable(o.end - o.start) {
		require.Zero(t, ix.scratch)
	}
	for _, c := range parseChunks(t, []byte(b.String())) {
		require.Equal(t, splitTable(o.end-o.start), c.vmRun.start != nil)
	}
}

// parseChunks parses text as ParseBytes does and returns its chunks.
func parseChunks(t *testing.T, text []byte) []*chunk {
	p := newParser("chunks", nil)
	p.dispatch(text, 0, len(text), &wholeInput{data: text})
	_, err := p.finish(text)
	require.NoError(t, err)
	return p.chunks
}

// TestAllocationsPerModule checks that an index's allocations do not grow
// with the modules listed: each object's name is copied with its chunk's
// others at once, and the object tables are sized from the runs of lines.
func TestAllocationsPerModule(t *testing.T) {
	text := func(modules int) []byte {
		var b bytes.Buffer
		for i := range 20_000 {
			fmt.Fprintf(&b, "%016x T sym_%d\n", 0xffffffff81000000+uint64(i)*16, i)
		}
		for i := range 10_000 {
			fmt.Fprintf(&b, "%016x t mod_%d\t[m%d]\n", 0xffffffffc0000000+uint64(i)*16, i, i*modules/10_000)
		}
		return b.Bytes()
	}
	allocs := func(modules int) float64 {
		data := text(modules)
		return testing.AllocsPerRun(20, func() {
			if _, err := ParseBytes("k", data, Options{Workers: 2}); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(4), allocs(400)
	t.Logf("allocations: %.0f with 4 modules, %.0f with 400", few, many)
	require.Less(t, many-few, 40.0, "allocations that grow with the modules")
}
