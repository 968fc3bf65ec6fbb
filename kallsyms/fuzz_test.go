// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("ffffffff81000000 T _stext\n"))
	f.Add([]byte("ffffffffc0000000 t x\t[m]\r\n\n"))
	f.Add([]byte("0000000000000000 A a\n"))
	f.Add([]byte("zz T x\n"))
	f.Add([]byte("ffffffff81000000 T a\x02b\nffffffff81000000 T c \t [m] \n"))
	// A module's lines one after another (modRun), and where they end:
	// another module of the same length, a longer one sharing its start,
	// a long name, a control byte, a last line without a line end; then a
	// line without its ']'.
	f.Add([]byte("ffffffffc0000000 t a\t[m]\nffffffffc0000010 t b\t[m]\nffffffffc0000014 t b\t[n]\nffffffffc0000020 t c\t[mm]\n" +
		"ffffffffc0000030 t a_name_of_more_than_thirty_two_bytes\t[mm]\nffffffffc0000040 t d\x01e\t[mm]\nffffffffc0000060 T g\t[mm]"))
	f.Add([]byte("ffffffffc0000000 t a\t[m]\nffffffffc0000010 t b\t[m\n"))
	f.Add([]byte("ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ParseBytes("fuzz", data, Options{})
		if (ix == nil) == (err == nil) {
			t.Fatalf("index %v with error %v", ix, err)
		}
		sameAsSlowPath(t, data, ix, err)
		// Sniff takes what parses for a symbol list (check --kernels
		// leaves out what it does not).
		if err == nil && ix.Len() > 0 && !Sniff(data[:min(len(data), SniffLen)]) {
			t.Fatalf("Sniff refuses a symbol list that parses: %q", data[:min(len(data), 200)])
		}
		if err != nil {
			inputErrorKind(t, err)
			return
		}
		exercise(t, ix)
	})
}

// sameAsSlowPath parses data again with a blank added at the end of every
// line, which sends every line through parseLine instead of the fast path
// and changes nothing else, and checks that both give the same result.
func sameAsSlowPath(t testing.TB, data []byte, ix *Index, err error) {
	slow := append(bytes.ReplaceAll(data, []byte("\n"), []byte(" \n")), ' ')
	ix2, err2 := ParseBytes("fuzz", slow, Options{})
	if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
		t.Fatalf("fast path: %v; slow path: %v", err, err2)
	}
	if err != nil {
		return
	}
	sameIndex(t, ix, ix2)
}

// sameIndex checks that two indexes hold the same objects and the same
// symbols in the same order, and answer lookups alike.
func sameIndex(t testing.TB, ix, ix2 *Index) {
	if a, b := fmt.Sprint(ix.Objects()), fmt.Sprint(ix2.Objects()); a != b {
		t.Fatalf("objects differ:\n%s\n%s", a, b)
	}
	for _, o := range ix.Objects() {
		var a, b []Symbol
		ix.Symbols(o.Name, func(s Symbol) bool { a = append(a, s); return true })
		ix2.Symbols(o.Name, func(s Symbol) bool { b = append(b, s); return true })
		if len(a) != len(b) {
			t.Fatalf("%s: %d symbols, and %d", o.Name, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: symbol %d: %+v, and %+v", o.Name, i, a[i], b[i])
			}
			if i%61 == 0 && !o.Pseudo {
				s1, err1 := ix.Lookup(o.Name, a[i].Name, 0)
				s2, err2 := ix2.Lookup(o.Name, a[i].Name, 0)
				if s1 != s2 || (err1 == nil) != (err2 == nil) {
					t.Fatalf("%s:%s: %+v %v, and %+v %v", o.Name, a[i].Name, s1, err1, s2, err2)
				}
			}
		}
	}
}

