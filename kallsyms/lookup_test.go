// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func TestLookupRules(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	tests := []struct {
		obj, name string
		pos       uint64
		addr      uint64
		kind      error
		count     int
	}{
		{"vmlinux", "vfs_read", 0, 0xffffffff81000200, nil, 0},
		{"", "vfs_read", 1, 0xffffffff81000200, nil, 0}, // sympos 1 on a unique symbol is valid
		{"vmlinux", "vfs_read", 2, 0, ErrNoSuchPosition, 1},
		{"vmlinux", "helper", 0, 0, ErrAmbiguous, 2},
		{"vmlinux", "helper", 1, 0xffffffff81000100, nil, 0},
		{"vmlinux", "helper", 2, 0xffffffff81000300, nil, 0},
		{"vmlinux", "helper", 3, 0, ErrNoSuchPosition, 2},
		{"xfs", "helper", 0, 0, ErrAmbiguous, 3},
		{"xfs", "helper", 3, 0xffffffffc0002300, nil, 0},
		{"libcrc32c", "helper", 0, 0xffffffffc0001000, nil, 0},
		{"xfs", "crc32c", 0, 0, ErrNotFound, 0}, // module scoping
		{"vmlinux", "xfs_iget", 0, 0, ErrNotFound, 0},
		{"nosuchmod", "x", 0, 0, ErrNoObject, 0},
		{"__builtin__ftrace", "ftrace_trampoline", 0, 0, ErrNoObject, 0},
		{"bpf", "bpf_prog_x", 0, 0, ErrNoObject, 0},
		{"vmlinux", "c_stop", 0, 0xffffffff81000700, nil, 0}, // exact match by default
	}
	for _, tt := range tests {
		s, err := ix.Lookup(tt.obj, tt.name, tt.pos)
		if tt.kind == nil {
			require.NoError(t, err, "%s:%s,%d", tt.obj, tt.name, tt.pos)
			assert.Equal(t, tt.addr, s.Address, "%s:%s,%d", tt.obj, tt.name, tt.pos)
			assert.Equal(t, tt.name, s.Name)
			continue
		}
		require.ErrorIs(t, err, tt.kind, "%s:%s,%d", tt.obj, tt.name, tt.pos)
		var le *LookupError
		require.ErrorAs(t, err, &le)
		if tt.count > 0 {
			assert.Equal(t, tt.count, le.Count, "%s:%s,%d", tt.obj, tt.name, tt.pos)
			assert.Len(t, le.Candidates, tt.count)
		}
	}
}

func TestLookupMessages(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	_, err := ix.Lookup("vmlinux", "helper", 0)
	assert.Equal(t, "unresolvable ambiguity for symbol 'helper' in object '(null)' (2 symbols named \"helper\" in vmlinux; give a sympos: [1] 0xffffffff81000100 t; [2] 0xffffffff81000300 t)", err.Error())
	_, err = ix.Lookup("xfs", "helper", 5)
	assert.Equal(t, "symbol position 5 for symbol 'helper' in object 'xfs' not found (xfs has only 3 symbols named \"helper\" (valid sympos: 0 if unique, 1..3))", err.Error())
	_, err = ix.Lookup("vmlinux", "show_stat", 0)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "symbol 'show_stat' not found in symbol table", le.KernelMessage())
	require.Len(t, le.Near, 1)
	assert.Equal(t, "show_stat.isra.0", le.Near[0].Name)
	// The same name in another object is a near hit.
	_, err = ix.Lookup("vmlinux", "crc32c", 0)
	require.ErrorAs(t, err, &le)
	require.NotEmpty(t, le.Near)
	assert.Equal(t, "libcrc32c", le.Near[0].Object)
	assert.Contains(t, err.Error(), "nearest: libcrc32c:crc32c")
}

func TestLookupZeroAddressIsNotFound(t *testing.T) {
	// klp_find_object_symbol() checks the address before the count.
	ix := mustParse(t, sample+"0000000000000000 d per_cpu_thing\n", Options{})
	_, err := ix.Lookup("vmlinux", "per_cpu_thing", 0)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "address 0")
}

