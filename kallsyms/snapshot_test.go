// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkyText is an index's text that fills compact snapshot chunks in
// every way: vmlinux large enough that its table is filled by all
// workers from the chunks' sorted runs (splitFill symbols or more), with
// names repeated (chains), modules with their symbols out of address
// order and names repeated across them, an absolute symbol, and the
// pseudo-modules.
func chunkyText() string {
	var b strings.Builder
	for i := range splitFill + 3000 {
		fmt.Fprintf(&b, "%016x t fn_%d\n", 0xffffffff81000000+uint64(i)*0x30, i%(splitFill-100))
	}
	fmt.Fprintf(&b, "%016x A __per_cpu_end\n", 0x2c000)
	for m := range 5 {
		for i := range 700 {
			// Newest module first, each in symtab order: addresses go
			// back and forth.
			a := 0xffffffffc0400000 - uint64(m)<<20 + uint64((i*7919)%700)*0x40
			fmt.Fprintf(&b, "%016x t helper_%d\t[mod%d]\n", a, i%300, m)
		}
	}
	b.WriteString("ffffffffc0003000 t ftrace_trampoline\t[__builtin__ftrace]\n")
	b.WriteString("ffffffffc0004000 t bpf_prog_x\t[bpf]\n")
	return b.String()
}

// TestSnapshotChunks: a compact snapshot cut into chunks of every size
// (one symbol's names, chunks that end inside an object and across
// several, the writer's) loads into the same index, with the same
// addresses' answers, for exact and LTO matching.
func TestSnapshotChunks(t *testing.T) {
	text := chunkyText()
	for _, lto := range []bool{false, true} {
		ix := mustParse(t, text, Options{LTO: lto})
		chunks := []int{1000, chunkNameBytes}
		if lto {
			chunks = []int{77777}
		}
		for _, chunk := range chunks {
			b, err := compactSnapshot(ix.snapshotParts(chunk), lto)
			require.NoError(t, err)
			snap, err := ParseBytes("k.snap", b, Options{})
			require.NoError(t, err, "chunks of %d", chunk)
			sameIndex(t, ix, snap)
			require.Equal(t, ix.Objects(), snap.Objects())
			require.Equal(t, lto, snap.LTO())
			for _, a := range []uint64{0xffffffff81000000, 0xffffffff81000031, 0xffffffffc0400000 + 0x40*699 + 3, 0xffffffffc0003000} {
				a1, ok1 := ix.Addr(a)
				a2, ok2 := snap.Addr(a)
				require.Equal(t, ok1, ok2)
				require.Equal(t, a1, a2, "%#x", a)
			}
			s, err := snap.Lookup("vmlinux", "fn_7", 2)
			require.NoError(t, err)
			require.Equal(t, uint64(0xffffffff81000000+uint64(splitFill-100+7)*0x30), s.Address)
		}
		// A chunk per symbol.
		small := mustParse(t, sample, Options{LTO: lto})
		parts := small.snapshotParts(1)
		require.Len(t, parts.frames, 1+2*small.Len())
		b, err := compactSnapshot(parts, lto)
		require.NoError(t, err)
		snap, err := ParseBytes("k.snap", b, Options{})
		require.NoError(t, err)
		sameIndex(t, small, snap)
	}
}

// TestSnapshotSmallerThanText: the compact form's frames (its names and
// columns) are smaller than the list compressed whole by zstd at its
// highest level (the columns compress better apart); with its tables it
// is less than two thirds of the text.
func TestSnapshotSmallerThanText(t *testing.T) {
	ix := mustParse(t, chunkyText(), Options{})
	var snap bytes.Buffer
	require.NoError(t, ix.WriteSnapshot(&snap))
	text := []byte(chunkyText())
	whole, err := compactSnapshot(compactParts{frames: [][]byte{text}}, false) // one zstd frame of the text
	require.NoError(t, err)
	le := binary.LittleEndian
	b := snap.Bytes()
	tables := 8 * (int(le.Uint32(b[32:])) + int(le.Uint32(b[36:])))
	assert.Equal(t, 8*(len(ix.slots)+ix.Len()-countZero(ix.next)), tables)
	assert.Less(t, len(b)-tables, len(whole)-headerSize-8)
	assert.Less(t, len(b), len(text)*2/3)
}

func countZero(a []uint32) int {
	n := 0
	for _, x := range a {
		if x == 0 {
			n++
		}
	}
	return n
}

