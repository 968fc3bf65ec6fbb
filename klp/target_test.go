// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// kallsymsLines returns the lines of kallsyms file path tagged [mod]:
// type and name, in file order.
func kallsymsLines(t *testing.T, path, mod string) []string {
	var out []string
	for _, l := range testutil.ReadSymbolLines(t, path) {
		if l.Object == mod {
			out = append(out, l.Type+" "+l.Name)
		}
	}
	return out
}

// targetLines are what ix lists: type and name, in its order.
func targetLines(t *testing.T, ix *kallsyms.Index, mod string) []string {
	var out []string
	ix.Symbols(mod, func(s kallsyms.Symbol) bool {
		out = append(out, string(s.Type)+" "+s.Name)
		return true
	})
	return out
}

// TestTargetCorpus: a real module's core symbols, read from its .ko, are
// the lines the corpus's kallsyms lists for it (derived from the real
// modules with the kernel's rules: code only on arm64, which Debian
// builds without CONFIG_KALLSYMS_ALL), in the same order, with the same
// type letters.
func TestTargetCorpus(t *testing.T) {
	for _, c := range []struct {
		arch, ko, name string
		all            bool
		want           int
	}{
		{"amd64", "crc-t10dif.ko", "crc_t10dif", true, 28},
		{"arm64", "crc-t10dif.ko", "crc_t10dif", false, -1},
		{"arm64", "btrfs.ko", "btrfs", false, -1},
	} {
		t.Run(c.arch+"/"+c.name, func(t *testing.T) {
			m, err := Open(testutil.Corpus(t, c.arch+"/modules/"+c.ko))
			require.NoError(t, err)
			tg, err := NewTarget(m, c.all)
			require.NoError(t, err)
			require.Equal(t, c.name, tg.Name)
			want := kallsymsLines(t, testutil.Corpus(t, c.arch+"/kallsyms-6.1.0-57-"+c.arch+".txt"), c.name)
			if c.want >= 0 {
				require.Len(t, want, c.want)
			}
			require.NotEmpty(t, want)
			require.Equal(t, want, targetLines(t, tg.Loaded, c.name))
			// The whole table has more: init code, .modinfo's strings.
			require.Greater(t, tg.Coming.Len(), tg.Loaded.Len())
			// The file is the build the kallsyms lists.
			ix, err := kallsyms.Open(testutil.Corpus(t, c.arch+"/kallsyms-6.1.0-57-"+c.arch+".txt"), kallsyms.Options{})
			require.NoError(t, err)
			require.True(t, tg.Matches(ix))
			if !c.all {
				// Read as if the kernel kept data: another list.
				other, err := NewTarget(m, true)
				require.NoError(t, err)
				require.False(t, other.Matches(ix))
			}
		})
	}
}

