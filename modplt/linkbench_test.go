// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"hash/fnv"
	"path/filepath"
	"testing"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func nearResolver(base uint64) Resolver {
	return func(name string) (uint64, bool) {
		h := fnv.New64a()
		h.Write([]byte(name))
		return base - 48<<20 + h.Sum64()%(32<<20)&^3, true
	}
}

// BenchmarkLink links the two largest corpus modules; relocs/s is the
// apply phase's rate.
func BenchmarkLink(b *testing.B) {
	for _, path := range []string{"arm64/modules/amdgpu.ko", "amd64/modules/xfs.ko"} {
		m, err := Open(testutil.Corpus(b, path))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m.Name, func(b *testing.B) {
			benchLink(b, m, LinkOptions{Resolve: nearResolver(m.DefaultBase(LinkOptions{}))})
		})
	}
}

// BenchmarkLinkPPC64 links Debian's ppc64el xfs.ko (testutil.PPC64EL):
// the kernel's sort of each section and the stubs.
func BenchmarkLinkPPC64(b *testing.B) {
	root := testutil.PPC64EL(b)
	m, err := Open(filepath.Join(root, "lib", "modules", testutil.PPC64ELRelease, "kernel", "fs", "xfs", "xfs.ko"))
	if err != nil {
		b.Fatal(err)
	}
	near := nearResolver(m.DefaultBase(LinkOptions{}))
	benchLink(b, m, LinkOptions{Resolve: near, Kernel: near})
}

func benchLink(b *testing.B, m *Module, opts LinkOptions) {
	var relocs int
	var apply float64
	best := 0.0
	for b.Loop() {
		img, err := m.Link(opts)
		if err != nil || !img.OK() {
			b.Fatal(err)
		}
		relocs += img.Relocs
		apply += img.ApplyTime.Seconds()
		best = max(best, float64(img.Relocs)/img.ApplyTime.Seconds())
	}
	// The mean includes the garbage collector, busy with the previous
	// links' images; the best is what one link in a process (klpresolve
	// link) sees.
	b.ReportMetric(float64(relocs)/apply/1e6, "Mrelocs/s-apply-mean")
	b.ReportMetric(best/1e6, "Mrelocs/s-apply-best")
}
