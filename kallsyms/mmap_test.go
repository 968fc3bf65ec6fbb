// SPDX-License-Identifier: GPL-2.0-only

//go:build linux

package kallsyms

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// A raw snapshot file is mapped, and the mapping goes away with the Index:
// no string any API hands out may point into it, and once the Index is
// unreachable the mapping is unmapped while those strings stay readable.
func TestMappedSnapshotNamesOutliveIndex(t *testing.T) {
	mapsRaw(t)
	for _, lto := range []bool{false, true} {
		opts := Options{LTO: lto}
		path := filepath.Join(t.TempDir(), "k.raw")
		require.NoError(t, mustParse(t, sample, opts).WriteSnapshotRawFile(path))
		text := mustParse(t, sample, opts)

		ix, err := Open(path, Options{})
		require.NoError(t, err)
		require.NotNil(t, ix.mapping, "lto %v: the raw snapshot was read, not mapped", lto)
		require.Equal(t, lto, ix.LTO())
		m := ix.mapping // not Go memory: does not keep ix alive
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		hi := lo + uintptr(len(m))

		var got []string // every string handed out, in a fixed order
		keep := func(ss ...string) {
			for _, s := range ss {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= lo && p < hi {
					t.Fatalf("lto %v: %q points into the mapping", lto, s)
				}
				got = append(got, s)
			}
		}
		keepSym := func(s Symbol) { keep(s.Name, s.Object) }
		keepErr := func(err error) {
			var le *LookupError
			if errors.As(err, &le) {
				keep(le.Object, le.Name, err.Error())
				for _, s := range append(le.Candidates, le.Near...) {
					keepSym(s)
				}
			}
		}
		for _, o := range ix.Objects() {
			keep(o.Name)
			ix.Symbols(o.Name, func(s Symbol) bool {
				keepSym(s)
				for _, c := range ix.Candidates(s.Object, s.Name) {
					keepSym(c)
				}
				for pos := range uint64(3) {
					r, err := ix.Lookup(s.Object, s.Name, pos)
					keepSym(r)
					keepErr(err)
				}
				r, err := ix.LookupName(s.Object + ":" + s.Name)
				keepSym(r)
				keepErr(err)
				if a, ok := ix.Addr(s.Address); ok {
					keepSym(a.Symbol)
				}
				return true
			})
		}
		// LTO: a stripped name answers the suffixed symbol, whose name is
		// not the caller's string.
		for _, name := range []string{"c_stop", "show_stat", "nonexistent"} {
			r, err := ix.Lookup(Vmlinux, name, 0)
			keepSym(r)
			keepErr(err)
		}
		keep(ix.Source())
		want := append([]string(nil), got...)
		for i := range want {
			want[i] = string([]byte(want[i])) // copies made while mapped
		}
		sameIndex(t, text, ix)

		// Drop the Index; its cleanup unmaps the file. (Not msync's
		// ENOMEM: the runtime may map something else at the same address
		// at once.)
		unmapped := dropIndex(&ix, func() bool {
			maps, err := os.ReadFile("/proc/self/maps")
			require.NoError(t, err)
			return !strings.Contains(string(maps), path)
		})
		require.True(t, unmapped, "lto %v: the mapping was not released after the Index was collected", lto)
		require.Equal(t, want, got, "lto %v", lto) // read after the unmap: no fault
	}
}

// NoMap reads a raw snapshot file instead; the index is the same.
func TestRawSnapshotNoMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.raw")
	require.NoError(t, mustParse(t, sample, Options{}).WriteSnapshotRawFile(path))
	mapped, err := Open(path, Options{})
	require.NoError(t, err)
	read, err := Open(path, Options{NoMap: true})
	require.NoError(t, err)
	// Mapped on a little-endian host only (the arrays are used in
	// place); a big-endian one reads the file and converts them.
	require.Equal(t, hostLE, mapped.mapping != nil)
	require.Nil(t, read.mapping)
	sameIndex(t, mapped, read)
}

// mapsRaw skips a test of raw snapshot mappings on a host that reads raw
// snapshots instead (TestRawSnapshotNoMap checks that it does).
func mapsRaw(t *testing.T) {
	t.Helper()
	if !hostLE {
		t.Skip("raw snapshots are mapped on little-endian hosts only; this one reads them")
	}
}

// bigText is a kallsyms text of n vmlinux lines (names repeating every
// 1,000 lines, so that chains are long) and a module: large enough to be
// streamed in several chunks.
func bigText(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%016x %c sym_%d\n", 0xffffffff81000000+uint64(i)*16, "tTdD"[i%4], i%1000)
	}
	for i := range 500 {
		fmt.Fprintf(&b, "%016x t mod_%d\t[m]\n", 0xffffffffc0000000+uint64(i)*16, i%7)
	}
	return b.Bytes()
}