// TestSnapshotLazy: loading a compact snapshot decodes none of its
// chunks; a lookup decodes the chunks of the symbols it reads (a chain's
// across chunks too), and DecodeAll the rest; the answers are the text's.
func TestSnapshotLazy(t *testing.T) {
	ref := mustParse(t, sample, Options{})
	b, err := compactSnapshot(ref.snapshotParts(20), false)
	require.NoError(t, err)
	ix, err := ParseBytes("k.snap", b, Options{})
	require.NoError(t, err)
	l := ix.lazy
	require.NotNil(t, l)
	decoded := func() (ks []int) {
		for k := range l.chunks {
			if l.done[k].Load() {
				ks = append(ks, k)
			}
		}
		return ks
	}
	require.Greater(t, len(l.chunks), 6)
	require.Empty(t, decoded())
	require.Equal(t, ref.Objects(), ix.Objects(), "from the table of contents")
	chunkOf := func(i uint32) int {
		for k := range l.chunks {
			if l.chunks[k].s0 <= i && i < l.chunks[k].s1 {
				return k
			}
		}
		return -1
	}
	// vfs_read (symbol 2) is unique: its chunk alone.
	s, err := ix.Lookup("", "vfs_read", 0)
	require.NoError(t, err)
	require.Equal(t, uint64(0xffffffff81000200), s.Address)
	require.Equal(t, []int{chunkOf(2)}, decoded())
	// helper's second occurrence (symbol 3): the chain from symbol 1.
	s, err = ix.Lookup("", "helper", 2)
	require.NoError(t, err)
	require.Equal(t, uint64(0xffffffff81000300), s.Address)
	require.NotEqual(t, chunkOf(1), chunkOf(3))
	require.Equal(t, []int{chunkOf(1), chunkOf(3)}, decoded())
	require.Less(t, len(decoded()), len(l.chunks))
	require.NoError(t, ix.DecodeAll())
	require.Len(t, decoded(), len(l.chunks))
	sameIndex(t, ref, ix)
	// Written again, in every form, from an index none of whose chunks
	// is decoded yet: the writers decode them first.
	for format, write := range writers {
		fresh, err := ParseBytes("k.snap", b, Options{})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, write(fresh, &buf), format)
		again, err := ParseBytes("again", buf.Bytes(), Options{})
		require.NoError(t, err, format)
		sameIndex(t, ref, again)
	}
	// An index that is not a compact snapshot's has nothing to decode.
	require.NoError(t, ref.DecodeAll())
	// Nor has one asked for LTO matching that the file was not written
	// with: its tables are rebuilt, every chunk decoded on load.
	lto, err := ParseBytes("k.snap", b, Options{LTO: true})
	require.NoError(t, err)
	require.Nil(t, lto.lazy)
	require.True(t, lto.LTO())
	s, err = lto.Lookup("", "c_stop", 0)
	require.ErrorIs(t, err, ErrAmbiguous, "c_stop and c_stop.llvm.1234: %v", s)
}

// compactSample returns the sample's compact snapshot's parts, and a
// function that lays out a snapshot from parts with a right checksum:
// what a forger (not a disk error) produces.
func compactSample(t *testing.T) (compactParts, func(compactParts) []byte) {
	ix := mustParse(t, sample, Options{})
	return ix.snapshotParts(40), func(parts compactParts) []byte {
		b, err := compactSnapshot(parts, false)
		require.NoError(t, err)
		return b
	}
}

func clone(parts compactParts) compactParts {
	c := parts
	c.frames = make([][]byte, len(parts.frames))
	for i, p := range parts.frames {
		c.frames[i] = bytes.Clone(p)
	}
	c.tables = bytes.Clone(parts.tables)
	return c
}

// chunkSymbols is how many symbols chunk k of p holds, from the size of
// its columns and its count of address planes (the table of contents'
// last bytes, one a chunk).
func chunkSymbols(p *compactParts, k int) int {
	nchunk := (len(p.frames) - 1) / 2
	planes := int(p.frames[0][len(p.frames[0])-nchunk+k])
	return (len(p.frames[1+2*k]) - 8) / (fixedColumns + planes)
}

// withFrame is the compact snapshot b with frame k stored as the bytes
// stored, its checksum made right again.
func withFrame(b []byte, k int, stored []byte) []byte {
	le := binary.LittleEndian
	nframe := int(le.Uint32(b[16:]))
	at := headerSize + 8*nframe
	for j := range k {
		at += int(le.Uint32(b[headerSize+8*j:]))
	}
	end := at + int(le.Uint32(b[headerSize+8*k:]))
	framesEnd := headerSize + 8*nframe
	for j := range nframe {
		framesEnd += int(le.Uint32(b[headerSize+8*j:]))
	}
	tables := b[align8(uint64(framesEnd)):]
	out := append(bytes.Clone(b[:at]), stored...)
	out = append(out, b[end:framesEnd]...)
	out = append(out, make([]byte, int(align8(uint64(len(out))))-len(out))...)
	out = append(out, tables...)
	le.PutUint32(out[headerSize+8*k:], uint32(len(stored)))
	le.PutUint64(out[24:], compactChecksum(out))
	return out
}

