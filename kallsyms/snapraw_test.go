// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawWithChecksum rewrites a raw snapshot's checksum after b was edited:
// what a forger (not a disk error) produces.
func rawWithChecksum(b []byte) []byte {
	binary.LittleEndian.PutUint64(b[24:], rawChecksum(b[:rawHeaderSize], b[rawHeaderSize:]))
	return b
}

// rawSample is the sample's raw snapshot, with the payload offset of its
// symbol records and their number.
func rawSample(t *testing.T) (good []byte, symAt, nsym uint64) {
	ix := mustParse(t, sample, Options{})
	var buf bytes.Buffer
	require.NoError(t, ix.WriteSnapshotRaw(&buf))
	good = buf.Bytes()
	le := binary.LittleEndian
	nobj := uint64(le.Uint32(good[32:]))
	nsym = uint64(le.Uint32(good[36:]))
	symAt = align8(4+uint64(le.Uint32(good[rawHeaderSize:]))) + nobj*rawObjRecord
	return good, symAt, nsym
}

// writeCalls records each Write it is given.
type writeCalls struct{ sizes []int }

func (w *writeCalls) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return len(p), nil
}

// TestRawSnapshotOneWrite: the raw writer hands the whole file, header
// first, to one Write (so that the page cache holds it in large folios, see
// WriteSnapshotRaw), from a buffer sized exactly by rawSize.
func TestRawSnapshotOneWrite(t *testing.T) {
	lto := mustParse(t, sample, Options{LTO: true})
	for name, ix := range map[string]*Index{
		"sample": mustParse(t, sample, Options{}),
		"lto":    lto,
		"one":    mustParse(t, "ffffffff81000000 T _stext\n", Options{}),
	} {
		var w writeCalls
		require.NoError(t, ix.WriteSnapshotRaw(&w), name)
		var buf bytes.Buffer
		require.NoError(t, ix.WriteSnapshotRaw(&buf), name)
		assert.Equal(t, []int{buf.Len()}, w.sizes, name)
		assert.Equal(t, buf.Len(), ix.rawSize(), name)
		assert.Equal(t, snapshotMagic, buf.Bytes()[:8], name)
		back, err := ParseBytes(name, buf.Bytes(), Options{})
		require.NoError(t, err, name)
		sameIndex(t, ix, back)
	}
}

func TestRawPadding(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ size, want int }{
		{0, 0}, {100, 0}, {2*mib - 1, 0}, {2 * mib, 0}, {6 * mib, 0},
		{3 * mib, 0},               // 1 MiB would be a third
		{7 * mib, mib},             // a seventh
		{6880722, 8*mib - 6880722}, // the corpus host file's
		{4*mib + 1, 0}, {8*mib + 1, 2*mib - 1}, {10*mib - 4096, 4096},
	} {
		assert.Equal(t, tc.want, rawPadding(tc.size), "size %d", tc.size)
	}
}

// TestRawSnapshotForged: a raw snapshot whose checksum is right but whose
// chains or names lie is refused, so that no lookup can loop or read past
// the names (its tables: TestRawSnapshotForgedTables).
func TestRawSnapshotForged(t *testing.T) {
	good, symAt, nsym := rawSample(t)
	le := binary.LittleEndian
	nextAt := symAt + nsym*symRecord

	// A chain that points back: a cycle.
	b := append([]byte(nil), good...)
	le.PutUint32(b[rawHeaderSize+nextAt+4:], 1)
	_, err := ParseBytes("cycle", rawWithChecksum(b), Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "chain to 1 leaves object")

	// A symbol name past the names.
	b = append([]byte(nil), good...)
	le.PutUint32(b[rawHeaderSize+symAt+8:], 1<<30)
	_, err = ParseBytes("name", rawWithChecksum(b), Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "name out of range")
}