// seedSnapshot is the sample (LTO mode) written by write: a fuzz seed.
func seedSnapshot(f *testing.F, write func(*Index, io.Writer) error) []byte {
	ix, err := Parse("seed", bytes.NewReader([]byte(sample)), Options{LTO: true})
	if err != nil {
		f.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(ix, &b); err != nil {
		f.Fatal(err)
	}
	return b.Bytes()
}

// FuzzSnapshot feeds the compact loader forged files whose checksum is
// right: nothing may panic or allocate what the file does not justify,
// and a loaded index must answer every lookup.
func FuzzSnapshot(f *testing.F) {
	b := seedSnapshot(f, (*Index).WriteSnapshot)
	f.Add(b)
	f.Add(b[:40])
	ix, err := ParseBytes("seed", []byte(sample), Options{})
	if err != nil {
		f.Fatal(err)
	}
	chunky, err := compactSnapshot(ix.snapshotParts(20), false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(chunky)
	// Chunks whose frames LZ4 shrinks: the decoder's input.
	var text strings.Builder
	for i := range 120 {
		fmt.Fprintf(&text, "%016x t helper_function_%d\n", 0xffffffff81000000+uint64(i)*0x40, i)
	}
	if ix, err = ParseBytes("seed", []byte(text.String()), Options{}); err != nil {
		f.Fatal(err)
	}
	lz, err := compactSnapshot(ix.snapshotParts(512), false)
	if err != nil {
		f.Fatal(err)
	}
	if le := binary.LittleEndian; le.Uint32(lz[headerSize+16:]) >= le.Uint32(lz[headerSize+20:]) {
		f.Fatal("the seed's first names frame is stored as it is")
	}
	f.Add(lz)
	// Each input is also loaded with one Arena, whose memory
	// and bookkeeping the inputs before it left as they left them: it
	// must answer as the index without one does.
	var arena Arena
	defer arena.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < headerSize {
			return
		}
		d := append([]byte(nil), data...)
		copy(d, snapshotMagic)
		binary.LittleEndian.PutUint32(d[8:], snapshotVersion)
		binary.LittleEndian.PutUint64(d[24:], compactChecksum(d))
		ix, err := ParseBytes("fuzz", d, Options{})
		if (ix == nil) == (err == nil) {
			t.Fatalf("index %v with error %v", ix, err)
		}
		in, aerr := ParseBytes("fuzz", d, Options{Arena: &arena})
		if (err == nil) != (aerr == nil) {
			t.Fatalf("without an Arena: %v; with one: %v", err, aerr)
		}
		if err != nil {
			inputErrorKind(t, err)
			return
		}
		defer in.Close()
		sameDecoded(t, ix, in)
		exercise(t, ix)
	})
}

// sameDecoded fails t unless ix and in, two indexes of one snapshot,
// decode alike (the same error kind or none) and then list the same
// symbols.
func sameDecoded(t *testing.T, ix, in *Index) {
	t.Helper()
	err, ierr := ix.DecodeAll(), in.DecodeAll()
	if (err == nil) != (ierr == nil) || err != nil && errors.Is(err, ErrMalformed) != errors.Is(ierr, ErrMalformed) {
		t.Fatalf("decoding: %v, and with an Arena: %v", err, ierr)
	}
	if err != nil {
		return
	}
	for _, o := range ix.Objects() {
		var want, got []Symbol
		ix.Symbols(o.Name, func(s Symbol) bool { want = append(want, s); return true })
		in.Symbols(o.Name, func(s Symbol) bool { got = append(got, s); return true })
		if !slices.Equal(want, got) {
			t.Fatalf("%s: %d symbols, and with an Arena %d, not the same", o.Name, len(want), len(got))
		}
	}
}

// inputErrorKind fails t unless err is one of the kinds a bad input
// gives (a caller tells them apart with errors.Is), naming the input.
func inputErrorKind(t *testing.T, err error) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), "fuzz") {
		t.Fatalf("error does not name the input: %v", err)
	}
	for _, k := range []error{ErrMalformed, ErrEmpty, ErrRestricted, ErrPlaceholder, ErrTooLarge, ErrCorrupt} {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("error of no documented kind (%T): %v", err, err)
}

// exercise runs every read path of ix, which must never panic.
func exercise(t *testing.T, ix *Index) {
	for _, o := range ix.Objects() {
		n := 0
		ix.Symbols(o.Name, func(s Symbol) bool {
			_, err := ix.Lookup(o.Name, s.Name, 0)
			if err != nil {
				_ = err.Error()
			}
			_, _ = ix.Lookup(o.Name, s.Name, 2)
			_, _ = ix.LookupName(o.Name + ":" + s.Name)
			// What the kernel's table holds is a part of what the input
			// lists: LookupListed finds one of its symbols.
			if l, err := ix.LookupListed(o.Name, s.Name, 1); err == nil {
				if !slices.ContainsFunc(ix.Candidates(o.Name, s.Name), func(c Symbol) bool { return c.Address == l.Address }) {
					t.Fatalf("%s:%s,1: found at %#x, which the input does not list", o.Name, s.Name, l.Address)
				}
			}
			if len(ix.CandidatesListed(o.Name, s.Name)) > len(ix.Candidates(o.Name, s.Name)) {
				t.Fatalf("%s:%s: more listed candidates than candidates", o.Name, s.Name)
			}
			// A symbol's own address is in its object (or in the first
			// alias's there): found, never past the object's end.
			// Absolute symbols are values, not addresses: Addr skips them.
			if a, ok := ix.Addr(s.Address); ok {
				_ = a.String()
			} else if s.Type|0x20 != 'a' {
				t.Fatalf("%s:%s at %#x: not found by Addr (%+v)", o.Name, s.Name, s.Address, a)
			}
			n++
			return n < 50
		})
	}
	_, _ = ix.Addr(^uint64(0))
	_, _ = ix.Arch()
	if k := ix.KernelKallsyms(); k.Symbols > ix.Len() {
		t.Fatalf("the kernel's table holds %d symbols of %d", k.Symbols, ix.Len())
	}
	fmt.Fprint(io.Discard, ix.Objects())
}

