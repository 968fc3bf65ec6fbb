// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"testing"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// BenchmarkCount counts amdgpu.ko (48,348 branch relocations) three ways
// in one run: the faithful port of Linux 6.1's algorithm (partition,
// heapsort, compare with the previous entry), kernel mode and optimal
// mode. All start from the parsed module.
func BenchmarkCount(b *testing.B) {
	m, err := Open(testutil.Corpus(b, "arm64/modules/amdgpu.ko"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reference=kernel-port", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := reference.KernelARM64PLTs(m.f); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []Mode{ModeKernel, ModeOptimal} {
		b.Run("mode="+mode.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Count(Options{Mode: mode}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