// dropIndex drops *ix, the last reference to an Index, and collects
// until the Index is gone and released() holds (its cleanup has run),
// for at most 10 seconds; it reports whether that happened.
func dropIndex(ix **Index, released func() bool) bool {
	collected := make(chan struct{})
	runtime.AddCleanup(*ix, func(ch chan struct{}) { close(ch) }, collected)
	*ix = nil
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		runtime.GC()
		select {
		case <-collected:
			if released() {
				return true
			}
		default:
		}
	}
	return false
}

// mappedAt reports whether a mapping of /proc/self/maps holds addr. (A
// mapping that madvise gave huge pages in part is listed in parts.)
func mappedAt(t *testing.T, addr uintptr) bool {
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	for _, l := range strings.Split(string(maps), "\n") {
		var a, b uintptr
		if _, err := fmt.Sscanf(l, "%x-%x", &a, &b); err == nil && a <= addr && addr < b {
			return true
		}
	}
	return false
}

func within(b []byte, p unsafe.Pointer) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return uintptr(p) >= lo && uintptr(p) < lo+uintptr(len(b))
}

// A streamed input's chunks fill windows of one anonymous mapping, in
// input order whatever worker parses them, and the Index adopts it (the
// records, their hashes' array and the tables): the index equals the one
// built from the whole text, and the mapping goes once the Index does.
func TestStreamAdoptsItsMapping(t *testing.T) {
	text := bigText(120_000) // 5 MB: five chunks and the rest
	whole, err := ParseBytes("k", text, Options{})
	require.NoError(t, err)
	for _, workers := range []int{1, 2, 3, 8} {
		ix, err := Parse("k", &pieceReader{data: text, n: 4096}, Options{Workers: workers})
		require.NoError(t, err)
		require.True(t, ix.anon != nil, "workers %d: the records were copied, not adopted", workers)
		require.True(t, within(ix.anon, unsafe.Pointer(unsafe.SliceData(ix.syms))), "workers %d", workers)
		require.True(t, within(ix.anon, unsafe.Pointer(unsafe.SliceData(ix.slots))), "workers %d: the tables are not in the mapping", workers)
		require.True(t, within(ix.anon, unsafe.Pointer(unsafe.SliceData(ix.next))), "workers %d", workers)
		// vmlinux's table was filled from the chunks' sorted runs, which
		// the mapping holds, not from a sort of its own: the tables were
		// laid out without fillSplit's scratch.
		require.Zero(t, ix.scratch, "workers %d", workers)
		sameIndex(t, whole, ix)
		s, err := ix.Lookup(Vmlinux, "sym_7", 120)
		require.NoError(t, err)
		require.Equal(t, uint64(0xffffffff81000000+119_007*16), s.Address)

		lo := uintptr(unsafe.Pointer(unsafe.SliceData(ix.anon)))
		hi := lo + uintptr(len(ix.anon))
		require.True(t, mappedAt(t, lo) && mappedAt(t, hi-1))
		unmapped := dropIndex(&ix, func() bool { return !mappedAt(t, lo) && !mappedAt(t, hi-1) })
		require.True(t, unmapped, "workers %d: the mapping was not released after the Index was collected", workers)
	}
}

// When the windows cannot be used in place (a blank line leaves a hole;
// the lines outgrow the room reserved for them), the records are copied
// to the heap and the index is the same. The tables are still laid out in
// the mapping when it has room for them (the Index then keeps it);
// otherwise the mapping is released before the parse returns.
func TestStreamCopiesAndUnmaps(t *testing.T) {
	text := bigText(120_000)
	whole, err := ParseBytes("k", text, Options{})
	require.NoError(t, err)
	blank := bytes.Replace(text, []byte("sym_999\n"), []byte("sym_999\n\n"), 1)
	for _, tt := range []struct {
		name string
		data []byte
		room int // records reserved before the parse (0: as the parser does)
		// tables: the tables are in the mapping.
		tables bool
	}{
		{"blank line", blank, 0, true},
		// (On one core vmlinux's table needs no fill scratch, and the
		// tables then fit in the room the block keeps for 65,536 objects.)
		{"no room for the records, nor for the tables with their scratch", text, 1000, runtime.GOMAXPROCS(0) == 1},
		{"room for the first chunks only", text, 60_000, true},
		{"no room for the records, room for the tables", text, 20_000, true},
	} {
		for _, workers := range workerCounts(1, 2, 8) {
			p := newParser("k", &Options{Workers: workers})
			if tt.room > 0 {
				p.st = newStream(tt.room)
			}
			var mem []byte
			if p.st != nil {
				mem = p.st.mem
			}
			ix, err := p.stream(&pieceReader{data: tt.data, n: 4096}, 0)
			require.NoError(t, err)
			sameIndex(t, whole, ix)
			require.True(t, p.st.mem == nil)
			if tt.room == 0 {
				mem = ix.anon
			}
			require.True(t, mem != nil)
			require.False(t, within(mem, unsafe.Pointer(unsafe.SliceData(ix.syms))), "%s, workers %d: records adopted", tt.name, workers)
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
			if tt.tables {
				require.True(t, ix.anon != nil, "%s, workers %d", tt.name, workers)
				require.True(t, within(ix.anon, unsafe.Pointer(unsafe.SliceData(ix.slots))), "%s, workers %d", tt.name, workers)
				require.True(t, mappedAt(t, lo))
			} else {
				require.True(t, ix.anon == nil, "%s, workers %d", tt.name, workers)
				require.False(t, mappedAt(t, lo), "%s, workers %d: the mapping is still there", tt.name, workers)
			}
		}
	}
}