func TestLTOMode(t *testing.T) {
	exact := mustParse(t, sample, Options{})
	lto := mustParse(t, sample, Options{LTO: true})
	s, err := exact.Lookup("vmlinux", "c_stop.llvm.1234", 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffff81000600), s.Address)
	// In LTO mode "c_stop" matches the suffixed symbol too: two of them.
	_, err = lto.Lookup("vmlinux", "c_stop", 0)
	require.ErrorIs(t, err, ErrAmbiguous)
	s, err = lto.Lookup("vmlinux", "c_stop", 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffff81000600), s.Address)
	s, err = lto.Lookup("vmlinux", "c_stop.llvm.1234", 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffff81000600), s.Address)
}

func TestObjects(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	objs := ix.Objects()
	require.Len(t, objs, 5)
	assert.Equal(t, ObjectInfo{Name: "vmlinux", Symbols: 9, Low: 0xffffffff81000000, High: 0xffffffff81000800}, objs[0])
	assert.Equal(t, ObjectInfo{Name: "xfs", Symbols: 4, Low: 0xffffffffc0002000, High: 0xffffffffc0002300}, objs[1])
	assert.Equal(t, "libcrc32c", objs[2].Name)
	assert.True(t, objs[3].Pseudo)
	assert.True(t, objs[4].Pseudo)
	assert.True(t, ix.HasObject("xfs"))
	assert.False(t, ix.HasObject("bpf"))
}

func TestLookupName(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	s, err := ix.LookupName("xfs:helper")
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffc0002000), s.Address)
	s, err = ix.LookupName("helper")
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffff81000100), s.Address) // vmlinux first
	s, err = ix.LookupName("crc32c")
	require.NoError(t, err)
	assert.Equal(t, "libcrc32c", s.Object)
	_, err = ix.LookupName("nope:helper")
	require.ErrorIs(t, err, ErrNoObject)
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{
		"vfs_read":           {"vmlinux", "vfs_read", 0},
		"xfs:helper,3":       {"xfs", "helper", 3},
		"vmlinux:foo.isra.0": {"vmlinux", "foo.isra.0", 0},
	} {
		got, err := ParseSpec(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for bad, msg := range map[string]string{
		"":                       `spec "": empty symbol name`,
		":x":                     `spec ":x": empty object name`,
		"x,":                     `spec "x,": sympos "" is not a number`,
		"x,-1":                   `spec "x,-1": sympos -1 is negative: positions count from 1 (0: the name is unique in its object)`,
		"x,abc":                  `spec "x,abc": sympos "abc" is not a number`,
		"xfs:":                   `spec "xfs:": empty symbol name`,
		"x,18446744073709551616": `spec "x,18446744073709551616": sympos 18446744073709551616 is out of range (at most 18446744073709551615)`,
		strings.Repeat("n", 512): fmt.Sprintf("spec %q: name longer than 511 bytes", strings.Repeat("n", 512)),
	} {
		_, err := ParseSpec(bad)
		require.ErrorIs(t, err, ErrSpec, bad)
		var se *SpecError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, bad, se.Spec)
		assert.Equal(t, msg, err.Error())
	}
	got, err := ParseSpec("x,18446744073709551615")
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), got.Pos)
}

func TestAddr(t *testing.T) {
	ix := mustParse(t, sample, Options{})
	a, ok := ix.Addr(0xffffffff81000210)
	require.True(t, ok)
	assert.Equal(t, "vfs_read", a.Name)
	assert.Equal(t, uint64(0x10), a.Offset)
	assert.Equal(t, uint64(0x100), a.Size)
	assert.Equal(t, "vfs_read+0x10/0x100", a.String())
	a, ok = ix.Addr(0xffffffffc0002104)
	require.True(t, ok)
	assert.Equal(t, "xfs_iget+0x4/0x100 [xfs]", a.String())
	_, ok = ix.Addr(0x1000)
	assert.False(t, ok)
	// Past an object's last symbol: where the object ends is unknown.
	a, ok = ix.Addr(0xffffffffc0002310)
	require.True(t, ok)
	assert.Equal(t, "helper", a.Name)
	assert.Zero(t, a.Size)
	assert.Equal(t, "helper+0x10/? [xfs]", a.String())
}

