// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// nearScan is near as it was written first, its variants found by a scan
// of every name per miss: the definition the indexed near must keep to.
func (ix *Index) nearScan(oi int, name string) []Symbol {
	out := ix.elsewhere(oi, name, nil)
	base := baseName(name)
	for j := range ix.objs {
		o := &ix.objs[j]
		if o.pseudo {
			continue
		}
		for i := o.start; i < o.end && len(out) < maxNear; i++ {
			n := ix.name(i)
			if n == name || len(n) < len(base) || n[:len(base)] != base {
				continue
			}
			if baseName(n) == base {
				out = append(out, ix.symbol(i, 0))
			}
		}
	}
	ix.objectFirst(oi, out)
	return out
}

// nearQueries are names a user might ask for around the names of ix: each
// sampled name itself, its base, and made-up variants of both.
func nearQueries(ix *Index, every int) []string {
	var q []string
	k := 0
	for i := range ix.syms {
		if k++; k%every != 0 {
			continue
		}
		n := ix.name(uint32(i))
		b := baseName(n)
		q = append(q, n, b, b+".isra.0", b+".constprop.7", n+".cold", b+".llvm.42", "x"+b)
	}
	return q
}

func TestNearMatchesScan(t *testing.T) {
	for _, lto := range []bool{false, true} {
		ix := mustParse(t, sample+"ffffffff81000900 t helper.isra.0\nffffffff81000a00 t helper.part.0.cold\nffffffff81000b00 t helper\nffffffffc0002400 t helper.constprop.3\t[xfs]\n", Options{LTO: lto})
		for _, name := range append(nearQueries(ix, 1), "helper.isra.9", "c_stop.llvm.99", "show_stat", "nope") {
			for oi := range ix.objs {
				require.Equal(t, ix.nearScan(oi, name), ix.near(oi, name), "lto %v: %q in %s", lto, name, ix.objs[oi].name)
			}
		}
	}
}

func TestCorpusNearMatchesScan(t *testing.T) {
	ix, err := Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	require.NoError(t, err)
	// A real kernel's variants: names with many clones, and modules'.
	q := append(nearQueries(ix, 2003), "memcpy", "ext4_read_inode_bitmap.isra.0", "__func__.0", "type_show.part.0")
	ext4 := slices.IndexFunc(ix.objs, func(o object) bool { return o.name == "ext4" })
	require.Positive(t, ext4)
	for _, name := range q {
		for _, oi := range []int{0, ext4} {
			want, got := ix.nearScan(oi, name), ix.near(oi, name)
			require.Equal(t, want, got, "%q in %s", name, ix.objs[oi].name)
		}
	}
	// The index found variants the scan finds (not only empty lists).
	require.NotEmpty(t, ix.near(0, "ext4_read_inode_bitmap.isra.0"))
	n := 0
	for _, v := range ix.variants {
		n += len(v)
	}
	t.Logf("%d base names with %d suffixed symbols", len(ix.variants), n)
	require.Greater(t, n, 1000)
}

// Readers share an Index: lookups that hit and miss (the first miss builds
// the variants' index), reverse lookups (the first builds the address
// order) and listings, from many goroutines at once on a fresh index, give
// what they give one at a time. go test -race checks the lazy parts.
func TestConcurrentReaders(t *testing.T) {
	text := sample + "ffffffff81000900 t helper.isra.0\nffffffff81000a00 t vfs_read.part.0\n"
	ref := mustParse(t, text, Options{})
	type answer struct {
		sym  Symbol
		err  string
		addr AddrInfo
		near int
	}
	ask := func(ix *Index, k int) answer {
		names := []string{"helper", "vfs_read", "vfs_read.isra.1", "missing", "helper.cold", "crc32c"}
		name := names[k%len(names)]
		var a answer
		s, err := ix.Lookup([]string{"", "xfs", "libcrc32c"}[k%3], name, uint64(k%3))
		a.sym = s
		if err != nil {
			a.err = err.Error()
		}
		a.addr, _ = ix.Addr(0xffffffff81000000 + uint64(k%12)*0x100 + 7)
		a.near = len(ix.Candidates("", name))
		_ = ix.MemSize() // read beside the lazy parts (differs by form)
		if s, ok := ix.FindName(name); ok {
			a.near += int(s.Address & 0xff)
		}
		return a
	}
	const n = 64
	want := make([]answer, n)
	for k := range want {
		want[k] = ask(ref, k)
	}
	// The same of a compact snapshot's index, whose chunks (of one or
	// two symbols here) are decoded by the first reader that needs them.
	snap, err := compactSnapshot(ref.snapshotParts(8), false)
	require.NoError(t, err)
	for round := range 10 {
		ix := mustParse(t, text, Options{})
		if round%2 == 1 {
			ix, err = ParseBytes("k.snap", snap, Options{})
			require.NoError(t, err)
			require.NotNil(t, ix.lazy)
		}
		got := make([]answer, n)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := g; k < n; k += 8 {
					got[k] = ask(ix, k)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, want, got)
	}
	// Misses with variants were among them: vfs_read.isra.1 in libcrc32c.
	require.Equal(t, "symbol 'vfs_read.isra.1' not found in symbol table (nearest: vmlinux:vfs_read vmlinux:vfs_read.part.0)", want[2].err)
}