// TestSnapshotForged: a compact snapshot whose checksum is right but whose
// contents lie is refused with an error that says what is wrong: when it
// is loaded, or, for what is inside a chunk, when the chunk is decoded
// (DecodeAll, and a lookup's note).
func TestSnapshotForged(t *testing.T) {
	good, build := compactSample(t)
	require.Greater(t, len(good.frames), 5, "several chunks")
	le := binary.LittleEndian
	edit := func(f func(p *compactParts)) []byte {
		p := clone(good)
		f(&p)
		return build(p)
	}
	nobj := 5
	nchunk := (len(good.frames) - 1) / 2
	record := func(p *compactParts, i int) []byte {
		return p.frames[0][len(p.frames[0])-nchunk-tocObject*(nobj-i):]
	}
	cases := map[string]struct {
		file []byte
		want string
	}{
		"no symbols' names": {edit(func(p *compactParts) { le.PutUint32(p.frames[0][8:], 0) }), "bytes of names for"},
		"toc counts":        {edit(func(p *compactParts) { le.PutUint32(p.frames[0][12:], 99) }), "its counts need"},
		"no objects":        {edit(func(p *compactParts) { le.PutUint32(p.frames[0][0:], 0) }), "its counts need"},
		"more symbols":      {edit(func(p *compactParts) { le.PutUint32(p.frames[0][4:], 18) }), "objects cover 17 of 18 symbols"},
		"object name":       {edit(func(p *compactParts) { p.frames[0][tocFixed+6] = 'X' }), `first object is "Xmlinux", not vmlinux`},
		"object twice": {edit(func(p *compactParts) {
			copy(p.frames[0][bytes.LastIndex(p.frames[0], []byte("bpf")):], "xfs")
		}), `object "xfs" listed twice`},
		"object range": {edit(func(p *compactParts) {
			le.PutUint32(record(p, 0)[4:], 100)
		}), `object "vmlinux": symbol range 0-100 does not follow 0 within 17 symbols`},
		"table offset": {edit(func(p *compactParts) {
			le.PutUint32(record(p, 1)[8:], le.Uint32(record(p, 1)[8:])+1)
		}), `object "xfs": hash table at`},
		"table size": {edit(func(p *compactParts) {
			le.PutUint32(record(p, 0)[12:], le.Uint32(record(p, 0)[12:])-1)
		}), `object "vmlinux": hash table at 0,`},
		"slots": {edit(func(p *compactParts) {
			p.tables = append(p.tables[:len(p.tables)-8*int(p.links)], make([]byte, 8+8*int(p.links))...)
			p.slots++
		}), "tables fill"},
		"chain backwards": {edit(func(p *compactParts) {
			l := p.tables[8*p.slots:]
			le.PutUint32(l[4:], le.Uint32(l))
		}), "chain to"},
		"chain past its object": {edit(func(p *compactParts) {
			l := p.tables[8*p.slots:]
			le.PutUint32(l[4:], 17)
		}), "chain to 17 leaves object"},
		"links out of order": {edit(func(p *compactParts) {
			l := p.tables[8*p.slots:]
			copy(l[8:16], l[:8])
		}), "out of order"},
		"columns size":         {edit(func(p *compactParts) { p.frames[1] = p.frames[1][:len(p.frames[1])-1] }), "chunk 0: "},
		"address planes":       {edit(func(p *compactParts) { p.frames[0][len(p.frames[0])-nchunk] = 9 }), "chunk 0: 9 address planes"},
		"fewer address planes": {edit(func(p *compactParts) { p.frames[0][len(p.frames[0])-nchunk]-- }), "chunk 0: "},
		// Without its last chunk (laid out again: its frame count and its
		// address planes are right for what it holds).
		"chunk missing": {edit(func(p *compactParts) {
			p.frames = p.frames[:len(p.frames)-2]
			p.frames[0] = p.frames[0][:len(p.frames[0])-1] // the last chunk's planes
		}), "the table of contents says 17 and"},
	}
	require.GreaterOrEqual(t, good.links, uint32(2), "chains to forge")
	for name, c := range cases {
		_, err := ParseBytes("k.snap", c.file, Options{})
		require.ErrorIs(t, err, ErrMalformed, name)
		require.ErrorContains(t, err, "k.snap: snapshot: malformed input: ", name)
		require.ErrorContains(t, err, c.want, name)
	}
	// Inside a chunk: found when the chunk is decoded.
	inChunk := map[string]struct {
		file []byte
		want string
	}{
		"name lengths": {edit(func(p *compactParts) {
			m := chunkSymbols(p, 0)
			p.frames[1][8+m]-- // the first name one byte shorter
		}), "chunk 0: its names are"},
		"name past its chunk's": {edit(func(p *compactParts) {
			m := chunkSymbols(p, 0)
			p.frames[1][8+m]++
		}), "name out of range"},
		"name length zero": {edit(func(p *compactParts) {
			m := chunkSymbols(p, 0)
			p.frames[1][8+m] = 0
		}), "symbol 0: name out of range"},
		"name too long": {edit(func(p *compactParts) {
			m := chunkSymbols(p, 0)
			p.frames[1][8+2*m] = 2 // 512 bytes and more
		}), "symbol 0: name out of range"},
		"not lz4": {edit(func(p *compactParts) {}), "chunk 0's names: it does not decode to the "},
	}
	for name, c := range inChunk {
		if name == "not lz4" {
			// The first names frame (the third: after the table of
			// contents and the first chunk's columns) stored as a block
			// one byte shorter than its names, whose tokens ask for
			// more literals than it holds.
			n := int(le.Uint32(c.file[headerSize+20:]))
			c.file = withFrame(c.file, 2, bytes.Repeat([]byte{0xff}, n-1))
		}
		ix, err := ParseBytes("k.snap", c.file, Options{})
		require.NoError(t, err, name)
		// The chunk's symbols are not found; the note says why.
		_, err = ix.Lookup("vmlinux", "_stext", 0)
		require.ErrorIs(t, err, ErrNotFound, name)
		require.ErrorContains(t, err, c.want, name)
		err = ix.DecodeAll()
		require.ErrorIs(t, err, ErrMalformed, name)
		require.ErrorContains(t, err, "k.snap: snapshot: malformed input: ", name)
		require.ErrorContains(t, err, c.want, name)
		// The other chunks answer.
		s, err := ix.Lookup("xfs", "xfs_iget", 0)
		require.NoError(t, err, name)
		require.Equal(t, uint64(0xffffffffc0002100), s.Address, name)
	}
	// Every address zero: kptr_restrict, as in a text.
	p := clone(good)
	for k := 1; k < len(p.frames); k += 2 {
		m := chunkSymbols(&p, k/2)
		clear(p.frames[k][:8])
		clear(p.frames[k][8+3*m:])
	}
	for i := range nobj {
		clear(record(&p, i)[16:32])
	}
	_, err := ParseBytes("k.snap", build(p), Options{})
	require.ErrorIs(t, err, ErrRestricted)
}