// FuzzRawSnapshot feeds the raw loader's validation forged files whose
// checksum is right: nothing may panic, and a loaded index must answer
// every lookup (no probe or chain may loop).
func FuzzRawSnapshot(f *testing.F) {
	b := seedSnapshot(f, (*Index).WriteSnapshotRaw)
	f.Add(b)
	f.Add(b[:rawHeaderSize])
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < rawHeaderSize {
			return
		}
		d := append([]byte(nil), data...)
		copy(d, snapshotMagic)
		binary.LittleEndian.PutUint32(d[8:], rawVersion)
		ix, err := ParseBytes("fuzz", rawWithChecksum(d), Options{})
		if (ix == nil) == (err == nil) {
			t.Fatalf("index %v with error %v", ix, err)
		}
		if err != nil {
			inputErrorKind(t, err)
		}
		if err == nil {
			exercise(t, ix)
			_, _ = ix.Lookup("vmlinux", "surely_absent_name", 0)
		}
	})
}

// FuzzImage: a kernel image's kallsyms tables, as fakeImage writes them
// in each layout, mutated: never a panic; an index that is read is in
// address order, each name within KSYM_NAME_LEN, and says it came from
// an image; an error says which file and is ErrImage or ErrNoKallsyms.
func FuzzImage(f *testing.F) {
	for _, layout := range []string{LayoutBaseRelative, LayoutTablesLast, LayoutPCRelative} {
		f.Add(fakeImage(layout, fakeSyms(300), false))
	}
	f.Add(fakeImage(LayoutTablesLast, append([]fakeSym{{0, 'A', "fixed_percpu_data"}}, fakeSyms(40)...), true))
	f.Add(fakeARM64Image(LayoutBaseRelative, fakeSymsAt(fakeARM64Text, 100), true))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ParseBytes("fuzz", data, Options{})
		if err != nil {
			if !maybeImage(data[:min(len(data), 1024)]) {
				return // a text's error: FuzzParse's
			}
			if !errors.Is(err, ErrImage) && !errors.Is(err, ErrNoKallsyms) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of no known kind: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, ok := ix.Image(); !ok && maybeImage(data[:min(len(data), 1024)]) {
			t.Fatal("an image's index does not say so")
		}
		var last uint64
		ix.Symbols(Vmlinux, func(s Symbol) bool {
			if s.Address < last || len(s.Name) >= KSYMNameLen {
				t.Fatalf("symbol %+v after address %#x", s, last)
			}
			last = s.Address
			return true
		})
	})
}

// FuzzParseStream: a compressed stream, decompressed while it is parsed,
// under a small bound: what it yields stays within the bound, and
// anything else is an error of a documented kind that names the input.
func FuzzParseStream(f *testing.F) {
	const bound = 1000
	for _, text := range [][]byte{[]byte(sample), bytes.Repeat([]byte("ffffffff81000000 t bomb\n"), 2*bound)} {
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write(text)
		_ = w.Close()
		f.Add(gz.Bytes())
		var zs bytes.Buffer
		z, err := zstd.NewWriter(&zs)
		if err != nil {
			f.Fatal(err)
		}
		_, _ = z.Write(text)
		_ = z.Close()
		f.Add(zs.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Parse("fuzz", bytes.NewReader(data), Options{MaxSymbols: bound})
		if (ix == nil) == (err == nil) {
			t.Fatalf("index %v with error %v", ix, err)
		}
		if err != nil {
			if !errors.Is(err, ErrImage) && !errors.Is(err, ErrNoKallsyms) {
				inputErrorKind(t, err)
			}
			return
		}
		if _, image := ix.Image(); !image && ix.Len() > bound {
			t.Fatalf("%d symbols from a stream bounded to %d lines", ix.Len(), bound)
		}
		exercise(t, ix)
	})
}
