// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"testing"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/modplt"
)

// PLT measures counting a module's PLT entries in kernel and optimal mode,
// beside a faithful port of Linux 6.1's arm64 algorithm (partition,
// heapsort, compare with the previous entry) when the module is arm64.
// All three start from the parsed module.
func PLT(module string) (*Report, error) {
	m, err := modplt.Open(module)
	if err != nil {
		return nil, err
	}
	k, err := m.Count(modplt.Options{})
	if err != nil {
		return nil, err
	}
	rep := newReport("plt", module)
	rep.add("relocations", float64(k.Totals.Relocs), "relocs", m.Arch)
	rep.add("branch relocations", float64(k.Totals.Branches), "relocs", "")
	// The reference (arm64 only) and both modes, best of 3 taking turns.
	fns := []func(b *testing.B){}
	if m.Arch == "arm64" {
		f, err := elfobj.Open(module, 0)
		if err != nil {
			return nil, err
		}
		fns = append(fns, func(b *testing.B) {
			for b.Loop() {
				_, _, _ = reference.KernelARM64PLTs(f)
			}
		})
	}
	modes := []modplt.Mode{modplt.ModeKernel, modplt.ModeOptimal}
	for _, mode := range modes {
		fns = append(fns, func(b *testing.B) {
			for b.Loop() {
				_, _ = m.Count(modplt.Options{Mode: mode})
			}
		})
	}
	ns, allocs := bestOf(3, fns...)
	var ref float64
	if m.Arch == "arm64" {
		ref, ns, allocs = ns[0], ns[1:], allocs[1:]
		rep.add("reference (Linux 6.1 port)", ref/1e6, "ms", "partition, lib/sort.c heapsort, count_plts(); best of 3")
	}
	for i, mode := range modes {
		rep.add(mode.String()+" mode", ns[i]/1e6, "ms", "best of 3, taking turns with the reference")
		rep.add(mode.String()+" mode allocations", allocs[i], "allocs", "")
		if ref > 0 {
			rep.add(mode.String()+" mode speedup", ref/ns[i], "x", "reference / "+mode.String())
		}
	}
	return rep, nil
}