// TestSnapshotForgedFrames: a frame table that lies, with a right
// checksum, is refused before anything it claims is allocated.
func TestSnapshotForgedFrames(t *testing.T) {
	good, build := compactSample(t)
	b := build(good)
	le := binary.LittleEndian
	forge := func(f func(b []byte)) []byte {
		c := bytes.Clone(b)
		f(c)
		le.PutUint64(c[24:], compactChecksum(c))
		return c
	}
	nframe := int(le.Uint32(b[16:]))
	cases := map[string]struct {
		file []byte
		want string
	}{
		"even frames":  {forge(func(c []byte) { le.PutUint32(c[16:], 4) }), "bad frame count 4"},
		"no frames":    {forge(func(c []byte) { le.PutUint32(c[16:], 0) }), "bad frame count 0"},
		"slots in use": {forge(func(c []byte) { le.PutUint32(c[20:], le.Uint32(c[20:])+8) }), "frames and tables add up to"},
		"frame table":  {forge(func(c []byte) { le.PutUint32(c[16:], 1<<16+1) }), "truncated frame table"},
		"stored size":  {forge(func(c []byte) { le.PutUint32(c[headerSize:], le.Uint32(c[headerSize:])+8) }), "frames and tables add up to"},
		"slot count":   {forge(func(c []byte) { le.PutUint32(c[32:], 1<<32-1) }), "frames and tables add up to"},
		// One slot marked in use more than the packed slots: the sizes
		// still add up, the bitmap does not.
		"slot bitmap": {forge(func(c []byte) {
			at := headerSize + 8*nframe
			for k := range nframe {
				at += int(le.Uint32(c[headerSize+8*k:]))
			}
			at = (at + 7) &^ 7
			for i := 0; i < int(le.Uint32(c[32:])); i++ {
				if w := c[at+8*(i/64):]; le.Uint64(w)&(1<<(i%64)) == 0 {
					le.PutUint64(w, le.Uint64(w)|1<<(i%64))
					return
				}
			}
		}), "the slot bitmap does not mark"},
		// 4 GiB from a file of a few hundred bytes.
		"decoded size": {forge(func(c []byte) { le.PutUint32(c[headerSize+8+4:], 1<<32-1) }), "more than a file of"},
		// Names moved from one chunk to the next: the totals add up.
		"frame content": {forge(func(c []byte) {
			at := headerSize + 8*(nframe-1) + 4 // the last names frame
			le.PutUint32(c[at:], le.Uint32(c[at:])+1)
			le.PutUint32(c[at-16:], le.Uint32(c[at-16:])-1)
		}), "the frame table says"},
	}
	for name, c := range cases {
		var err error
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		var ix *Index
		ix, err = ParseBytes("k.snap", c.file, Options{})
		if err == nil {
			err = ix.DecodeAll() // a frame's content: found when it is decoded
		}
		runtime.ReadMemStats(&ms1)
		require.ErrorIs(t, err, ErrMalformed, name)
		require.ErrorContains(t, err, c.want, name)
		require.Less(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(4<<20), name)
	}
	_, err := ParseBytes("k.snap", b, Options{})
	require.NoError(t, err)
}

