// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klpresolve/klpresolve/internal/input"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/pipeline"
)

// Resolve measures resolving module against kallsymsPath: the resolve
// phase per relocation, beside the kernel's old linear walk (Linux 6.1's
// klp_find_object_symbol(), one walk per relocation, measured on a sample
// of relocations because a full run takes seconds), and the whole check
// (read and index kallsyms, read the module, resolve).
func Resolve(module, kallsymsPath string) (*Report, error) {
	ix, err := kallsyms.Open(kallsymsPath, kallsyms.Options{})
	if err != nil {
		return nil, err
	}
	m, err := klp.Open(module)
	if err != nil {
		return nil, err
	}
	n := m.NumRelocs()
	if n == 0 {
		return nil, fmt.Errorf("%s: no livepatch relocations", module)
	}
	rep := newReport("resolve", module+" against "+kallsymsPath)
	rep.add("relocations", float64(n), "relocs", "")
	res, _ := nsPerOp(func(b *testing.B) {
		for b.Loop() {
			_ = m.Resolve(ix, klp.ResolveOptions{})
		}
	})
	data, err := os.ReadFile(kallsymsPath)
	if err != nil {
		return nil, err
	}
	k := reference.NewKernel(data)
	var sample []klp.Relocation
	for _, s := range m.Sections {
		for _, r := range s.Relocs {
			if len(sample) < 200 && r.Err == nil {
				sample = append(sample, r)
			}
		}
	}
	t := time.Now()
	for _, r := range sample {
		obj := r.Sym.Object
		if obj == kallsyms.Vmlinux {
			obj = ""
		}
		_, _ = k.OldLookup(obj, r.Sym.Name, r.Sym.Pos)
	}
	old := float64(time.Since(t).Nanoseconds()) / float64(max(len(sample), 1))
	whole := minTime(10, func() {
		ix2, _ := kallsyms.Open(kallsymsPath, kallsyms.Options{})
		m2, _ := klp.Open(module)
		_ = m2.Resolve(ix2, klp.ResolveOptions{})
	})
	// klp.Open against reading the same bytes (decompressed as Open
	// does): what describing the module adds to reading it.
	read := minTime(15, func() {
		b, _ := input.ReadFileChecked(module, 1<<30, nil)
		_, _, _ = input.Decompress(module, b, 1<<30)
	})
	open := minTime(15, func() { _, _ = klp.Open(module) })
	rep.add("read_module_ms", ms(read), "ms", "reference: the module's bytes read (and decompressed)")
	rep.add("open_module_ms", ms(open), "ms", "klp.Open: read and describe every section and relocation")
	rep.addTarget("open_vs_read", ratio(open, read), "x", "<=", 2, "")
	// The same check against a compact snapshot of the symbols, written
	// here: resolving against one must not cost more than the text.
	snap, err := os.CreateTemp("", "klpsnap")
	if err != nil {
		return nil, err
	}
	defer os.Remove(snap.Name())
	err = ix.WriteSnapshot(snap)
	if cerr := snap.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	wholeSnap := minTime(10, func() {
		ix2, _ := kallsyms.Open(snap.Name(), kallsyms.Options{})
		m2, _ := klp.Open(module)
		_ = m2.Resolve(ix2, klp.ResolveOptions{})
		_ = ix2.Close()
	})
	per := res / float64(n)
	rep.addTarget("resolve_ns_per_reloc", per, "ns", "<=", 100, "")
	rep.add("kernel_old_walk_ns_per_reloc", old, "ns", fmt.Sprintf("reference: Linux 6.1 walk, %d-relocation sample", len(sample)))
	rep.addTarget("old_walk_vs_resolve", old/per, "x", ">=", 1000, "")
	rep.add("whole_check_ms", ms(whole), "ms", "read+index kallsyms, read module, resolve; target well under 100")
	rep.add("whole_check_snapshot_ms", ms(wholeSnap), "ms", "the same against a compact snapshot of the symbols")
	rep.addTarget("snapshot_vs_text_check", ratio(wholeSnap, whole), "x", "<=", 1, "")
	if err := fleetFigures(rep, m, ix); err != nil {
		return nil, err
	}
	return rep, nil
}

// fleetCopies is how many copies of the kernel's snapshot fleetFigures
// checks the module against, in each form.
const fleetCopies = 30

// fleetFigures times pipeline.Fleet, as check runs it, checking m against
// fleetCopies copies of ix's compact snapshot and as many of its raw
// snapshot, the two taking turns. Each copy is a file of its own, just
// written (scripts/fleet-compare measures whole processes, memory
// included).
func fleetFigures(rep *Report, m *klp.Module, ix *kallsyms.Index) error {
	dir, err := os.MkdirTemp("", "klpfleet")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	copies := func(form string, write func(string) error) ([]string, error) {
		first := filepath.Join(dir, form+"-00.snap")
		if err := write(first); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(first)
		if err != nil {
			return nil, err
		}
		paths := []string{first}
		for i := 1; i < fleetCopies; i++ {
			p := filepath.Join(dir, fmt.Sprintf("%s-%02d.snap", form, i))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
		return paths, nil
	}
	compact, err := copies("compact", ix.WriteSnapshotFile)
	if err != nil {
		return err
	}
	raw, err := copies("raw", ix.WriteSnapshotRawFile)
	if err != nil {
		return err
	}
	check := func(paths []string) func() {
		kernels := pipeline.KernelFiles(paths...)
		return func() { _, _ = pipeline.Fleet(context.Background(), m, kernels, pipeline.FleetOptions{}) }
	}
	// Once first, to see that both forms do the same work: every copy
	// read, and as many symbols resolved in each.
	want, err := pipeline.Fleet(context.Background(), m, pipeline.KernelFiles(compact...), pipeline.FleetOptions{})
	if err != nil {
		return err
	}
	got, err := pipeline.Fleet(context.Background(), m, pipeline.KernelFiles(raw...), pipeline.FleetOptions{})
	if err != nil {
		return err
	}
	for i := range want {
		if want[i].Resolved == 0 || got[i].Resolved != want[i].Resolved {
			return fmt.Errorf("fleet: %s resolved %d, %s %d", want[i].Kernel, want[i].Resolved, got[i].Kernel, got[i].Resolved)
		}
	}
	ct, rt := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 5 {
		ct, rt = min(ct, minTime(1, check(compact))), min(rt, minTime(1, check(raw)))
	}
	rep.add("fleet_compact_ms", ms(ct), "ms", fmt.Sprintf("pipeline.Fleet over %d copies of the compact snapshot, best of 5 taking turns", fleetCopies))
	rep.add("fleet_raw_ms", ms(rt), "ms", "the same over copies of the raw snapshot")
	rep.addTarget("fleet_compact_vs_raw", ratio(ct, rt), "x", "<=", 1.2, "in one process; whole processes and memory: scripts/fleet-compare")
	return nil
}