// Streamed inputs that leave the usual shape (blank lines, CRLF, vmlinux
// out of address order, module lines between vmlinux lines, vmlinux after
// the modules, a malformed line) give what the whole text gives, the
// index or the error, whatever the read sizes and the workers: every
// fallback of the streamed build (copied records, re-sorted vmlinux,
// tables without sorted runs) against the whole-text build.
func TestStreamMatchesWholeOnOddInputs(t *testing.T) {
	base := bigText(70_000) // 3 MB: three chunks and the rest
	lines := bytes.SplitAfter(base, []byte("\n"))
	lines = lines[:len(lines)-1]
	r := rand.New(rand.NewPCG(7, 7))
	edits := []func(ls [][]byte) [][]byte{
		func(ls [][]byte) [][]byte { // a blank line
			i := r.IntN(len(ls))
			return append(ls[:i:i], append([][]byte{[]byte("\n")}, ls[i:]...)...)
		},
		func(ls [][]byte) [][]byte { // CRLF on a line
			i := r.IntN(len(ls))
			ls[i] = append(bytes.TrimSuffix(ls[i], []byte("\n")), "\r\n"...)
			return ls
		},
		func(ls [][]byte) [][]byte { // two vmlinux lines swapped
			i, j := r.IntN(60_000), r.IntN(60_000)
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		},
		func(ls [][]byte) [][]byte { // a module line among vmlinux's
			i := r.IntN(60_000)
			return append(ls[:i:i], append([][]byte{[]byte("ffffffffc0001000 t odd\t[m2]\n")}, ls[i:]...)...)
		},
		func(ls [][]byte) [][]byte { // vmlinux lines after the modules
			return append(ls, []byte("ffffffff8f000000 T late_one\n"), []byte("ffffffff8f000010 T sym_3\n"))
		},
		func(ls [][]byte) [][]byte { // a malformed line
			i := r.IntN(len(ls))
			return append(ls[:i:i], append([][]byte{[]byte("ffffffff81000000 T\n")}, ls[i:]...)...)
		},
	}
	rounds := 8
	if testutil.Sampled() {
		rounds = 3 // make test's native run has tried all 8
	}
	for round := range rounds {
		ls := append([][]byte(nil), lines...)
		var what []int
		for range 1 + r.IntN(3) {
			e := r.IntN(len(edits))
			what = append(what, e)
			ls = edits[e](ls)
		}
		text := bytes.Join(ls, nil)
		whole, werr := ParseBytes("k", text, Options{})
		opts := Options{Workers: 1 + r.IntN(4)}
		streamed, serr := Parse("k", &pieceReader{data: text, n: 1 + r.IntN(64<<10)}, opts)
		if werr != nil || serr != nil {
			require.Error(t, werr, "round %d edits %v", round, what)
			require.Error(t, serr, "round %d edits %v", round, what)
			require.Equal(t, werr.Error(), serr.Error(), "round %d edits %v", round, what)
			continue
		}
		sameIndex(t, whole, streamed)
		for _, o := range whole.Objects() {
			k := 0
			whole.Symbols(o.Name, func(s Symbol) bool {
				if k++; k%7 == 0 {
					require.Equal(t, whole.Candidates(o.Name, s.Name), streamed.Candidates(o.Name, s.Name), "round %d edits %v", round, what)
				}
				return true
			})
		}
	}
}