// TestSnapshotVersions: this build reads compact version 11 and raw
// version 6; any other version, an older one (1-5 and 7-10, which no
// release wrote) or a newer one, is refused with what to do.
func TestSnapshotVersions(t *testing.T) {
	ix := mustParse(t, chunkyText(), Options{})
	var buf bytes.Buffer
	require.NoError(t, ix.WriteSnapshot(&buf))
	require.Equal(t, uint32(11), binary.LittleEndian.Uint32(buf.Bytes()[8:]))
	for _, v := range []uint32{1, 3, 4, 5, 7, 8, 9, 10} {
		b := bytes.Clone(buf.Bytes())
		binary.LittleEndian.PutUint32(b[8:], v)
		_, err := ParseBytes("old.snap", b, Options{})
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorContains(t, err, fmt.Sprintf("old.snap: snapshot: malformed input: version %d, which this build does not read (it reads 11 and 6): write the snapshot again with this build", v))
	}
	b := bytes.Clone(buf.Bytes())
	binary.LittleEndian.PutUint32(b[8:], 12)
	_, err := ParseBytes("new.snap", b, Options{})
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "new.snap: snapshot: malformed input: version 12, from a newer klpresolve (this build reads 11 and 6): use that klpresolve, or write the snapshot again with this one")
}

// TestSnapshotTooRepetitive: an index that compresses more than 64-fold
// (a name repeated 200,000 times at one address) is written and loads:
// its tables and chains, stored as they are, are most of the file, which
// the loader's bound on what the frames decode to counts.
func TestSnapshotTooRepetitive(t *testing.T) {
	text := strings.Repeat("ffffffff81000000 t a\n", 200000)
	ix := mustParse(t, text, Options{})
	var buf bytes.Buffer
	require.NoError(t, ix.WriteSnapshot(&buf))
	snap, err := ParseBytes("k.snap", buf.Bytes(), Options{})
	require.NoError(t, err)
	s, err := snap.Lookup("", "a", 200000)
	require.NoError(t, err)
	require.Equal(t, Symbol{Name: "a", Object: Vmlinux, Address: 0xffffffff81000000, Type: 't', Pos: 200000}, s)
	// The frames alone would be refused (the bound the writer checks).
	_, err = compactSnapshot(compactParts{frames: [][]byte{make([]byte, 1<<21), make([]byte, 8+fixedColumns), {'a'}}}, false)
	require.ErrorIs(t, err, ErrTooRepetitive)
}

// TestSnapshotDeterministic: the same index gives the same bytes, however
// many cores compress its frames and whatever form it was read from (a
// text, a raw snapshot), so snapshots can be compared
// and cached by content.
func TestSnapshotDeterministic(t *testing.T) {
	text := mustParse(t, chunkyText(), Options{})
	write := func(ix *Index, procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var buf bytes.Buffer
		require.NoError(t, ix.WriteSnapshot(&buf))
		return buf.Bytes()
	}
	want := write(text, 2)
	require.Equal(t, want, write(text, 1))
	require.Equal(t, want, write(text, 3))
	for format, w := range map[string]func(*Index, io.Writer) error{"raw": (*Index).WriteSnapshotRaw} {
		var buf bytes.Buffer
		require.NoError(t, w(text, &buf))
		from, err := ParseBytes("sample", buf.Bytes(), Options{})
		require.NoError(t, err)
		require.Equal(t, want, write(from, 2), "from %s", format)
	}
}