// TestTargetResolve checks order-patch.ko's relocations into the made-up
// module xfs (testdata/klp/modules: a static xfs_setup in core code and
// one in init code, two static xfs_lookup in core code, the data
// xfs_stats) against an index that lacks xfs, as the kernel will resolve
// them when xfs loads: after the patch (its whole symbol table) and
// before it (core symbols).
func TestTargetResolve(t *testing.T) {
	m, err := Open(fixture("order-patch.ko"))
	require.NoError(t, err)
	ix, err := kallsyms.Open(filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	require.False(t, ix.HasObject("xfs"))
	xfs, err := Open(fixture("modules/xfs.ko"))
	require.NoError(t, err)

	type want struct {
		err  error  // nil: stays deferred
		hint string // a part of the hint
	}
	for _, all := range []bool{true, false} {
		tg, err := NewTarget(xfs, all)
		require.NoError(t, err)
		require.Equal(t, "xfs", tg.Name)
		stats := want{nil, ""}
		if !all {
			stats = want{ErrLoadOrder, "if xfs loads after the patch, this resolves (to .bss+0x0: the kernel counts a loading module's whole symbol table); if xfs was loaded first, it fails: the kernel then counts only its core symbols (is_core_symbol(): no init code, and code only: the kernel has no CONFIG_KALLSYMS_ALL): xfs has no symbol named \"xfs_stats\"; checked against " + xfs.Path}
		}
		cases := map[string]want{
			"xfs_iget,0":   {nil, ""},
			"xfs_setup,0":  {ErrLoadOrder, "if xfs was loaded before the patch, this resolves (to .text+0x0, among its core symbols); if xfs loads after the patch, it fails: while a module loads, the kernel counts its whole symbol table, init code included: 2 symbols named \"xfs_setup\" in xfs; give a sympos: [1] .text+0x0 t; [2] .init.text+0x10 t"},
			"xfs_setup,1":  {nil, ""},
			"xfs_setup,2":  {ErrLoadOrder, "if xfs loads after the patch, this resolves (to .init.text+0x10: the kernel counts a loading module's whole symbol table); if xfs was loaded first, it fails"},
			"xfs_lookup,0": {kallsyms.ErrAmbiguous, `2 symbols named "xfs_lookup" in xfs; give a sympos: [1] .text+0x10 t; [2] .text+0x40 t`},
			"xfs_igett,0":  {kallsyms.ErrNotFound, "xfs has no symbol named \"xfs_igett\"; checked against " + xfs.Path + ", as the kernel will resolve it when xfs loads"},
			"xfs_stats,0":  stats,
			"xfs_mount,1":  {ErrLoadOrder, "xfs_mount,1 is .init.text+0x0 if xfs loads after the patch, but .text+0x50 if it was loaded first"},
		}
		res := m.Resolve(ix, ResolveOptions{Targets: map[string]*Target{"xfs": tg}})
		require.Len(t, res.Results, len(cases))
		failed := 0
		for _, r := range res.Results {
			w := cases[strings.TrimPrefix(r.Symbol, ".klp.sym.xfs.")]
			if w.err == nil {
				require.Equal(t, Deferred, r.Status, "%s all=%v: %v", r.Symbol, all, r.Err)
				continue
			}
			failed++
			require.Equal(t, Failed, r.Status, r.Symbol)
			require.ErrorIs(t, r.Err, w.err, r.Symbol)
			require.Contains(t, r.Err.Hint, w.hint, r.Symbol)
		}
		require.Equal(t, []CheckedObject{{Object: "xfs", Path: xfs.Path, OK: len(cases) - failed, Failed: failed}}, res.Checked)
		require.Equal(t, []string{"xfs"}, res.DeferredObjects)
		require.Equal(t, len(cases)-failed, res.Deferred)
		require.Equal(t, failed, res.Errors)
		require.False(t, res.OK(false))
	}

	// The kernel's messages: the order that fails says it.
	tg, err := NewTarget(xfs, true)
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{Targets: map[string]*Target{"xfs": tg}})
	msgs := map[string]string{}
	for _, r := range res.Results {
		if r.Err != nil {
			msgs[r.Symbol] = r.Err.Kernel
		}
	}
	require.Equal(t, map[string]string{
		".klp.sym.xfs.xfs_setup,0":  "unresolvable ambiguity for symbol 'xfs_setup' in object 'xfs'",
		".klp.sym.xfs.xfs_setup,2":  "symbol position 2 for symbol 'xfs_setup' in object 'xfs' not found",
		".klp.sym.xfs.xfs_lookup,0": "unresolvable ambiguity for symbol 'xfs_lookup' in object 'xfs'",
		".klp.sym.xfs.xfs_igett,0":  "symbol 'xfs_igett' not found in symbol table",
		".klp.sym.xfs.xfs_mount,1":  "(no message: the kernel resolves another symbol)",
	}, msgs)

	// Without a target, all eight wait for xfs, unchecked.
	res = m.Resolve(ix, ResolveOptions{})
	require.Equal(t, 8, res.Deferred)
	require.Empty(t, res.Checked)
	require.True(t, res.OK(false))
}

