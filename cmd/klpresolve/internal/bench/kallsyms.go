// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Query is one lookup used by the lookup benchmarks.
type Query struct {
	Object, Name string
	Pos          uint64
}

// Queries picks n random symbols of ix that resolve, with the sympos that
// makes each one resolve (0 when unique), deterministically.
func Queries(ix *kallsyms.Index, n int) []Query {
	var all []kallsyms.Symbol
	for _, o := range ix.Objects() {
		if o.Pseudo {
			continue
		}
		ix.Symbols(o.Name, func(s kallsyms.Symbol) bool { all = append(all, s); return true })
	}
	r := newRand()
	var q []Query
	for tries := 0; len(q) < n && tries < 20*n; tries++ {
		s := all[r.IntN(len(all))]
		c := ix.Candidates(s.Object, s.Name)
		pos := uint64(0)
		if len(c) > 1 {
			for _, x := range c {
				if x.Address == s.Address {
					pos = uint64(x.Pos)
					break
				}
			}
		}
		if _, err := ix.Lookup(s.Object, s.Name, pos); err != nil {
			continue
		}
		q = append(q, Query{s.Object, s.Name, pos})
	}
	return q
}

// Kallsyms measures reading, parsing and indexing path, lookups, and
// snapshot loading, each beside its reference. With self (see
// OneShotOptions.Self), reading and indexing are also measured in fresh
// processes (OneShot), reported as the oneshot_ figures.
func Kallsyms(path string, self []string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ix, err := kallsyms.Open(path, kallsyms.Options{})
	if err != nil {
		return nil, err
	}
	rep := newReport("kallsyms", path)
	lines := bytes.Count(data, []byte{'\n'})
	rep.add("input_bytes", float64(len(data)), "bytes", "")
	rep.add("input_lines", float64(lines), "lines", "")

	read := minTime(15, func() { _, _ = os.ReadFile(path) })
	parse := minTime(15, func() { _, _ = kallsyms.Open(path, kallsyms.Options{}) })
	naive := minTime(5, func() { d, _ := os.ReadFile(path); _ = reference.NaiveParse(d) })
	rep.add("read_file_ms", ms(read), "ms", "os.ReadFile of the input")
	rep.add("parse_index_ms", ms(parse), "ms", "kallsyms.Open: read, parse, index")
	rep.add("naive_parse_ms", ms(naive), "ms", "reference: bufio.Scanner+strings.Fields+map")
	rep.add("parse_vs_read", ratio(parse, read), "x", "in one process: the read reuses warm memory; no target (floor_vs_read is the least it can be)")
	rep.addTarget("naive_vs_parse", ratio(naive, parse), "x", ">=", 15, "")
	floor := minTime(15, func() { _, _ = reference.ScanHash(data, runtime.GOMAXPROCS(0)) })
	rep.add("scan_hash_floor_ms", ms(floor), "ms", "reference: find each line and xxhash its name on every core, store nothing")
	rep.add("floor_vs_read", ratio(read+floor, read), "x", "the least parse_vs_read can be: the read, then the floor")
	// The parse against what any index keyed by the names' hashes must
	// do (read, find every line, hash every name): what is left is
	// storing the records and building the tables.
	rep.addTarget("parse_vs_floor", ratio(parse, read+floor), "x", "<=", 2, "the parse against the read and the floor")
	if self != nil {
		one, err := OneShot(OneShotOptions{Self: self, Input: path})
		if err != nil {
			return nil, err
		}
		for _, f := range one.Figures {
			f.Name = "oneshot_" + f.Name
			rep.Figures = append(rep.Figures, f)
		}
	}

	_, allocs := nsPerOp(func(b *testing.B) {
		for b.Loop() {
			_, _ = kallsyms.Open(path, kallsyms.Options{})
		}
	})
	rep.addTarget("allocs_per_10k_lines", allocs*10000/float64(lines), "allocs", "<", 10, "")
	rep.add("index_bytes", float64(ix.MemSize()), "bytes", "")
	rep.addTarget("index_vs_input", float64(ix.MemSize())/float64(len(data)), "x", "<=", 2, "")

	q := Queries(ix, 4096)
	k := reference.NewKernel(data)
	obj := func(o string) string {
		if o == kallsyms.Vmlinux {
			return ""
		}
		return o
	}
	ns, as := bestOf(3, cycling(q, func(o, n string, p uint64) { _, _ = ix.Lookup(o, n, p) }),
		cycling(q, func(o, n string, p uint64) { _, _ = k.CurrentLookup(obj(o), n, p) }),
		cycling(q, func(o, n string, p uint64) { _, _ = k.OldLookup(obj(o), n, p) }))
	lookup, lallocs, cur, old := ns[0], as[0], ns[1], ns[2]
	rep.addTarget("lookup_ns", lookup, "ns", "<=", 150, "random resolvable (object, name, sympos), best of 3 taking turns with the references")
	rep.addTarget("lookup_allocs", lallocs, "allocs", "==", 0, "")
	rep.add("kernel_current_lookup_ns", cur, "ns", "reference: binary search (vmlinux) / module walk")
	rep.add("kernel_old_lookup_ns", old, "ns", "reference: Linux 6.1 walk of everything, strcmp on each name")
	rep.addTarget("current_vs_lookup", cur/lookup, "x", ">=", 5, "")
	rep.addTarget("old_vs_lookup", old/lookup, "x", ">=", 3000, "")
	againstMap(rep, ix, parse)

	snap, err := os.CreateTemp("", "klpsnap")
	if err != nil {
		return nil, err
	}
	defer os.Remove(snap.Name())
	snap.Close()
	if err := ix.WriteSnapshotFile(snap.Name()); err != nil {
		return nil, err
	}
	st, _ := os.Stat(snap.Name())
	load := minTime(15, func() { _, _ = kallsyms.Open(snap.Name(), kallsyms.Options{}) })
	rep.add("snapshot_bytes", float64(st.Size()), "bytes", "compact (version 11): names and columns in LZ4 blocks, tables packed")
	rep.add("snapshot_vs_input", float64(st.Size())/float64(len(data)), "x", "its size against the text's")
	rep.add("snapshot_load_ms", ms(load), "ms", "checked whole, its chunks decoded when first needed")
	rep.addTarget("parse_vs_snapshot_load", ratio(parse, load), "x", ">=", 5, "")
	// What a resolve pays: the load, then its lookups, each decoding its
	// symbol's chunk the first time (the parse's index has paid for all).
	const few = 100
	some := func(ix *kallsyms.Index) {
		for i := range few {
			x := &q[i*(len(q)/few)]
			_, _ = ix.Lookup(x.Object, x.Name, x.Pos)
		}
	}
	loadSome := minTime(15, func() {
		if s, err := kallsyms.Open(snap.Name(), kallsyms.Options{}); err == nil {
			some(s)
		}
	})
	parseSome := minTime(15, func() {
		if s, err := kallsyms.Open(path, kallsyms.Options{}); err == nil {
			some(s)
		}
	})
	all := minTime(15, func() {
		if s, err := kallsyms.Open(snap.Name(), kallsyms.Options{}); err == nil {
			_ = s.DecodeAll()
		}
	})
	rep.add("snapshot_load_100_lookups_ms", ms(loadSome), "ms", "the load, then 100 random lookups")
	rep.add("parse_100_lookups_ms", ms(parseSome), "ms", "the parse, then the same lookups")
	rep.add("parse_vs_snapshot_load_100_lookups", ratio(parseSome, loadSome), "x", "")
	rep.add("snapshot_decode_all_ms", ms(all), "ms", "the load, then every chunk decoded on every core (DecodeAll)")
	rep.add("parse_vs_snapshot_decode_all", ratio(parse, all), "x", "")
	if s, err := kallsyms.Open(snap.Name(), kallsyms.Options{}); err == nil && s.DecodeAll() == nil {
		sns, _ := nsPerOp(cycling(q, func(o, n string, p uint64) { _, _ = s.Lookup(o, n, p) }))
		rep.add("snapshot_lookup_ns", sns, "ns", "lookups in the snapshot's index, every chunk decoded")
		s.Close()
	}
	if err := ix.WriteSnapshotRawFile(snap.Name()); err != nil {
		return nil, err
	}
	st, _ = os.Stat(snap.Name())
	raw := minTime(15, func() { _, _ = kallsyms.Open(snap.Name(), kallsyms.Options{}) })
	rawRead := minTime(15, func() { _, _ = kallsyms.Open(snap.Name(), kallsyms.Options{NoMap: true}) })
	rep.add("snapshot_raw_bytes", float64(st.Size()), "bytes", "raw (version 6): tables stored, used in place")
	rep.add("snapshot_raw_load_ms", ms(raw), "ms", "mapped (the default)")
	rep.addTarget("parse_vs_snapshot_raw_load", ratio(parse, raw), "x", ">=", 5, "")
	rep.add("snapshot_raw_read_load_ms", ms(rawRead), "ms", "read into memory (Options.NoMap)")
	rep.add("parse_vs_snapshot_raw_read_load", ratio(parse, rawRead), "x", "")
	return rep, nil
}