// TestSnapshotTruncated: a snapshot cut off anywhere says so, and where.
func TestSnapshotTruncated(t *testing.T) {
	good, build := compactSample(t)
	b := build(good)
	nframe := int(binary.LittleEndian.Uint32(b[16:]))
	table := headerSize + 8*nframe
	// (Cut inside its magic, it is not a snapshot: read as a text.)
	for n := len(snapshotMagic); n < len(b); n++ {
		_, err := ParseBytes("cut.snap", b[:n:n], Options{})
		require.ErrorIs(t, err, ErrMalformed, "cut at %d", n)
		switch {
		case n < headerSize:
			require.ErrorContains(t, err, fmt.Sprintf("cut.snap: snapshot: malformed input: truncated header (%d bytes)", n))
		case n < table:
			require.ErrorContains(t, err, fmt.Sprintf("truncated frame table (%d bytes, %d frames)", n, nframe))
		default:
			require.ErrorContains(t, err, fmt.Sprintf("truncated: %d bytes, its frames and tables need %d", n, len(b)))
		}
	}
	raw, _, _ := rawSample(t)
	for n := rawHeaderSize; n < len(raw); n += 7 {
		_, err := ParseBytes("cut.raw", raw[:n:n], Options{})
		require.ErrorIs(t, err, ErrMalformed, "cut at %d", n)
		require.ErrorContains(t, err, fmt.Sprintf("cut.raw: snapshot: malformed input: truncated: %d bytes, its header says %d", n, len(raw)))
	}
}

// A snapshot on a stream of unknown size is read as far as its header
// declares and a byte more: followed by bytes that never end, or a
// header followed by zeros, it is refused at once instead of read to the
// 4 GiB input limit; on its own it loads as from a file (every format).
func TestSnapshotStreamBounded(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	for format, write := range writers {
		var b bytes.Buffer
		require.NoError(t, write(ix, &b), format)
		got, err := Parse("stdin", bytes.NewReader(b.Bytes()), Options{})
		require.NoError(t, err, format)
		assert.Equal(t, ix.Len(), got.Len(), format)
		if format == "zstd v1" {
			continue // it declares no size: read to the end
		}
		_, err = Parse("stdin", io.MultiReader(bytes.NewReader(b.Bytes()), zeros{}), Options{})
		require.ErrorIs(t, err, ErrMalformed, format)
		_, err = Parse("stdin", io.MultiReader(bytes.NewReader(b.Bytes()[:12]), zeros{}), Options{})
		require.ErrorIs(t, err, ErrMalformed, format)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, lto := range []bool{false, true} {
		for format, write := range writers {
			ix := mustParse(t, sample, Options{LTO: lto})
			var buf bytes.Buffer
			require.NoError(t, write(ix, &buf), format)
			snap, err := Parse("snap", bytes.NewReader(buf.Bytes()), Options{})
			require.NoError(t, err)
			assert.Equal(t, ix.Objects(), snap.Objects())
			assert.Equal(t, lto, snap.LTO())
			assert.Equal(t, "sample", snap.Source())
			for _, o := range ix.Objects() {
				ix.Symbols(o.Name, func(s Symbol) bool {
					c1 := ix.Candidates(o.Name, s.Name)
					c2 := snap.Candidates(o.Name, s.Name)
					assert.Equal(t, c1, c2)
					s1, e1 := ix.Lookup(o.Name, s.Name, 0)
					s2, e2 := snap.Lookup(o.Name, s.Name, 0)
					assert.Equal(t, s1, s2)
					assert.Equal(t, e1 == nil, e2 == nil)
					return true
				})
			}
			a1, _ := ix.Addr(0xffffffff81000010)
			a2, _ := snap.Addr(0xffffffff81000010)
			assert.Equal(t, a1, a2, format)
		}
	}
}

// Options.LTO on a snapshot written without it: the zstd form, whose
// tables are rebuilt, matches with LTO; a raw one, whose tables are
// stored, is refused rather than silently matching exactly. Every path
// that reads a snapshot (a file mapped or read, a stream, bytes) agrees.
// A snapshot written with LTO matches that way without the option.
func TestSnapshotLTOOption(t *testing.T) {
	exact := mustParse(t, sample, Options{})
	for format, write := range writers {
		var buf bytes.Buffer
		require.NoError(t, write(exact, &buf))
		path := filepath.Join(t.TempDir(), "k.snap")
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		opts := Options{LTO: true}
		for how, load := range map[string]func() (*Index, error){
			"mapped": func() (*Index, error) { return Open(path, opts) },
			"read":   func() (*Index, error) { return Open(path, Options{LTO: true, NoMap: true}) },
			"stream": func() (*Index, error) { return Parse("k.snap", bytes.NewReader(buf.Bytes()), opts) },
			"bytes":  func() (*Index, error) { return ParseBytes("k.snap", bytes.Clone(buf.Bytes()), opts) },
		} {
			ix, err := load()
			if format == "raw" {
				require.ErrorIs(t, err, ErrSnapshotExact, how)
				require.ErrorContains(t, err, "k.snap: raw snapshot written for exact matching", how)
				continue
			}
			require.NoError(t, err, how)
			require.True(t, ix.LTO(), how)
			_, err = ix.Lookup("vmlinux", "c_stop", 0)
			require.ErrorIs(t, err, ErrAmbiguous, "%s: c_stop and c_stop.llvm.1234", how)
		}
		ix, err := Open(path, Options{})
		require.NoError(t, err)
		require.False(t, ix.LTO())
	}
	lto := mustParse(t, sample, Options{LTO: true})
	for format, write := range writers {
		var buf bytes.Buffer
		require.NoError(t, write(lto, &buf))
		ix, err := ParseBytes("k.snap", buf.Bytes(), Options{})
		require.NoError(t, err, format)
		require.True(t, ix.LTO(), format)
	}
}

func TestSnapshotCorruption(t *testing.T) {
	for format, write := range writers {
		t.Run(format, func(t *testing.T) { snapshotCorruption(t, write) })
	}
}

func snapshotCorruption(t *testing.T, write func(*Index, io.Writer) error) {
	ix := mustParse(t, sample, Options{})
	var buf bytes.Buffer
	require.NoError(t, write(ix, &buf))
	good := buf.Bytes()
	for n := 0; n < len(good); n += 7 {
		_, err := ParseBytes("trunc", append([]byte(nil), good[:n]...), Options{})
		require.Error(t, err, "truncated at %d", n)
	}
	for i := 8; i < len(good); i++ {
		b := append([]byte(nil), good...)
		b[i] ^= 0x40
		got, err := ParseBytes("flip", b, Options{})
		if err == nil {
			// Some zstd header bits do not change the content; then the
			// index must be exactly the original.
			assert.Equal(t, ix.Objects(), got.Objects(), "flipped byte %d", i)
			continue
		}
		assert.True(t, errors.Is(err, ErrMalformed), "byte %d: %v", i, err)
	}
}

// TestPackBits: numbers of every width from 1 to 64 bits come back as
// they were packed, including those that straddle two words.
func TestPackBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for w := uint(1); w <= 64; w++ {
		vals := make([]uint64, 200)
		for i := range vals {
			vals[i] = r.Uint64() & (1<<w - 1)
		}
		vals[0], vals[1] = 0, 1<<w-1
		b := packBits(nil, vals, w)
		require.Equal(t, int(packedBytes(uint64(len(vals)), w)), len(b), "w=%d", w)
		for i, v := range vals {
			require.Equal(t, v, unpackBits(b, uint64(i), w), "w=%d, number %d", w, i)
		}
	}
	require.Empty(t, packBits(nil, nil, 5))
}