// The nearest names of a miss, indexed (near) beside the scan it replaced
// (nearScan), on a real kernel:
//
//	go test ./kallsyms -run '^$' -bench Near
func benchNear(b *testing.B, f func(ix *Index, oi int, name string) []Symbol) {
	ix, err := Open(testutil.Corpus(b, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	q := []string{"ext4_read_inode_bitmap.isra.0", "vfs_reed", "memcpy.constprop.1", "type_show.cold"}
	ix.near(0, q[0]) // build the index outside the loop
	i := 0
	for b.Loop() {
		f(ix, 0, q[i%len(q)])
		i++
	}
}

func BenchmarkNear(b *testing.B)     { benchNear(b, (*Index).near) }
func BenchmarkNearScan(b *testing.B) { benchNear(b, (*Index).nearScan) }

// TestNearObject: a missing object's error names the loaded module it
// matches as module names get written (brackets, .ko, dashes, case);
// Find's miss builds nothing.
func TestNearObject(t *testing.T) {
	ix, err := ParseBytes("k.txt", []byte("ffffffff81000000 T vfs_read\nffffffffc0000000 t nf_conntrack_in\t[nf_conntrack]\nffffffffc0100000 t ext4_iget\t[ext4]\n"), Options{})
	require.NoError(t, err)
	for obj, want := range map[string]string{
		"[ext4]":       "ext4",
		"ext4.ko":      "ext4",
		"EXT4":         "ext4",
		"nf-conntrack": "nf_conntrack",
		"[vmlinux]":    "vmlinux",
		"xfs":          "",
	} {
		_, err := ix.Lookup(obj, "x", 0)
		require.ErrorIs(t, err, ErrNoObject, obj)
		var le *LookupError
		require.ErrorAs(t, err, &le)
		if want == "" {
			assert.Equal(t, "no such module in k.txt", le.Note, obj)
		} else {
			assert.Equal(t, "no such module in k.txt; did you mean '"+want+"'?", le.Note, obj)
		}
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, ok := ix.Find("nf-conntrack", "nf_conntrack_in", 0); ok {
			t.Fatal("found")
		}
	}))
}

// A name typed with blanks around it or in capitals suggests the symbol
// meant, in whatever object it is, before the other suggestions.
// The kernel's own wrappers of a name, in the object asked: 6.1's printk
// macro calls _printk, ext4_iget is __ext4_iget, a system call sys_NAME
// is __x64_sys_NAME (and __se_, __do_ when not inlined); and fewer
// underscores. Not in other objects, and not past maxNear.
func TestNearWrappers(t *testing.T) {
	ix := mustParse(t, "ffffffff81000000 T _stext\nffffffff81000100 T _printk\nffffffff81000200 T __x64_sys_read\n"+
		"ffffffff81000300 T __ia32_sys_read\nffffffff81000400 t __do_sys_read\nffffffff81000500 T vfs_read\n"+
		"ffffffffc0001000 t __ext4_iget\t[ext4]\nffffffffc0002000 t printk\t[xfs]\n", Options{})
	near := func(object, name string) []string {
		_, err := ix.Lookup(object, name, 0)
		var le *LookupError
		require.ErrorAs(t, err, &le, name)
		out := []string{}
		for _, s := range le.Near {
			out = append(out, s.Object+":"+s.Name)
		}
		return out
	}
	assert.Equal(t, []string{"vmlinux:_printk", "xfs:printk"}, near("vmlinux", "printk"), "the object asked first")
	assert.Equal(t, []string{"vmlinux:__x64_sys_read", "vmlinux:__ia32_sys_read", "vmlinux:__do_sys_read"}, near("vmlinux", "sys_read"))
	assert.Equal(t, []string{"ext4:__ext4_iget"}, near("ext4", "ext4_iget"))
	assert.Equal(t, []string{}, near("vmlinux", "ext4_iget"), "wrappers are looked for in the object asked only")
	assert.Equal(t, []string{"vmlinux:vfs_read"}, near("vmlinux", "__vfs_read"))
	assert.Equal(t, []string{"vmlinux:_printk"}, near("vmlinux", "__printk"))
	assert.Equal(t, []string{}, near("vmlinux", "___"))

	assert.Equal(t, []string{"_printk", "__printk"}, wrappers("printk", nil))
	assert.Equal(t, []string{"vfs_read", "_vfs_read"}, wrappers("__vfs_read", nil))
	assert.Equal(t, []string{"_sys_read", "__sys_read", "__x64_sys_read", "__ia32_sys_read", "__arm64_sys_read", "__se_sys_read", "__do_sys_read"}, wrappers("sys_read", nil))
	assert.Equal(t, []string{"_compat_sys_ioctl", "__compat_sys_ioctl", "__x64_compat_sys_ioctl", "__ia32_compat_sys_ioctl", "__arm64_compat_sys_ioctl", "__se_compat_sys_ioctl", "__do_compat_sys_ioctl"}, wrappers("compat_sys_ioctl", nil))
	assert.Equal(t, []string{"sys_", "_sys_"}, wrappers("__sys_", nil), "no call name")
	assert.Empty(t, wrappers("__", nil))
	assert.Empty(t, wrappers("", nil))
}