// findAgrees checks Find and FindName against Lookup and LookupName for
// name in every object and at positions 0-3: the same symbol where they
// succeed, ok false exactly where they fail.
func findAgrees(t testing.TB, ix *Index, objects []string, name string) {
	for _, obj := range objects {
		for pos := range uint64(4) {
			want, err := ix.Lookup(obj, name, pos)
			got, ok := ix.Find(obj, name, pos)
			if ok != (err == nil) || got != want {
				t.Fatalf("Find(%q, %q, %d) = %+v, %v; Lookup: %+v, %v", obj, name, pos, got, ok, want, err)
			}
		}
		spec := obj + ":" + name
		want, err := ix.LookupName(spec)
		got, ok := ix.FindName(spec)
		if ok != (err == nil) || got != want {
			t.Fatalf("FindName(%q) = %+v, %v; LookupName: %+v, %v", spec, got, ok, want, err)
		}
	}
	want, err := ix.LookupName(name)
	got, ok := ix.FindName(name)
	if ok != (err == nil) || got != want {
		t.Fatalf("FindName(%q) = %+v, %v; LookupName: %+v, %v", name, got, ok, want, err)
	}
}

func TestFindAgreesWithLookup(t *testing.T) {
	for _, lto := range []bool{false, true} {
		ix := mustParse(t, sample, Options{LTO: lto})
		objects := []string{"", "vmlinux", "xfs", "libcrc32c", "__builtin__ftrace", "bpf", "nope"}
		for _, name := range []string{"helper", "vfs_read", "c_stop", "c_stop.llvm.1234", "zero_sym", "show_stat",
			"show_stat.isra.0", "__func__.0", "crc32c", "xfs_iget", "ftrace_trampoline", "bpf_prog_x", "missing", ""} {
			findAgrees(t, ix, objects, name)
		}
		// A miss allocates nothing (the diagnostics are Lookup's).
		require.Zero(t, testing.AllocsPerRun(100, func() {
			_, _ = ix.Find("vmlinux", "missing", 0)
			_, _ = ix.Find("xfs", "helper", 0)
			_, _ = ix.FindName("missing")
			_, _ = ix.FindName("xfs:missing")
		}), "lto %v", lto)
		require.NoError(t, ix.Close())
		_, ok := ix.Find("", "vfs_read", 0)
		require.False(t, ok)
		_, ok = ix.FindName("vfs_read")
		require.False(t, ok)
	}
}