// The arrays only the build reads (the hashes, the sorted runs) are given
// back to the kernel once the index is built: they read as zeros after,
// while the index, which keeps the mapping, still answers.
func TestStreamReleasesBuildOnlyArrays(t *testing.T) {
	text := bigText(120_000)
	p := newParser("k", nil)
	ix, err := p.stream(&pieceReader{data: text, n: 4096}, 0)
	require.NoError(t, err)
	require.True(t, ix.anon != nil)
	nonzero := func(b []uint32) int {
		n := 0
		for _, v := range b {
			if v != 0 {
				n++
			}
		}
		return n
	}
	require.Zero(t, nonzero(p.st.hashes[:ix.Len()]))
	order := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(p.st.order))), 2*ix.Len())
	require.Zero(t, nonzero(order))
	s, err := ix.Lookup(Vmlinux, "sym_999", 120)
	require.NoError(t, err)
	require.Equal(t, uint64(0xffffffff81000000+119_999*16), s.Address)
}

// closedIndex checks that ix, closed, is empty and says so: every lookup
// wraps ErrClosed, nothing is listed, and a second Close does nothing.
func closedIndex(t *testing.T, ix *Index, source string) {
	t.Helper()
	_, err := ix.Lookup("", "c_stop", 0)
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, err, "symbol 'c_stop' not found in symbol table (the index of "+source+" was closed)")
	var le *LookupError
	require.ErrorAs(t, err, &le)
	require.Equal(t, Vmlinux, le.Object)
	_, err = ix.Lookup("ext4", "ext4_stop", 1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = ix.LookupName("ext4:ext4_stop")
	require.ErrorIs(t, err, ErrClosed)
	_, err = ix.LookupName("c_stop")
	require.ErrorIs(t, err, ErrClosed)
	require.Nil(t, ix.Candidates("", "c_stop"))
	_, ok := ix.Addr(0xffffffff81000000)
	require.False(t, ok)
	require.Zero(t, ix.Len())
	require.Empty(t, ix.Objects())
	require.False(t, ix.HasObject(Vmlinux))
	ix.Symbols(Vmlinux, func(Symbol) bool { t.Fatal("a symbol after Close"); return false })
	require.ErrorIs(t, ix.WriteSnapshot(io.Discard), ErrClosed)
	require.ErrorIs(t, ix.WriteSnapshotRaw(io.Discard), ErrClosed)
	require.Equal(t, source, ix.Source())
	require.NoError(t, ix.Close())
}

// Close unmaps a raw snapshot's mapping at once; what the Index handed out
// before stays readable, and the cleanup that would have unmapped it is
// stopped: a mapping made afterwards at the same address survives the
// Index's collection.
func TestCloseUnmapsSnapshot(t *testing.T) {
	mapsRaw(t)
	path := filepath.Join(t.TempDir(), "k.raw")
	require.NoError(t, mustParse(t, sample, Options{}).WriteSnapshotRawFile(path))
	ix, err := Open(path, Options{})
	require.NoError(t, err)
	require.NotNil(t, ix.mapping)
	lo, size := uintptr(unsafe.Pointer(unsafe.SliceData(ix.mapping))), len(ix.mapping)
	s, err := ix.Lookup("", "c_stop", 0)
	require.NoError(t, err)
	objs := ix.Objects()
	require.NoError(t, ix.Close())
	require.False(t, mappedAt(t, lo), "the mapping is still there after Close")
	require.Equal(t, "c_stop", s.Name) // a copy: readable after the unmap
	require.Equal(t, Vmlinux, objs[0].Name)
	closedIndex(t, ix, "sample") // the source the snapshot records

	// Something else mapped where the snapshot was (the kernel reuses the
	// hole): collecting the Index must not unmap it.
	other, err := mapAnon(size)
	require.NoError(t, err)
	defer unmapFile(other)
	olo := uintptr(unsafe.Pointer(unsafe.SliceData(other)))
	if olo != lo {
		t.Logf("the new mapping is at %#x, not at the snapshot's %#x: the stopped cleanup is not checked", olo, lo)
	}
	collected := make(chan struct{})
	runtime.AddCleanup(ix, func(ch chan struct{}) { close(ch) }, collected)
	ix = nil
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		select {
		case <-collected:
			deadline = time.Time{}
		default:
			time.Sleep(time.Millisecond)
		}
	}
	runtime.GC() // the unmap cleanup, had it not been stopped, would have run with ours
	time.Sleep(10 * time.Millisecond)
	require.True(t, mappedAt(t, olo), "a mapping made after Close was unmapped")
	other[0] = 1
}

// Close releases a streamed input's anonymous mapping; an index read into
// memory closes too (the collector frees its memory).
func TestCloseStreamAndHeap(t *testing.T) {
	text := bigText(120_000)
	ix, err := Parse("k", &pieceReader{data: text, n: 4096}, Options{})
	require.NoError(t, err)
	require.NotNil(t, ix.anon)
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(ix.anon)))
	s, err := ix.Lookup(Vmlinux, "sym_7", 120)
	require.NoError(t, err)
	require.NoError(t, ix.Close())
	require.False(t, mappedAt(t, lo))
	require.Equal(t, "sym_7", s.Name)
	closedIndex(t, ix, "k")

	ix = mustParse(t, sample, Options{})
	require.Nil(t, ix.mapping)
	require.Nil(t, ix.anon)
	require.NoError(t, ix.Close())
	closedIndex(t, ix, "sample")
}