// TestPackedTables: a table packed (packTables) reads back in place
// (packedTables) as the slots it was packed from, empty ones included,
// in every word of its bitmap.
func TestPackedTables(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const nslot = 300
	var want [nslot]slot
	rec := make([]byte, 8*nslot)
	for i := range want {
		if r.IntN(3) > 0 {
			want[i] = slot{r.Uint32(), uint32(r.IntN(nslot-1) + 1)}
		}
		binary.LittleEndian.PutUint32(rec[8*i:], want[i].hash)
		binary.LittleEndian.PutUint32(rec[8*i+4:], want[i].idx)
	}
	rec = binary.LittleEndian.AppendUint32(rec, 17) // a link: symbol 17, next 40
	rec = binary.LittleEndian.AppendUint32(rec, 41)
	b, used, err := packTables(rec, nslot)
	require.NoError(t, err)
	file := append(make([]byte, 40), b...) // the header's place
	binary.LittleEndian.PutUint32(file[20:], used)
	binary.LittleEndian.PutUint32(file[32:], nslot)
	binary.LittleEndian.PutUint32(file[36:], 1)
	tb := compactTables(file, 40)
	require.Equal(t, uint64(len(file)), tb.end)
	require.Equal(t, uint(9), tb.w)
	require.True(t, bitmapOK(file[tb.at:tb.recsAt], nslot, uint64(used)))
	p := newPackedTables(file, tb, make([]uint32, packedRanks(tb)))
	for i := range want {
		require.Equal(t, want[i], p.at(uint32(i)), "slot %d", i)
	}
	links := file[tb.linksAt:tb.end]
	require.Equal(t, []uint64{17, 41}, []uint64{unpackBits(links, 0, tb.w), unpackBits(links, 1, tb.w)})
}

// TestPackTablesWidth: a symbol number too wide for the table's width is
// refused, not cut (which would corrupt its neighbours).
func TestPackTablesWidth(t *testing.T) {
	rec := make([]byte, 8*4)
	binary.LittleEndian.PutUint32(rec[4:], 8) // index+1 8 in a table of 4 slots: 3 bits
	_, _, err := packTables(rec, 4)
	require.ErrorContains(t, err, "symbol number 8 does not fit the 3 bits of a table of 4 slots")
	binary.LittleEndian.PutUint32(rec[:4], 0xaabbccdd)
	binary.LittleEndian.PutUint32(rec[4:], 7)
	b, used, err := packTables(rec, 4)
	require.NoError(t, err)
	require.Equal(t, uint32(1), used)
	// The bitmap (slot 0), then the 35-bit record: the hash, then 7.
	require.Equal(t, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xcc, 0xbb, 0xaa, 7, 0, 0, 0}, b)
}