// FindExport is find_symbol(): vmlinux's symbols count when they have a
// __ksymtab_ entry (once the index lists any), GPL-only ones (their entry
// between __start___ksymtab_gpl and __stop___ksymtab_gpl) only for a
// GPL-compatible module; modules' when their type letter is upper case;
// pseudo-modules never.
func TestFindExport(t *testing.T) {
	const text = `ffffffff81000000 T _printk
ffffffff81000100 T vfs_read
ffffffff81000200 t helper
ffffffff81000300 T call_rcu
ffffffff82000000 R __start___ksymtab
ffffffff82000000 r __ksymtab__printk
ffffffff8200000c R __start___ksymtab_gpl
ffffffff8200000c R __stop___ksymtab
ffffffff8200000c r __ksymtab_call_rcu
ffffffff82000018 R __stop___ksymtab_gpl
ffffffffc0001000 t helper	[xfs]
ffffffffc0001100 T helper	[libcrc32c]
ffffffffc0001200 t vfs_read	[xfs]
ffffffffc0001300 T call_rcu	[shim]
ffffffffc0002000 t xfrm_aalg_get_byid	[xfrm_algo]
ffffffffc0002100 r __ksymtab_xfrm_aalg_get_byid	[xfrm_algo]
ffffffffc0003000 T ftrace_only	[__builtin__ftrace]
`
	ix := mustParse(t, text, Options{})
	require.True(t, ix.ListsExports())
	for _, tc := range []struct {
		name   string
		gplOK  bool
		object string
		addr   uint64
	}{
		{"_printk", false, Vmlinux, 0xffffffff81000000},
		{"helper", true, "libcrc32c", 0xffffffffc0001100}, // vmlinux's and xfs's are not exported
		{"vfs_read", true, "", 0},                         // neither vmlinux's nor xfs's
		{"call_rcu", true, Vmlinux, 0xffffffff81000300},
		{"call_rcu", false, "shim", 0xffffffffc0001300}, // GPL-only in vmlinux: a module's export next
		// EXPORT_SYMBOL_GPL in a module: lower case, with its __ksymtab_
		// entry (Debian's 6.1 amd64 kernel lists xfrm_algo's so).
		{"xfrm_aalg_get_byid", true, "xfrm_algo", 0xffffffffc0002000},
		{"xfrm_aalg_get_byid", false, "", 0},
		{"ftrace_only", true, "", 0},
		{"missing", true, "", 0},
	} {
		s, ok := ix.FindExport(tc.name, tc.gplOK)
		require.Equal(t, tc.addr != 0, ok, "%s gplOK %v", tc.name, tc.gplOK)
		require.Equal(t, tc.addr, s.Address, "%s gplOK %v", tc.name, tc.gplOK)
		require.Equal(t, tc.object, s.Object, "%s gplOK %v", tc.name, tc.gplOK)
	}
	require.True(t, ix.GPLOnly("call_rcu"))
	require.False(t, ix.GPLOnly("_printk"))
	require.False(t, ix.GPLOnly("vfs_read"))
	// Without the export tables (a kallsyms of code symbols only) the
	// index cannot tell: vmlinux's names count; modules' still by their
	// type letter.
	var code []string
	for l := range strings.Lines(text) {
		if !strings.Contains(l, "ksymtab") {
			code = append(code, l)
		}
	}
	ix = mustParse(t, strings.Join(code, ""), Options{})
	require.False(t, ix.ListsExports())
	require.False(t, ix.GPLOnly("call_rcu"))
	s, ok := ix.FindExport("vfs_read", false)
	require.True(t, ok)
	require.Equal(t, uint64(0xffffffff81000100), s.Address)
	s, ok = ix.FindExport("helper", false)
	require.True(t, ok)
	require.Equal(t, Vmlinux, s.Object)
	require.NoError(t, ix.Close())
	_, ok = ix.FindExport("vfs_read", true)
	require.False(t, ok)
}

// ltoModText has suffixed names in vmlinux and in a module.
const ltoModText = `ffffffff81000100 t foo
ffffffff81000200 t foo.llvm.1111
ffffffffc0000100 t bar	[mymod]
ffffffffc0000200 t bar.llvm.2222	[mymod]
ffffffffc0000300 t baz.llvm.3333	[mymod]
`