// A large stream is read into an anonymous mapping (readAndParse), which
// the Index keeps and Close unmaps: names handed out are copies. A small
// one ends on the heap; one that outgrows the reserve grows on the heap;
// a raw snapshot that arrives as a stream is copied out before it loads.
func TestStreamBufferMapped(t *testing.T) {
	text := bigText(200_000) // over mapStreamFrom
	require.GreaterOrEqual(t, len(text), mapStreamFrom)
	want, err := ParseBytes("k", text, Options{})
	require.NoError(t, err)
	ix, err := Parse("k", &pieceReader{data: text, n: 4096}, Options{})
	require.NoError(t, err)
	sameIndex(t, want, ix)
	require.NotNil(t, ix.text)
	require.True(t, within(ix.text, unsafe.Pointer(unsafe.StringData(ix.data))))
	require.Nil(t, ix.mapping)
	info, ok := ix.Addr(0xffffffff81000000 + 7*16 + 3)
	require.True(t, ok)
	require.Equal(t, "sym_7", info.Symbol.Name)
	require.False(t, within(ix.text, unsafe.Pointer(unsafe.StringData(info.Symbol.Name))), "a name handed out points into the buffer's mapping")
	c := ix.Candidates(Vmlinux, "sym_9")
	require.Len(t, c, 200)
	require.False(t, within(ix.text, unsafe.Pointer(unsafe.StringData(c[0].Name))))
	// A miss's suggestions and an ambiguous name's candidates too.
	var miss, ambiguous *LookupError
	_, err = ix.Lookup(Vmlinux, "sym_7.isra.0", 0)
	require.ErrorAs(t, err, &miss)
	_, err = ix.Lookup(Vmlinux, "sym_9", 0)
	require.ErrorAs(t, err, &ambiguous)
	require.NotEmpty(t, miss.Near)
	require.NotEmpty(t, ambiguous.Candidates)
	for _, s := range append(slices.Clone(miss.Near), ambiguous.Candidates...) {
		require.False(t, within(ix.text, unsafe.Pointer(unsafe.StringData(s.Name))), "%s points into the buffer's mapping", s.Name)
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(ix.text)))
	require.NoError(t, ix.Close())
	require.False(t, mappedAt(t, lo), "the buffer is still mapped after Close")
	require.Equal(t, "sym_7", info.Symbol.Name)
	require.Equal(t, "sym_7", miss.Near[0].Name)
	require.Equal(t, "sym_9", ambiguous.Candidates[0].Name)
	require.Equal(t, "sym_9", c[199].Name)

	small := bigText(1000)
	ix, err = Parse("small", &pieceReader{data: small, n: 4096}, Options{})
	require.NoError(t, err)
	require.Nil(t, ix.text)
	require.Nil(t, ix.mapping)
	require.Equal(t, 1500, ix.Len())

	// Past the 16 MB reserve: the buffer doubles on the heap (650,000
	// lines: in a light run, checked by make test's native run only).
	if !testutil.Sampled() {
		huge := bigText(streamReserve/26 + 1000)
		require.Greater(t, len(huge), streamReserve)
		ix, err = Parse("huge", &pieceReader{data: huge, n: 1 << 20}, Options{})
		require.NoError(t, err)
		require.Nil(t, ix.text)
		whole, err := ParseBytes("huge", huge, Options{})
		require.NoError(t, err)
		sameIndex(t, whole, ix)
	}

	// A raw snapshot of the large index, streamed.
	var raw bytes.Buffer
	require.NoError(t, want.WriteSnapshotRaw(&raw))
	require.GreaterOrEqual(t, raw.Len(), mapStreamFrom)
	ix, err = Parse("snap", &pieceReader{data: raw.Bytes(), n: 4096}, Options{})
	require.NoError(t, err)
	sameIndex(t, want, ix)
	require.Nil(t, ix.text)

	// An error late in a large stream names its line.
	bad := append(bytes.Clone(text), "ffffffff8100zz00 T broken\n"...)
	_, err = Parse("bad", &pieceReader{data: bad, n: 4096}, Options{})
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, fmt.Sprintf("bad:%d:", 200_000+500+1))
}