// The symbols' chain flags are derived data, stored so that a mapped
// snapshot is used as it is: a raw snapshot whose flag bytes lie (clear
// where a chain goes on: duplicates would look unique; set where none
// does) is refused, and the stored ones say what the chains say.
func TestRawSnapshotFlagsChecked(t *testing.T) {
	good, symAt, nsym := rawSample(t)
	ix, err := ParseBytes("good", good, Options{})
	require.NoError(t, err)
	set := 0
	for i := range nsym {
		fl := good[rawHeaderSize+symAt+i*symRecord+15]
		require.Equal(t, ix.next[i] != 0, fl == symHasNext, "symbol %d flags %#x", i, fl)
		if fl != 0 {
			set++
		}
	}
	require.Positive(t, set, "the sample has no same-name chain")
	for _, fl := range []byte{0, symHasNext, 0xff} {
		b := append([]byte(nil), good...)
		for i := range nsym {
			b[rawHeaderSize+symAt+i*symRecord+15] = fl
		}
		_, err := ParseBytes("flags", rawWithChecksum(b), Options{})
		require.ErrorIs(t, err, ErrMalformed, "flags %#x", fl)
		require.Contains(t, err.Error(), "its chain says", "flags %#x", fl)
	}
}

// Open reads a raw snapshot file in pieces, hashing each as it arrives;
// the index is the one ParseBytes builds from the same bytes, and a
// header that misplaces the names region is refused, never trusted.
func TestRawSnapshotOpenFile(t *testing.T) {
	good, _, _ := rawSample(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "k.raw")
	require.NoError(t, os.WriteFile(path, good, 0o644))
	whole, err := ParseBytes("bytes", good, Options{})
	require.NoError(t, err)
	split, err := Open(path, Options{})
	require.NoError(t, err)
	sameIndex(t, whole, split)

	le := binary.LittleEndian
	nname := le.Uint32(good[44:])
	for _, forged := range []uint32{0, 1, nname - 1, nname + 1, nname + 8, 1 << 31, ^uint32(0)} {
		b := append([]byte(nil), good...)
		le.PutUint32(b[44:], forged)
		b = rawWithChecksum(b)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err := Open(path, Options{})
		require.ErrorIs(t, err, ErrMalformed, "names length %d", forged)
		_, err = ParseBytes("forged", b, Options{})
		require.ErrorIs(t, err, ErrMalformed, "names length %d", forged)
	}
}

// The raw loader sums and checks its payload in 256 KiB pieces: the
// pieces' symbols must cover every symbol exactly once, records
// straddling a piece's end included, and the error reported must be the
// first in the file whichever piece finds it first.
func TestRawSnapshotPieces(t *testing.T) {
	for _, l := range []rawSections{{symAt: 48, nsym: 40000}, {symAt: 56, nsym: 17}, {symAt: 8, nsym: 1}} {
		end := l.symAt + symRecord*l.nsym + 1000
		for _, step := range []uint64{rawChunk, 4096, 24, 7} {
			var syms uint32
			for from := uint64(0); from < end; from += step {
				lo, hi := l.symbols(from, min(from+step, end))
				require.Equal(t, syms, lo, "step %d at %d", step, from)
				syms = hi
			}
			require.Equal(t, uint32(l.nsym), syms, "step %d", step)
		}
	}

	good, ix, lay := rawBig(t)
	le := binary.LittleEndian
	p := good[rawHeaderSize:]
	// The symbol whose record crosses the second piece's start (records
	// are 16 bytes from an 8-byte boundary), or the first one in it; and
	// the last symbol.
	cross := (rawChunk - lay.symAt) / symRecord
	forge := func(at uint64, v uint32) []byte {
		b := append([]byte(nil), good...)
		le.PutUint32(b[rawHeaderSize+at:], v)
		return rawWithChecksum(b)
	}
	for _, i := range []uint64{cross, lay.nsym - 1} {
		_, err := ParseBytes("name", forge(lay.symAt+i*symRecord+8, 1<<30), Options{})
		require.ErrorIs(t, err, ErrMalformed)
		assert.Contains(t, err.Error(), fmt.Sprintf("symbol %d: name out of range", i))
	}
	// Two faults: the one earlier in the file is reported, though the
	// pieces are shared out at random.
	b := forge(lay.symAt+(lay.nsym-1)*symRecord+8, 1<<30)
	le.PutUint32(b[rawHeaderSize+lay.symAt+5*symRecord+8:], 1<<30)
	b = rawWithChecksum(b)
	for range 20 {
		_, err := ParseBytes("two", b, Options{})
		require.ErrorIs(t, err, ErrMalformed)
		require.Contains(t, err.Error(), "symbol 5: name out of range")
	}
	// A damaged byte in any piece is a checksum mismatch.
	for _, at := range []int{0, rawChunk + 3, len(p) - 1} {
		b := append([]byte(nil), good...)
		b[rawHeaderSize+at] ^= 1
		_, err := ParseBytes("flip", b, Options{})
		require.ErrorIs(t, err, ErrMalformed)
		assert.Contains(t, err.Error(), "checksum mismatch", "byte %d", at)
	}
	ix2, err := ParseBytes("big.raw", good, Options{})
	require.NoError(t, err)
	sameIndex(t, ix, ix2)
}