func TestNearRespellings(t *testing.T) {
	ix := mustParse(t, sample+"ffffffff81000900 t xfs_iget.isra.0\n", Options{})
	names := func(e error) []string {
		var le *LookupError
		require.ErrorAs(t, e, &le)
		var out []string
		for _, s := range le.Near {
			out = append(out, s.Object+":"+s.Name)
		}
		return out
	}
	_, err := ix.Lookup("vmlinux", "vfs_read ", 0)
	assert.Equal(t, []string{"vmlinux:vfs_read"}, names(err))
	assert.ErrorContains(t, err, "symbol 'vfs_read ' not found in symbol table (nearest: vmlinux:vfs_read)")
	_, err = ix.Lookup("vmlinux", "VFS_READ", 0)
	assert.Equal(t, []string{"vmlinux:vfs_read"}, names(err))
	// In another object, then the name's own variants.
	_, err = ix.Lookup("vmlinux", " XFS_IGET", 0)
	assert.Equal(t, []string{"xfs:xfs_iget"}, names(err))
	_, err = ix.Lookup("vmlinux", "xfs_iget", 0)
	assert.Equal(t, []string{"vmlinux:xfs_iget.isra.0", "xfs:xfs_iget"}, names(err))
	// Nothing to respell.
	for _, n := range []string{" ", "nope", "NOPE"} {
		_, err = ix.Lookup("vmlinux", n, 0)
		assert.Empty(t, names(err), "%q", n)
	}
	assert.Equal(t, []string{"vfs_read"}, respellings("vfs_read\t", nil))
	assert.Equal(t, []string{"Vfs_read", "vfs_read"}, respellings(" Vfs_read", nil))
	assert.Empty(t, respellings("vfs_read", nil))
}

// TestNearAbsentObject: a symbol asked of a module that is not loaded is
// shown where it is; vmlinux having it says the module may be built in.
func TestNearAbsentObject(t *testing.T) {
	ix, err := Parse("k", strings.NewReader("ffffffff81000000 T ext4_iget\nffffffffc0000000 t xfs_iget\t[xfs]\n"), Options{})
	require.NoError(t, err)
	_, err = ix.Lookup("ext4", "ext4_iget", 0)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrNoObject)
	assert.Equal(t, []string{"vmlinux:ext4_iget"}, nearNames(le.Near))
	assert.Equal(t, "no such module in k (is ext4 built into this kernel? vmlinux has ext4_iget); nearest: vmlinux:ext4_iget", le.Help())
	_, err = ix.LookupName("nfs:xfs_iget")
	require.ErrorAs(t, err, &le)
	assert.Equal(t, []string{"xfs:xfs_iget"}, nearNames(le.Near))
	assert.NotContains(t, le.Help(), "built into", "xfs has it, vmlinux does not")
	_, err = ix.Lookup("ext4", "nothing", 0)
	require.ErrorAs(t, err, &le)
	assert.Empty(t, le.Near)
	assert.Equal(t, "no such module in k", le.Help())
}

func nearNames(ss []Symbol) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Object+":"+s.Name)
	}
	return out
}

// A static local's name carries a number the compiler chose for that
// build: a patch built elsewhere asks for count.2 where this kernel has
// count.5. The error says so, and names the kernel's own.
func TestNumberedLocal(t *testing.T) {
	ix := mustParse(t, sample+"ffffffff81000b00 b count.5\nffffffff81000c00 t helper.isra.0\n", Options{})
	_, err := ix.Lookup(Vmlinux, "count.2", 0)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, ErrNotFound, le.Kind)
	assert.Equal(t, "count.2 is a name the compiler numbered (a static local variable's, most often) in the build the patch was made for; "+
		"the numbers differ between builds: build the patch against this kernel's own build; nearest: vmlinux:count.5", le.Help())
	// A clone's number is no local's: its variants are told, no more.
	_, err = ix.Lookup(Vmlinux, "helper.isra.1", 0)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "nearest: vmlinux:helper vmlinux:helper vmlinux:helper.isra.0 xfs:helper xfs:helper xfs:helper libcrc32c:helper", le.Help())
}