// With MapText, a text file is mapped and parsed the way a stream is (its
// chunks claim windows of one anonymous mapping): the index is the one
// ParseBytes builds from the same bytes, or the same error, on the usual
// shape and on every odd one, for any number of workers; names handed
// out are copies, and Close unmaps both the file and the arrays.
func TestMapTextMatchesRead(t *testing.T) {
	dir := t.TempDir()
	text := bigText(50_000) // 2 MB: two chunks and the rest
	lines := bytes.SplitAfter(text, []byte("\n"))
	short := make([]byte, 0, 100_000*14) // lines shorter than streamLine: no room to adopt
	for i := range 100_000 {
		short = fmt.Appendf(short, "%x T s%d\n", 0x1000+i, i%500)
	}
	for _, tt := range []struct {
		name string
		data []byte
		// adopted: the records are used in place, in the mapping.
		adopted bool
	}{
		{"kallsyms", text, true},
		{"no final line end", bytes.TrimSuffix(text, []byte("\n")), true},
		{"blank line", bytes.Replace(text, []byte("sym_999\n"), []byte("sym_999\n\n"), 1), false},
		{"crlf", bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n")), true},
		{"vmlinux unsorted", bytes.Join(append([][]byte{lines[5000]}, lines...), nil), true},
		{"vmlinux after the modules", append(bytes.Clone(text), "ffffffff8f000000 T late_one\n"...), false},
		{"short lines", short, false},
		{"malformed line", bytes.Replace(text, []byte("sym_999\n"), []byte("sym_999\nffffffff81000000 T\n"), 1), false},
		{"restricted", regexp.MustCompile(`(?m)^[0-9a-f]{16}`).ReplaceAll(bigText(1000), []byte("0000000000000000")), false},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		require.NoError(t, os.WriteFile(path, tt.data, 0o644))
		want, werr := ParseBytes(path, tt.data, Options{})
		for _, workers := range workerCounts(1, 2, 5) {
			ix, err := Open(path, Options{MapText: true, Workers: workers})
			if werr != nil {
				require.EqualError(t, err, werr.Error(), "%s, workers %d", tt.name, workers)
				continue
			}
			require.NoError(t, err, "%s, workers %d", tt.name, workers)
			sameIndex(t, want, ix)
			require.NotNil(t, ix.mapping, "%s, workers %d: the file was read, not mapped", tt.name, workers)
			require.True(t, within(ix.mapping, unsafe.Pointer(unsafe.StringData(ix.data))))
			require.Equal(t, tt.adopted, ix.anon != nil && within(ix.anon, unsafe.Pointer(unsafe.SliceData(ix.syms))), "%s, workers %d: records adopted", tt.name, workers)
			s, err := ix.Lookup(Vmlinux, want.name(0), 1)
			require.NoError(t, err)
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(ix.mapping)))
			require.False(t, within(ix.mapping, unsafe.Pointer(unsafe.StringData(s.Name))), "a name handed out points into the file's mapping")
			for _, o := range ix.objs {
				require.False(t, within(ix.mapping, unsafe.Pointer(unsafe.StringData(o.name))), "%s, workers %d: object %s's name points into the file's mapping", tt.name, workers, o.name)
			}
			var anon uintptr
			if ix.anon != nil {
				anon = uintptr(unsafe.Pointer(unsafe.SliceData(ix.anon)))
			}
			require.NoError(t, ix.Close())
			require.False(t, mappedAt(t, lo), "%s: the file is still mapped after Close", tt.name)
			require.True(t, anon == 0 || !mappedAt(t, anon), "%s: the arrays are still mapped after Close", tt.name)
			require.Equal(t, want.name(0), s.Name)
		}
	}
	// Options.NoMap wins; a compressed file is streamed, not mapped.
	path := filepath.Join(dir, "kallsyms")
	ix, err := Open(path, Options{MapText: true, NoMap: true})
	require.NoError(t, err)
	require.Nil(t, ix.mapping)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(text)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path+".gz", gz.Bytes(), 0o644))
	ix2, err := Open(path+".gz", Options{MapText: true})
	require.NoError(t, err)
	require.Nil(t, ix2.mapping)
	sameIndex(t, ix, ix2)
}

// A mapped text's mappings go once the Index does.
func TestMapTextUnmappedWithIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	require.NoError(t, os.WriteFile(path, bigText(120_000), 0o644))
	ix, err := Open(path, Options{MapText: true})
	require.NoError(t, err)
	require.NotNil(t, ix.anon)
	file := uintptr(unsafe.Pointer(unsafe.SliceData(ix.mapping)))
	anon := uintptr(unsafe.Pointer(unsafe.SliceData(ix.anon)))
	gone := dropIndex(&ix, func() bool { return !mappedAt(t, file) && !mappedAt(t, anon) })
	require.True(t, gone, "the mappings were not released after the Index was collected")
}

