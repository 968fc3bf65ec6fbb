// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"os"
	"testing"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// testdata/klp/big.ko.zst: 20,000 livepatch relocations to 5,000 vmlinux
// functions (make fixtures builds it from a generated C source).
func bigSetup(b *testing.B) (*Module, *kallsyms.Index, string) {
	k := testutil.Corpus(b, "amd64/kallsyms-6.1.0-57-amd64.txt")
	ix, err := kallsyms.Open(k, nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := Open(fixture("big.ko.zst"))
	if err != nil {
		b.Fatal(err)
	}
	return m, ix, k
}

func BenchmarkResolve20k(b *testing.B) {
	m, ix, _ := bigSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if r := m.Resolve(ix); r.Resolved != 20000 {
			b.Fatal(r.Resolved)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20000, "ns/reloc")
}

// BenchmarkResolveKernelOldWalk resolves the first 100 relocations of the
// same module with Linux 6.1's walk of every symbol per relocation.
func BenchmarkResolveKernelOldWalk(b *testing.B) {
	m, _, k := bigSetup(b)
	d, _ := os.ReadFile(k)
	kern := reference.NewKernel(d)
	var rs []Relocation
	for _, s := range m.Sections {
		rs = append(rs, s.Relocs...)
	}
	rs = rs[:100]
	for b.Loop() {
		for _, r := range rs {
			if _, ok := kern.OldLookup("", r.Sym.Name, r.Sym.Pos); !ok {
				b.Fatal(r.Sym)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/reloc")
}