// TestDecodeColumnsFast: the one-pass decoding of a chunk's columns
// (decodeColumns) gives what the plane-by-plane one does
// (decodeColumnsSlow), for chunks of one to six address planes and names
// of up to 500 bytes, and fails with its messages.
func TestDecodeColumnsFast(t *testing.T) {
	var b strings.Builder
	addr := uint64(0x100000)
	planes := map[byte]int{}
	for i := range 15000 {
		// Gaps of 1 to 5 bytes' width, each for 3,000 symbols (about
		// three chunks), and now and then a step back.
		gap := uint64(16) << (8 * (i / 3000 % 5))
		if i%13 == 0 {
			addr -= gap / 2
		} else {
			addr += gap
		}
		name := fmt.Sprintf("f%d", i)
		if i%97 == 0 {
			name += strings.Repeat("x", 300+i%200)
		}
		fmt.Fprintf(&b, "%016x t %s\n", addr, name)
	}
	ref := mustParse(t, b.String(), Options{})
	var w bytes.Buffer
	require.NoError(t, ref.WriteSnapshot(&w))
	ix, err := ParseBytes("k", w.Bytes(), Options{})
	require.NoError(t, err)
	l := ix.lazy
	require.NotNil(t, l)
	for k := range l.chunks {
		c := &l.chunks[k]
		planes[c.planes]++
		cols := make([]byte, c.cols.n)
		require.NoError(t, decodeFrame(l.file, c.cols, cols))
		fast, slow := make([]sym, c.s1-c.s0), make([]sym, c.s1-c.s0)
		fseen, ferr := decodeColumns("k", c, cols, fast)
		sseen, serr := decodeColumnsSlow("k", c, cols, slow)
		require.NoError(t, ferr)
		require.NoError(t, serr)
		require.Equal(t, sseen, fseen, "chunk %d", k)
		require.Equal(t, slow, fast, "chunk %d", k)
		// A name length of 0, then lengths that do not add up.
		m := len(fast)
		for _, forge := range []func([]byte){
			func(b []byte) { b[8+m+m/2], b[8+2*m+m/2] = 0, 0 },
			func(b []byte) { b[8+m+m/2]++ },
		} {
			bad := slices.Clone(cols)
			forge(bad)
			_, ferr := decodeColumns("k", c, bad, fast)
			_, serr := decodeColumnsSlow("k", c, bad, slow)
			require.ErrorIs(t, ferr, ErrMalformed)
			require.EqualError(t, ferr, serr.Error())
		}
	}
	for n := byte(1); n <= fastPlanes+1; n++ {
		require.NotZero(t, planes[n], "no chunk of %d address planes: %v", n, planes)
	}
}

// TestFrames: encodeFrame stores what LZ4 shrinks as a block and the
// rest as it is; decodeFrame gives back exactly the bytes, and refuses a
// block that decodes to more or fewer bytes than the frame table says.
func TestFrames(t *testing.T) {
	var c lz4.CompressorHC
	names := []byte(strings.Repeat("xfs_inode_item_", 200))
	noise := make([]byte, 300)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	block := encodeFrame(&c, names)
	require.Less(t, len(block), len(names)/10, "a repetitive frame is an LZ4 block")
	stored := encodeFrame(&c, noise)
	require.Equal(t, noise, stored, "an incompressible frame is stored as it is")
	at := func(b []byte, n int) (snapFrame, []byte) {
		return snapFrame{0, uint64(len(b)), uint64(n)}, make([]byte, n)
	}

	f, dst := at(block, len(names))
	require.NoError(t, decodeFrame(block, f, dst))
	require.Equal(t, names, dst)
	f, dst = at(stored, len(noise))
	require.NoError(t, decodeFrame(stored, f, dst))
	require.Equal(t, noise, dst)

	f, dst = at(block, len(names)+1)
	require.EqualError(t, decodeFrame(block, f, dst), fmt.Sprintf("it decodes to %d bytes, the frame table says %d", len(names), len(names)+1))
	f, dst = at(block, len(names)-1)
	require.ErrorContains(t, decodeFrame(block, f, dst), fmt.Sprintf("it does not decode to the %d bytes the frame table says (", len(names)-1))
	f, dst = at(block, 0)
	require.EqualError(t, decodeFrame(block, f, dst), fmt.Sprintf("%d bytes stored for none", len(block)))
}