// TestTargetNotTraceable: a patched function of a module that is not
// loaded must have an ftrace call site (the module's __mcount_loc), or
// klp_patch_func() fails the patch when the module loads. nfs.ko (made
// up, built with -pg -mfentry -mrecord-mcount) has a notrace nfs_fast.
func TestTargetNotTraceable(t *testing.T) {
	nfs, err := Open(fixture("modules/nfs.ko"))
	require.NoError(t, err)
	tg, err := NewTarget(nfs, true)
	require.NoError(t, err)
	require.True(t, tg.hasSites)
	require.Len(t, tg.sites, 1)

	m, err := Open(fixture("klp-patch.ko"))
	require.NoError(t, err)
	m.Funcs = []Func{
		{Index: 0, Name: "nfs_open", Object: "nfs", Section: ".data", Offset: 0x10},
		{Index: 1, Name: "nfs_fast", Object: "nfs", Section: ".data", Offset: 0x20},
		{Index: 2, Name: "nfs_calls", Object: "nfs", Section: ".data", Offset: 0x30},
	}
	ix, err := kallsyms.Open(filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{Targets: map[string]*Target{"nfs": tg}})
	require.Len(t, res.Funcs, 3)
	require.Equal(t, Deferred, res.Funcs[0].Status, "%+v", res.Funcs[0].Err)
	require.Equal(t, Failed, res.Funcs[1].Status)
	require.ErrorIs(t, res.Funcs[1].Err, ErrNotTraceable)
	require.Equal(t, "failed to find location for function 'nfs_fast'", res.Funcs[1].Err.Kernel)
	require.Equal(t, "nfs_fast is .text+0x0 in nfs, and the module lists no ftrace call site in it (notrace, or code built without ftrace), so livepatch cannot patch it; patch what calls it instead; checked against "+nfs.Path, res.Funcs[1].Err.Hint)
	require.Equal(t, ".data", res.Funcs[1].Err.Section)
	require.Equal(t, uint64(0x20), res.Funcs[1].Err.Offset)
	// Data is no function: ftrace has no location for it either.
	require.ErrorIs(t, res.Funcs[2].Err, ErrNotTraceable)
	require.Equal(t, []CheckedObject{{Object: "nfs", Path: nfs.Path, OK: 1, Failed: 2}}, res.Checked)

	// nfs loaded: the kernel's symbols resolve its functions, and the
	// file tells which ftrace can patch.
	loaded, err := kallsyms.ParseBytes("loaded", []byte("ffffffff81000000 T start_kernel\nffffffff81000100 T klp_enable_patch\n"+
		"ffffffff82000000 D jiffies\nffffffffc0100000 T nfs_fast\t[nfs]\nffffffffc0100010 T nfs_open\t[nfs]\nffffffffc0102000 b nfs_calls\t[nfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	res = m.Resolve(loaded, ResolveOptions{Targets: map[string]*Target{"nfs": tg}})
	require.Equal(t, Resolved, res.Funcs[0].Status)
	require.Equal(t, uint64(0xffffffffc0100010), res.Funcs[0].Address)
	require.Equal(t, Failed, res.Funcs[1].Status)
	require.ErrorIs(t, res.Funcs[1].Err, ErrNotTraceable)
	require.Zero(t, res.Funcs[1].Address)
	require.ErrorIs(t, res.Funcs[2].Err, ErrNotTraceable)
	require.Equal(t, [3]int{1, 0, 2}, [3]int{res.FuncResolved, res.FuncDeferred, res.FuncErrors})
	require.Empty(t, res.Checked, "nothing deferred")
	// Without the file, the kernel's symbols alone: all three resolve.
	res = m.Resolve(loaded, ResolveOptions{})
	require.Equal(t, 3, res.FuncResolved)

	// xfs.ko lists no call sites: nothing to check.
	xfs, err := Open(fixture("modules/xfs.ko"))
	require.NoError(t, err)
	xt, err := NewTarget(xfs, true)
	require.NoError(t, err)
	require.False(t, xt.hasSites)
}

// TestTargetSitesCorpus: Debian's xfs.ko (amd64, __mcount_loc) and
// btrfs.ko (arm64, __patchable_function_entries) list a call site in
// most functions (xfs_iget, btrfs_sync_fs), not in their tracepoints'
// handlers, which the kernel builds notrace.
func TestTargetSitesCorpus(t *testing.T) {
	for _, c := range []struct{ path, fn, notrace string }{
		{"amd64/modules/xfs.ko", "xfs_iget", "perf_trace_xfs_inode_class"},
		{"arm64/modules/btrfs.ko", "btrfs_sync_fs", "perf_trace_btrfs__inode"},
	} {
		m, err := Open(testutil.Corpus(t, c.path))
		require.NoError(t, err)
		tg, err := NewTarget(m, true)
		require.NoError(t, err)
		require.True(t, tg.hasSites, c.path)
		s, err := tg.Coming.Lookup(tg.Name, c.fn, 0)
		require.NoError(t, err)
		require.True(t, tg.traceable(s.Address), c.fn)
		s, err = tg.Coming.Lookup(tg.Name, c.notrace, 0)
		require.NoError(t, err)
		require.False(t, tg.traceable(s.Address), c.notrace)
		traced, funcs := 0, 0
		for a := range tg.sizes {
			funcs++
			if tg.traceable(a) {
				traced++
			}
		}
		require.Greater(t, traced*2, funcs, "%s: %d of %d functions traceable", c.path, traced, funcs)
		t.Logf("%s: %d of %d functions have a call site (%d sites)", c.path, traced, funcs, len(tg.sites))
	}
}

// A module whose every named symbol is absolute at 0 (found by fuzzing)
// makes no target index: the error names the file and says so in the
// module's terms, not kallsyms' words about kptr_restrict.
func TestTargetAllAbsoluteZero(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=zero\x00"), Addralign: 1})
	b.AddSymbol(elfobj.BuildSymbol{Name: "a", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE), Shndx: uint16(elf.SHN_ABS)})
	b.AddSymbol(elfobj.BuildSymbol{Name: "b", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE), Shndx: uint16(elf.SHN_ABS)})
	m, err := Parse("zero.ko", b.Bytes())
	require.NoError(t, err)
	_, err = NewTarget(m, true)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.ErrorIs(t, err, kallsyms.ErrRestricted)
	assert.Equal(t, "zero.ko (whole symbol table): malformed ELF: every symbol's address is 0: each is absolute (SHN_ABS), in no section", err.Error())
}
