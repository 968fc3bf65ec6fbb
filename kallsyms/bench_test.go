// SPDX-License-Identifier: GPL-2.0-only

package kallsyms_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// The benchmarks run on the 122k-line /proc/kallsyms of a live 6.18 kernel,
// beside the references of internal/reference. Compare them in one run:
//
//	go test ./kallsyms -run '^$' -bench . -benchmem
const benchFile = "host/kallsyms-6.18.44-firecracker.txt"

func BenchmarkReadFile(b *testing.B) {
	p := testutil.Corpus(b, benchFile)
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	p := testutil.Corpus(b, benchFile)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kallsyms.Open(p, kallsyms.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNaiveParse(b *testing.B) {
	p := testutil.Corpus(b, benchFile)
	b.ReportAllocs()
	for b.Loop() {
		d, _ := os.ReadFile(p)
		_ = reference.NaiveParse(d)
	}
}

// BenchmarkScanHashFloor is the least any index keyed by the xxhash of the
// names can cost after the read (BenchmarkReadFile): every line found and
// its name hashed, on every core, nothing stored.
func BenchmarkScanHashFloor(b *testing.B) {
	d, err := os.ReadFile(testutil.Corpus(b, benchFile))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_, _ = reference.ScanHash(d, runtime.GOMAXPROCS(0))
	}
}

func BenchmarkOpenSnapshot(b *testing.B) {
	benchOpenSnapshot(b, (*kallsyms.Index).WriteSnapshotFile)
}

// BenchmarkOpenSnapshotRaw loads a raw snapshot as written by
// WriteSnapshotRawFile (mapped, checksummed, validated): set it beside
// BenchmarkOpen, whose text it was made from (issue 2: at least 5x faster).
func BenchmarkOpenSnapshotRaw(b *testing.B) {
	benchOpenSnapshot(b, (*kallsyms.Index).WriteSnapshotRawFile)
}

// benchOpenSnapshot opens the snapshot write makes of the corpus file.
func benchOpenSnapshot(b *testing.B, write func(*kallsyms.Index, string) error) {
	p := testutil.Corpus(b, benchFile)
	ix, err := kallsyms.Open(p, kallsyms.Options{})
	if err != nil {
		b.Fatal(err)
	}
	snap := b.TempDir() + "/k.snap"
	if err := write(ix, snap); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kallsyms.Open(snap, kallsyms.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func lookupSetup(b *testing.B) (*kallsyms.Index, *reference.Kernel, []query) {
	p := testutil.Corpus(b, benchFile)
	ix, err := kallsyms.Open(p, kallsyms.Options{})
	if err != nil {
		b.Fatal(err)
	}
	d, _ := os.ReadFile(p)
	return ix, reference.NewKernel(d), spreadQueries(b, ix, 4096)
}

// query is one lookup: object, name and the sympos it needs.
type query struct {
	Object, Name string
	Pos          uint64
}

// spreadQueries takes n symbols of ix at an even stride through its
// objects, each with the position among its namesakes that makes it
// resolve (0 when it is unique). (klpresolve bench picks its queries at
// random; these stay the same from one run to the next.)
func spreadQueries(b *testing.B, ix *kallsyms.Index, n int) []query {
	var all []kallsyms.Symbol
	for _, o := range ix.Objects() {
		if !o.Pseudo {
			ix.Symbols(o.Name, func(s kallsyms.Symbol) bool { all = append(all, s); return true })
		}
	}
	var q []query
	for i := 0; i < len(all) && len(q) < n; i += max(1, len(all)/n) {
		s := all[i]
		x := query{Object: s.Object, Name: s.Name}
		if cands := ix.Candidates(s.Object, s.Name); len(cands) > 1 {
			for _, c := range cands {
				if c.Address == s.Address {
					x.Pos = uint64(c.Pos)
				}
			}
		}
		if _, err := ix.Lookup(x.Object, x.Name, x.Pos); err == nil {
			q = append(q, x)
		}
	}
	if len(q) == 0 {
		b.Fatal("no symbol resolves")
	}
	return q
}

func kobj(o string) string {
	if o == kallsyms.Vmlinux {
		return ""
	}
	return o
}

func BenchmarkLookup(b *testing.B) {
	ix, _, q := lookupSetup(b)
	benchLookups(b, ix, q)
}

// benchLookups looks up q's entries in ix, one after another.
func benchLookups(b *testing.B, ix *kallsyms.Index, q []query) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x := &q[i%len(q)]
		if _, err := ix.Lookup(x.Object, x.Name, x.Pos); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkKernelCurrentLookup(b *testing.B) {
	_, k, q := lookupSetup(b)
	i := 0
	for b.Loop() {
		x := &q[i%len(q)]
		if _, ok := k.CurrentLookup(kobj(x.Object), x.Name, x.Pos); !ok {
			b.Fatal(x)
		}
		i++
	}
}

func BenchmarkKernelOldLookup(b *testing.B) {
	_, k, q := lookupSetup(b)
	i := 0
	for b.Loop() {
		x := &q[i%len(q)]
		if _, ok := k.OldLookup(kobj(x.Object), x.Name, x.Pos); !ok {
			b.Fatal(x)
		}
		i++
	}
}

// BenchmarkOpenMapText is Open as klpresolve's commands call it: the text
// mapped, the arrays in a mapping of their own, closed after use.
func BenchmarkOpenMapText(b *testing.B) {
	p := testutil.Corpus(b, benchFile)
	b.ReportAllocs()
	for b.Loop() {
		ix, err := kallsyms.Open(p, kallsyms.Options{MapText: true})
		if err != nil {
			b.Fatal(err)
		}
		_ = ix.Close()
	}
}

// BenchmarkLookupSnapshot is BenchmarkLookup in the index of the
// compact snapshot of the same file, every chunk decoded first.
func BenchmarkLookupSnapshot(b *testing.B) {
	ix, _, q := lookupSetup(b)
	snap := b.TempDir() + "/k.snap"
	if err := ix.WriteSnapshotFile(snap); err != nil {
		b.Fatal(err)
	}
	s, err := kallsyms.Open(snap, kallsyms.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.DecodeAll(); err != nil {
		b.Fatal(err)
	}
	benchLookups(b, s, q)
}