func ms(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1000 }

func ratio(a, b interface{ Nanoseconds() int64 }) float64 {
	if b.Nanoseconds() == 0 {
		return 0
	}
	return float64(a.Nanoseconds()) / float64(b.Nanoseconds())
}

// againstMap measures lookups in ix beside a per-object Go map of the same
// symbols (reference.ObjectMap), with the same 20,000 queries taking turns
// in one process: in random order, and in module order (a build tool's:
// object by object, each in address order). Then lookups that miss, each
// with its suggestions (LookupError.Near), against the random ones. The
// map's cost to build and hold is reported beside the index's (parse:
// the index's parse, read included).
func againstMap(rep *Report, ix *kallsyms.Index, parse time.Duration) {
	order := map[string]int{}
	var all []kallsyms.Symbol
	for i, o := range ix.Objects() {
		order[o.Name] = i
		if !o.Pseudo {
			ix.Symbols(o.Name, func(s kallsyms.Symbol) bool { all = append(all, s); return true })
		}
	}
	build := func() reference.ObjectMap {
		om := reference.ObjectMap{}
		for _, s := range all {
			om.Add(s.Object, s.Name, s.Address)
		}
		return om
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	om := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	mapBytes := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(om)
	built := minTime(5, func() { _ = build() })
	rep.add("map_build_ms", ms(built), "ms", "reference: the map built from the index's symbols, no text read or parsed")
	rep.add("map_build_vs_parse", ratio(built, parse), "x", "the map's build against the index's whole parse")
	rep.add("map_bytes", mapBytes, "bytes", "reference: the map's heap, its names shared with the index")
	rep.add("map_bytes_vs_index", mapBytes/float64(ix.MemSize()), "x", "the map's heap against the index's memory (MemSize)")
	random := Queries(ix, 20000)
	inOrder := slices.Clone(random)
	addr := func(q Query) uint64 { s, _ := ix.Lookup(q.Object, q.Name, q.Pos); return s.Address }
	slices.SortStableFunc(inOrder, func(a, b Query) int {
		return cmp.Or(cmp.Compare(order[a.Object], order[b.Object]), cmp.Compare(addr(a), addr(b)))
	})
	index := func(q []Query) func(b *testing.B) {
		return cycling(q, func(o, n string, p uint64) { _, _ = ix.Lookup(o, n, p) })
	}
	goMap := func(q []Query) func(b *testing.B) {
		return cycling(q, func(o, n string, p uint64) { _, _ = om.Lookup(o, n, p) })
	}
	// Misses as people make them: a clone's suffix the kernel does not
	// have, and a letter doubled.
	var misses []Query
	for i, q := range random[:2000] {
		n := q.Name + ".isra.0"
		if i%2 == 1 {
			n = q.Name + q.Name[len(q.Name)-1:]
		}
		if _, err := ix.Lookup(q.Object, n, 0); err != nil {
			misses = append(misses, Query{q.Object, n, 0})
		}
	}
	// The same queries with their names copied, as a module's are: no
	// side finds the name by pointer equality, without comparing bytes.
	copied := slices.Clone(random)
	for i := range copied {
		copied[i].Name = strings.Clone(copied[i].Name)
	}
	ns, _ := bestOf(3, index(random), goMap(random), index(inOrder), goMap(inOrder), index(misses), index(copied), goMap(copied))
	rep.add("lookup_random_ns", ns[0], "ns", "20,000 random resolvable queries")
	rep.add("map_random_ns", ns[1], "ns", "reference: a per-object Go map of the same symbols, the same queries")
	rep.addTarget("map_vs_lookup_random", ns[1]/ns[0], "x", ">=", 1.5, "")
	rep.add("lookup_module_order_ns", ns[2], "ns", "the same queries object by object, in address order")
	rep.add("map_module_order_ns", ns[3], "ns", "reference: the map, in that order")
	rep.addTarget("map_vs_lookup_module_order", ns[3]/ns[2], "x", ">=", 1.5, "")
	rep.add("lookup_copied_names_ns", ns[5], "ns", "the random queries, each name a copy (a module's names are)")
	rep.add("map_copied_names_ns", ns[6], "ns", "reference: the map, the same copies")
	rep.add("map_vs_lookup_copied_names", ns[6]/ns[5], "x", "")
	rep.add("lookup_miss_ns", ns[4], "ns", fmt.Sprintf("%d lookups that miss (a clone suffix added, a letter doubled), each with its suggestions", len(misses)))
	rep.addTarget("miss_vs_lookup", ns[4]/ns[0], "x", "<=", 10, "a miss with its suggestions against a random lookup")
}

// cycling is a benchmark that asks look for q's entries, one after
// another, round and round (every side of a comparison pays the same
// call).
func cycling(q []Query, look func(object, name string, pos uint64)) func(b *testing.B) {
	return func(b *testing.B) {
		i := 0
		for b.Loop() {
			x := &q[i%len(q)]
			look(x.Object, x.Name, x.Pos)
			i++
		}
	}
}