// TestLTOModeVmlinuxOnly: in LTO mode only vmlinux's names match without
// their .llvm suffix. Kernels 6.2-6.10 looked vmlinux up with
// kallsyms_on_each_match_symbol() (cleaned names) and modules with
// module_kallsyms_on_each_symbol() and strcmp (exact). The same answers
// from the text, and from each snapshot written in LTO mode (and from a
// zstd one written without it, rebuilt for LTO); a raw LTO snapshot from
// before the rule, its modules keyed without suffixes, is refused.
func TestLTOModeVmlinuxOnly(t *testing.T) {
	text := mustParse(t, ltoModText, Options{LTO: true})
	indexes := map[string]*Index{"text": text}
	for format, write := range writers {
		var buf bytes.Buffer
		require.NoError(t, write(text, &buf))
		ix, err := ParseBytes("k.snap", buf.Bytes(), Options{})
		require.NoError(t, err, format)
		indexes[format] = ix
	}
	var buf bytes.Buffer
	require.NoError(t, mustParse(t, ltoModText, Options{}).WriteSnapshot(&buf))
	rebuilt, err := ParseBytes("k.snap", buf.Bytes(), Options{LTO: true})
	require.NoError(t, err)
	indexes["zstd rebuilt"] = rebuilt

	for how, ix := range indexes {
		_, err := ix.Lookup("vmlinux", "foo", 0)
		require.ErrorIs(t, err, ErrAmbiguous, how) // foo and foo.llvm.1111
		s, err := ix.Lookup("vmlinux", "foo", 2)
		require.NoError(t, err, how)
		assert.Equal(t, uint64(0xffffffff81000200), s.Address, how)
		s, err = ix.Lookup("mymod", "bar", 0) // exact: bar.llvm.2222 is another name
		require.NoError(t, err, how)
		assert.Equal(t, uint64(0xffffffffc0000100), s.Address, how)
		_, err = ix.Lookup("mymod", "baz", 0)
		require.ErrorIs(t, err, ErrNotFound, how)
		s, err = ix.Lookup("mymod", "baz.llvm.3333", 0)
		require.NoError(t, err, how)
		assert.Equal(t, uint64(0xffffffffc0000300), s.Address, how)
		_, ok := ix.Find("mymod", "baz", 0)
		assert.False(t, ok, how)
	}

	// A raw LTO snapshot with the old flag (LTO alone) is refused.
	buf.Reset()
	require.NoError(t, text.WriteSnapshotRaw(&buf))
	old := bytes.Clone(buf.Bytes())
	binary.LittleEndian.PutUint32(old[12:], rawFlagLTO)
	_, err = ParseBytes("old.snap", rawWithChecksum(old), Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.ErrorContains(t, err, "old.snap: snapshot: malformed input: written with --lto by an older klpresolve")
}

// TestQuickAgreesWithGeneral checks Lookup's short path (quick) against
// the general one (find, search, found) on every symbol of a kernel with
// modules, at positions 0 to 2, in an index of the text, a raw
// snapshot's and a compact one's (decoded as the lookups reach its
// chunks): same symbol, same error. It also checks that the short path
// answers most of them, so that it is what the comparison tested.
func TestQuickAgreesWithGeneral(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	text, err := Open(path, Options{})
	require.NoError(t, err)
	raw := filepath.Join(t.TempDir(), "raw.snap")
	require.NoError(t, text.WriteSnapshotRawFile(raw))
	snap, err := Open(raw, Options{})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, text.WriteSnapshot(&b))
	compact := filepath.Join(t.TempDir(), "compact.snap")
	require.NoError(t, os.WriteFile(compact, b.Bytes(), 0o644))
	lazy, err := Open(compact, Options{})
	require.NoError(t, err)
	require.NotNil(t, lazy.lazy)
	step := uint32(1)
	if testutil.Sampled() {
		step = 13
	}
	for _, ix := range []*Index{text, snap, lazy} {
		lookups, quick := 0, 0
		for oi, o := range ix.objs {
			if o.pseudo {
				continue
			}
			for i := o.start; i < o.end; i += step {
				name := ix.name(i)
				for pos := range uint64(3) {
					want, wantErr := ix.lookupFrom(oi, ix.find(&ix.objs[oi], name), name, pos)
					got, gotErr := ix.Lookup(o.name, name, pos)
					require.Equal(t, want, got, "%s %s %d", o.name, name, pos)
					require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "%s %s %d", o.name, name, pos)
					if hit, _ := ix.quick(&ix.objs[oi], name, pos); hit != 0 {
						quick++
					}
					lookups++
				}
			}
		}
		// Positions 0 and 1 of a unique name: most of two thirds.
		require.Greater(t, quick, lookups/2, "lookups the short path answered")
		require.Less(t, quick, lookups*2/3)
	}
}