// rawBig is the raw snapshot of an index of 40,000 symbols (several
// pieces), with the index and where its symbols are.
func rawBig(t *testing.T) ([]byte, *Index, rawSections) {
	var text strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&text, "%016x t sym_%d\n", 0xffffffff81000000+uint64(i)*16, i%30000)
	}
	ix, err := ParseBytes("big", []byte(text.String()), Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, ix.WriteSnapshotRaw(&buf))
	good := buf.Bytes()
	require.Greater(t, rawChunks(len(good)-rawHeaderSize), 3)
	le := binary.LittleEndian
	lay := rawSections{nsym: uint64(le.Uint32(good[36:]))}
	lay.symAt = align8(4+uint64(le.Uint32(good[rawHeaderSize:]))) + uint64(le.Uint32(good[32:]))*rawObjRecord
	return good, ix, lay
}

// A raw snapshot's tables are not checked slot by slot when it is loaded:
// Index.find trusts no slot instead. Tables that lie (no empty slot,
// entries pointing outside their object or past every symbol, entries
// swapped) load, and every lookup ends, never panics, and finds either
// the right symbol or nothing.
func TestRawSnapshotForgedTables(t *testing.T) {
	good, ix, lay := rawBig(t)
	le := binary.LittleEndian
	slotAt := align8(lay.symAt + lay.nsym*(symRecord+4))
	nslot := uint64(le.Uint32(good[40:]))
	r := rand.New(rand.NewPCG(7, 8))
	const names = 310 // sym_0, sym_97, ... sym_29973
	// Each forgery, and how many of the names lookups still find: all
	// where every real entry is kept ("full": the empty slots now point
	// at symbol 0 under hash 0, so probes only run longer), none where
	// every entry points out of the object, all but at most one where one
	// entry is wrong; "shuffled" may find any.
	forgeries := map[string]struct {
		forge    func(idx uint32, i uint64) uint32
		min, max int
	}{
		"full":      {func(idx uint32, i uint64) uint32 { return max(idx, 1) }, names, names},
		"past":      {func(idx uint32, i uint64) uint32 { return idx + uint32(lay.nsym) }, 0, 0},
		"huge":      {func(idx uint32, i uint64) uint32 { return ^uint32(0) - uint32(i%3) }, 0, 0},
		"shuffled":  {func(idx uint32, i uint64) uint32 { return uint32(r.Uint64N(lay.nsym + 2)) }, 0, names},
		"one-wrong": {func(idx uint32, i uint64) uint32 { return idx ^ b2u32(i == nslot/2) }, names - 1, names},
	}
	for name, f := range forgeries {
		t.Run(name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			for i := range nslot {
				at := rawHeaderSize + slotAt + i*8 + 4
				le.PutUint32(b[at:], f.forge(le.Uint32(b[at:]), i))
			}
			got, err := ParseBytes(name, rawWithChecksum(b), Options{})
			require.NoError(t, err)
			found, asked := 0, 0
			for i := 0; i < 30000; i += 97 {
				asked++
				name := fmt.Sprintf("sym_%d", i)
				s, err := got.Lookup(Vmlinux, name, 1)
				if err == nil {
					want, err := ix.Lookup(Vmlinux, name, 1)
					require.NoError(t, err)
					require.Equal(t, want, s)
					found++
				} else {
					require.ErrorIs(t, err, ErrNotFound)
				}
			}
			_, err = got.Lookup(Vmlinux, "absent", 0)
			require.ErrorIs(t, err, ErrNotFound)
			require.Equal(t, names, asked)
			require.GreaterOrEqual(t, found, f.min)
			require.LessOrEqual(t, found, f.max)
		})
	}
}

func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