// failAfter reads data, then fails with err instead of io.EOF.
type failAfter struct {
	r   pieceReader
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return 0, f.err
	}
	return n, err
}

// A stream that fails after chunks have gone to the workers is an error
// naming the input and wrapping the reader's; the workers stop, and the
// stream's mapping is unmapped.
func TestStreamReadError(t *testing.T) {
	text := bigText(120_000) // several chunks before the failure
	boom := errors.New("device on fire")
	for _, workers := range workerCounts(1, 2, 8) {
		before := runtime.NumGoroutine()
		p := newParser("k", &Options{Workers: workers})
		ix, err := p.stream(&failAfter{r: pieceReader{data: text, n: 4096}, err: boom}, 0)
		require.Nil(t, ix)
		require.ErrorIs(t, err, boom)
		require.EqualError(t, err, "k: device on fire")
		require.Positive(t, len(p.chunks), "workers %d: nothing was dispatched before the failure", workers)
		require.True(t, p.st != nil && p.st.mem == nil, "workers %d: the stream's mapping is kept", workers)
		require.Nil(t, p.jobs)
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.LessOrEqual(t, runtime.NumGoroutine(), before, "workers %d: goroutines left running", workers)
	}
}

// workerCounts are the parse's worker counts a test tries: in a light run
// (testutil.Sampled) the parallel ones only; make test has run them all
// natively first.
func workerCounts(all ...int) []int {
	if !testutil.Sampled() {
		return all
	}
	var out []int
	for _, w := range all {
		if w > 1 {
			out = append(out, w)
		}
	}
	return out
}

// A mapped file of 2 MiB or more is advised for huge pages (so that
// readahead fills the page cache with 2 MiB folios, see mapFile): the
// kernel lists the advice as "hg" in the mapping's VmFlags.
func TestMappedSnapshotHugePageAdvice(t *testing.T) {
	mapsRaw(t)
	testutil.HugePageAdvice(t)
	for _, tc := range []struct {
		lines int
		hg    bool
	}{{1000, false}, {80000, true}} {
		path := filepath.Join(t.TempDir(), "k.raw")
		require.NoError(t, mustParse(t, string(bigText(tc.lines)), Options{}).WriteSnapshotRawFile(path))
		ix, err := Open(path, Options{})
		require.NoError(t, err)
		require.NotNil(t, ix.mapping)
		flags := testutil.VmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(ix.mapping))))
		require.Equal(t, tc.hg, slices.Contains(flags, "hg"),
			"%d lines, %d bytes mapped: VmFlags %v", tc.lines, len(ix.mapping), flags)
		runtime.KeepAlive(ix)
	}
}

// Open maps a file before reading its head (see readRegular); a file it
// then reads instead (a text without MapText, a compact snapshot, a
// compressed text) keeps no mapping, and a raw snapshot or a text with
// MapText keeps exactly one while its Index lives.
func TestOpenKeepsOnlyTheMappingsItUses(t *testing.T) {
	mapsRaw(t)
	dir := t.TempDir()
	text := bigText(80000) // more than 2 MiB: the mapping is advised
	ix := mustParse(t, string(text), Options{})
	// (bigText repeats itself too much for the compact form)
	small := mustParse(t, sample, Options{})
	files := map[string]func(string) error{
		"k.txt":  func(p string) error { return os.WriteFile(p, text, 0o644) },
		"k.snap": small.WriteSnapshotFile,
		"k.raw":  ix.WriteSnapshotRawFile,
		"k.txt.gz": func(p string) error {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			z.Write(text)
			z.Close()
			return os.WriteFile(p, b.Bytes(), 0o644)
		},
	}
	for _, tc := range []struct {
		file string
		opts Options
		maps int
	}{
		{"k.txt", Options{}, 0},
		{"k.txt", Options{MapText: true}, 1},
		{"k.txt", Options{MapText: true, NoMap: true}, 0},
		// A compact snapshot's chunks are decoded from its mapping,
		// when first needed: the index keeps it.
		{"k.snap", Options{MapText: true}, 1},
		{"k.snap", Options{}, 1},
		{"k.snap", Options{NoMap: true}, 0},
		{"k.raw", Options{}, 1},
		{"k.raw", Options{NoMap: true}, 0},
		{"k.txt.gz", Options{MapText: true}, 0},
	} {
		path := filepath.Join(dir, tc.file)
		if _, err := os.Stat(path); err != nil {
			require.NoError(t, files[tc.file](path))
		}
		got, err := Open(path, tc.opts)
		require.NoError(t, err, tc.file)
		want := ix.Len()
		if tc.file == "k.snap" {
			want = small.Len()
		}
		assert.Equal(t, want, got.Len(), tc.file)
		assert.Equal(t, tc.maps, mappingsOf(t, path), "%s %+v", tc.file, tc.opts)
		runtime.KeepAlive(got)
		got.Close()
	}
	// A damaged compact snapshot, decoded from its mapping: the error,
	// and the mapping gone.
	b, err := os.ReadFile(filepath.Join(dir, "k.snap"))
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	bad := filepath.Join(dir, "bad.snap")
	require.NoError(t, os.WriteFile(bad, b, 0o644))
	_, err = Open(bad, Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "checksum mismatch")
	assert.Zero(t, mappingsOf(t, bad))
}

