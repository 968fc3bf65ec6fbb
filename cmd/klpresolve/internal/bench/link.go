// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"hash/fnv"
	"testing"

	"github.com/klpresolve/klpresolve/modplt"
)

// Link measures linking module: the whole Link (count, layout, apply) and
// the relocations it applies per second on one core. Undefined symbols
// are given made-up addresses near the module (so most branches are in
// range, as on a real kernel), derived from their names; so are the
// kernel's own symbols an architecture's loader takes (powerpc's .TOC.
// and ftrace entry points, LinkOptions.Kernel).
func Link(module string) (*Report, error) {
	m, err := modplt.Open(module)
	if err != nil {
		return nil, err
	}
	near := NearResolver(m.DefaultBase(modplt.LinkOptions{}))
	opts := modplt.LinkOptions{Resolve: near, Kernel: near}
	img, err := m.Link(opts)
	if err != nil {
		return nil, err
	}
	rep := newReport("link", module)
	rep.add("relocations applied", float64(img.Relocs), "relocs", m.Arch)
	rep.add("relocations failed", float64(len(img.Errors)), "relocs", "")
	ns, allocs := nsPerOp(func(b *testing.B) {
		for b.Loop() {
			_, _ = m.Link(opts)
		}
	})
	rep.add("link", ns/1e6, "ms", "count, layout, apply")
	rep.add("link allocations", allocs, "allocs", "")
	// The apply phase alone, best of several links.
	best := img.ApplyTime
	for range 20 {
		if x, err := m.Link(opts); err == nil {
			best = min(best, x.ApplyTime)
		}
	}
	rep.add("apply", float64(best.Nanoseconds())/1e6, "ms", "applying the relocations, best of 20")
	rep.addTarget("apply rate", float64(img.Relocs)/best.Seconds()/1e6, "Mrelocs/s", ">=", 50, "one core")
	rep.add("link rate", float64(img.Relocs)/(ns/1e9)/1e6, "Mrelocs/s", "whole link (count, layout, apply), one core")
	return rep, nil
}

// NearResolver gives every symbol an address 16-48 MiB below base (a
// module's load address), from a hash of its name.
func NearResolver(base uint64) modplt.Resolver {
	return func(name string) (uint64, bool) {
		h := fnv.New64a()
		h.Write([]byte(name))
		return base - 48<<20 + h.Sum64()%(32<<20)&^3, true
	}
}
