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
	ix, err := kallsyms.Open(k, kallsyms.Options{})
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
		if r := m.Resolve(ix, ResolveOptions{}); r.Resolved != 20000 {
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

// BenchmarkOpenBig reads and describes big.ko (20,000 livepatch
// relocations, 2.5 MB decompressed) from memory, beside reading its
// bytes: Parse's cost in proportion to the file.
func BenchmarkOpenBig(b *testing.B) {
	m, err := Open(fixture("big.ko.zst"))
	if err != nil {
		b.Fatal(err)
	}
	data := m.elf.Data
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Parse("big.ko", data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		// The reference: the bytes copied once, as reading them does.
		b.SetBytes(int64(len(data)))
		buf := make([]byte, len(data))
		for b.Loop() {
			copy(buf, data)
		}
	})
}