// mappingsOf counts this process's mappings of the file at path.
func mappingsOf(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasSuffix(strings.TrimSpace(line), " "+path) {
			n++
		}
	}
	return n
}

// TestRawSnapshotPadded: a raw snapshot that nearly fills its last 2 MiB
// is padded to them with zeros (counted in the payload's length, and
// checksummed), and loads as the index it was written from, mapped and
// read; version 4 (no release wrote it) is refused, and so is padding
// of 2 MiB or more.
func TestRawSnapshotPadded(t *testing.T) {
	// About 4 MB of raw snapshot: under a quarter of padding to 4 MiB.
	ix := mustParse(t, string(bigText(104000)), Options{})
	var buf bytes.Buffer
	require.NoError(t, ix.WriteSnapshotRaw(&buf))
	b := buf.Bytes()
	le := binary.LittleEndian
	require.Zero(t, len(b)%hugepage.Size, "%d bytes", len(b))
	require.Equal(t, uint64(len(b)-rawHeaderSize), le.Uint64(b[16:]))
	require.Equal(t, uint32(rawVersion), le.Uint32(b[8:]))
	pad := 0
	for pad < len(b) && b[len(b)-1-pad] == 0 {
		pad++
	}
	require.Greater(t, pad, 4096, "the padding")
	path := filepath.Join(t.TempDir(), "k.raw")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	for _, opts := range []Options{{}, {NoMap: true}} {
		got, err := Open(path, opts)
		require.NoError(t, err)
		sameIndex(t, ix, got)
		got.Close()
	}

	// Version 4 (no release wrote it) is refused; 2 MiB of padding too.
	small, _, _ := rawSample(t)
	v4 := bytes.Clone(small)
	le.PutUint32(v4[8:], 4)
	_, err := ParseBytes("v4", rawWithChecksum(v4), Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "version 4, which this build does not read")
	long := append(bytes.Clone(small), make([]byte, hugepage.Size)...)
	le.PutUint64(long[16:], uint64(len(long)-rawHeaderSize))
	_, err = ParseBytes("long", rawWithChecksum(long), Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), fmt.Sprintf("(%d bytes of padding)", hugepage.Size))
	long = long[:len(long)-1]
	le.PutUint64(long[16:], uint64(len(long)-rawHeaderSize))
	_, err = ParseBytes("long", rawWithChecksum(long), Options{})
	require.NoError(t, err, "just under 2 MiB of padding")
}

// A compact snapshot's index puts its names on huge pages only when told
// many lookups follow (Expect): a small patch's few would otherwise hold
// a huge page each. Lookups answer the same either way.
func TestExpectAdvisesNames(t *testing.T) {
	testutil.HugePageAdvice(t)
	text := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	path := filepath.Join(t.TempDir(), "k.snap")
	whole, err := Open(text, Options{})
	require.NoError(t, err)
	require.NoError(t, whole.WriteSnapshotFile(path))
	ix, err := Open(path, Options{})
	require.NoError(t, err)
	require.NotNil(t, ix.lazy)
	if !ix.lazy.mapped {
		t.Skip("no anonymous mappings here")
	}
	// The first huge page that starts in the names (the one they start
	// in is shared with the chains, and advised with them).
	names := uintptr(unsafe.Pointer(unsafe.StringData(ix.data)))
	names = (names + hugepage.Size - 1) &^ (hugepage.Size - 1)
	require.Less(t, names+hugepage.Size/8, uintptr(unsafe.Pointer(unsafe.StringData(ix.data)))+uintptr(len(ix.data)))
	hg := func() bool { return slices.Contains(testutil.VmFlags(t, names), "hg") }
	require.False(t, hg(), "the names before Expect")
	ix.Expect(10)
	require.False(t, hg(), "ten lookups: the names stay on small pages")
	ix.Expect(ix.Len())
	require.True(t, hg(), "a lookup per symbol: the names are advised")
	want, err := whole.Lookup("vmlinux", "vfs_read", 0)
	require.NoError(t, err)
	got, err := ix.Lookup("vmlinux", "vfs_read", 0)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, ix.Close())
}
