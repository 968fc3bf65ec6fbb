// SPDX-License-Identifier: GPL-2.0-only

package cfi

import (
	"fmt"
	"testing"
)

func benchSet(b *testing.B, n int) (*Set, []uint64) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	const a uint64 = 0xffffffffc0000000
	var addrs []uint64
	for i := range n {
		base := uint64(a) + uint64(i*8*page)
		if _, err := s.Add(Module{Name: fmt.Sprint("m", i), TextStart: base, TextEnd: base + 6*page, CheckFn: base}); err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, base+2*page+64)
	}
	return s, addrs
}

// BenchmarkLookup: one lookup with its own read-side section (enter,
// shadow lookup, exit), the cost an indirect-call check would pay.
func BenchmarkLookup(b *testing.B) {
	s, addrs := benchSet(b, 200)
	r := s.NewReader()
	defer r.Close()
	i := 0
	for b.Loop() {
		if _, src := r.Lookup(addrs[i%len(addrs)]); src != InShadow {
			b.Fatal(src)
		}
		i++
	}
}

// BenchmarkLookupHeld: lookups inside one long read-side section.
func BenchmarkLookupHeld(b *testing.B) {
	s, addrs := benchSet(b, 200)
	r := s.NewReader()
	defer r.Close()
	r.Enter()
	defer r.Exit()
	i := 0
	for b.Loop() {
		if _, ok := r.LookupShadow(addrs[i%len(addrs)]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

// BenchmarkLookupParallel: every core looking up at once, each with its
// own Reader (per-reader state on its own cache line).
func BenchmarkLookupParallel(b *testing.B) {
	s, addrs := benchSet(b, 200)
	b.RunParallel(func(pb *testing.PB) {
		r := s.NewReader()
		defer r.Close()
		i := 0
		for pb.Next() {
			r.Lookup(addrs[i%len(addrs)])
			i++
		}
	})
}

// BenchmarkAdd: one module add (and its remove), no readers: the
// writer's own cost per update (build, publish, queue the old shadow).
func BenchmarkAdd(b *testing.B) {
	for _, mode := range []Reclaim{Deferred, Synchronous} {
		b.Run(mode.String(), func(b *testing.B) {
			s, err := New(Options{Reclaim: mode})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const a uint64 = 0xffffffffc0000000
			for b.Loop() {
				if _, err := s.Add(Module{Name: "m", TextStart: a, TextEnd: a + 6*page, CheckFn: a}); err != nil {
					b.Fatal(err)
				}
				if err := s.Remove("m"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