// BenchmarkLookupMiss: lookups that miss, each with its suggestions, as
// a patch built for another kernel makes them: 2,000 random symbols of
// every object, each with a clone's suffix the kernel lacks or a letter
// doubled (bench kallsyms' miss_vs_lookup compares them with hits).
func BenchmarkLookupMiss(b *testing.B) {
	ix, err := Open(testutil.Corpus(b, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	type query struct{ object, name string }
	var all []Symbol
	for _, o := range ix.Objects() {
		if !o.Pseudo {
			ix.Symbols(o.Name, func(s Symbol) bool { all = append(all, s); return true })
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var q []query
	for len(q) < 2000 {
		s := all[r.IntN(len(all))]
		n := s.Name + ".isra.0"
		if len(q)%2 == 1 {
			n = s.Name + s.Name[len(s.Name)-1:]
		}
		if _, err := ix.Lookup(s.Object, n, 0); err != nil {
			q = append(q, query{s.Object, n})
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x := &q[i%len(q)]
		if _, err := ix.Lookup(x.object, x.name, 0); err == nil {
			b.Fatal(x)
		}
		i++
	}
}

func TestBaseName(t *testing.T) {
	for name, want := range map[string]string{
		"vfs_read":                    "vfs_read",
		"show_stat.isra.0":            "show_stat",
		"foo.constprop.0.isra.0":      "foo",
		"bar.part.3.cold":             "bar",
		"c_stop.llvm.1234":            "c_stop",
		"count.3":                     "count",
		"__func__.12.5":               "__func__",
		"a.b":                         "a.b",
		"a.3b":                        "a.3b",
		"trailing.":                   "trailing.",
		".isra.0":                     ".isra", // a suffix at the start does not cut
		".a.isra.1":                   ".a",
		"x.isra.isra.1":               "x",
		"__x64_sys_read":              "__x64_sys_read",
		"drm_sched_fini.localalias.0": "drm_sched_fini",
	} {
		assert.Equal(t, want, baseName(name), name)
	}
}

// A miss's wrappers and respellings go to the caller's array: no
// allocation but the names the name itself does not hold.
func TestWrappersAllocations(t *testing.T) {
	var buf [8]string
	for name, want := range map[string]float64{"__vfs_read": 0, "vfs_read": 1, "Vfs_read": 2, "sys_read": 6} {
		got := testing.AllocsPerRun(50, func() {
			_ = respellings(name, buf[:0])
			_ = wrappers(name, buf[:0])
		})
		assert.Equal(t, want, got, name)
	}
}

// A name every module has (init_module, with every module loaded: four
// thousand of them) costs a miss no more than a name two modules have:
// near reads the first objects in order and stops at maxNear; nothing is
// collected or sorted for the others.
func TestNearCommonName(t *testing.T) {
	text := func(modules int) string {
		var b strings.Builder
		b.WriteString("ffffffff81000000 T _stext\nffffffff81000100 t helper\n")
		for m := range modules {
			addr := 0xffffffffc0000000 + uint64(m)<<12
			fmt.Fprintf(&b, "%016x t init_module\t[m%04d]\n%016x t m%04d_read\t[m%04d]\n", addr, m, addr+16, m, m)
		}
		return b.String()
	}
	few, many := mustParse(t, text(2), Options{}), mustParse(t, text(4000), Options{})
	_, err := many.Lookup(Vmlinux, "init_module.isra.0", 0)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Near, maxNear)
	for k, s := range le.Near {
		assert.Equal(t, Symbol{Name: "init_module", Object: fmt.Sprintf("m%04d", k), Address: 0xffffffffc0000000 + uint64(k)<<12, Type: 't'}, s)
	}
	for _, name := range []string{"init_module.isra.0", "init_modulee", "Init_module"} {
		_, _ = few.Lookup(Vmlinux, name, 0) // (the first miss builds the variants)
		_, _ = many.Lookup(Vmlinux, name, 0)
		a := testing.AllocsPerRun(20, func() { _, _ = few.Lookup(Vmlinux, name, 0) })
		b := testing.AllocsPerRun(20, func() { _, _ = many.Lookup(Vmlinux, name, 0) })
		assert.LessOrEqual(t, b, a, "%s: allocations with 4000 modules against 2", name)
	}
	// The error and its suggestions: two allocations (the names are the
	// index's, on the heap here; a mapped index's are copied in one more).
	assert.Equal(t, 2.0, testing.AllocsPerRun(20, func() { _, _ = many.Lookup(Vmlinux, "init_module.isra.0", 0) }))
}
