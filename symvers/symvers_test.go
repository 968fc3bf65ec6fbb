// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/kgen"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

const sample = "0x9060323f\tmodule_layout\tvmlinux\tEXPORT_SYMBOL\t\n" +
	"0xf0949581\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n" +
	"\n" +
	"0x84b45156\tinsert_resource_expand_to_fit\tvmlinux\tEXPORT_SYMBOL_GPL\tCXL\r\n" +
	"0x1234abcd\txfs_stat\tfs/xfs/xfs\tEXPORT_SYMBOL_GPL\t\n" +
	"0x00000001\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n" // listed again: the first stays

func TestParse(t *testing.T) {
	tb, err := Parse("Module.symvers", strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, 4, tb.Len())
	assert.True(t, tb.HasCRCs())
	assert.Equal(t, "Module.symvers", tb.Source)
	e, ok := tb.Lookup("seq_printf")
	require.True(t, ok)
	assert.Equal(t, Export{Name: "seq_printf", CRC: 0xf0949581, Module: Vmlinux}, e)
	e, _ = tb.Lookup("insert_resource_expand_to_fit")
	assert.Equal(t, Export{Name: "insert_resource_expand_to_fit", CRC: 0x84b45156, Module: Vmlinux, GPLOnly: true, Namespace: "CXL"}, e)
	e, _ = tb.Lookup("xfs_stat")
	assert.Equal(t, "fs/xfs/xfs", e.Module)
	_, ok = tb.Lookup("vfs_read")
	assert.False(t, ok)

	// No CONFIG_MODVERSIONS: every CRC 0.
	tb, err = Parse("m", strings.NewReader("0x00000000\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n"))
	require.NoError(t, err)
	assert.False(t, tb.HasCRCs())
	tb, err = Parse("empty", strings.NewReader(""))
	require.NoError(t, err)
	assert.Equal(t, 0, tb.Len())
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, why string }{
		{"0x1\tseq_printf\tvmlinux\tEXPORT_SYMBOL\n", "4 fields, not 5"},
		{"seq_printf vmlinux\n", "1 fields, not 5"},
		{"0xzz\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n", `CRC "0xzz" is not a 32-bit hex number`},
		{"0x123456789\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n", `CRC "0x123456789" is not a 32-bit hex number`},
		{"\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n", `CRC "" is not a 32-bit hex number`},
		{"0x1\t\tvmlinux\tEXPORT_SYMBOL\t\n", "empty symbol or module name"},
		{"0x1\tseq_printf\t\tEXPORT_SYMBOL\t\n", "empty symbol or module name"},
		{"0x1\tseq_printf\tvmlinux\tEXPORT_SYMBOL_GPL_FUTURE\t\n", `unknown export type "EXPORT_SYMBOL_GPL_FUTURE"`},
	} {
		_, err := Parse("Module.symvers", strings.NewReader("0x9060323f\tmodule_layout\tvmlinux\tEXPORT_SYMBOL\t\n\n"+c.in))
		require.Error(t, err, c.in)
		assert.ErrorIs(t, err, ErrMalformed)
		var le *LineError
		require.True(t, errors.As(err, &le))
		assert.Equal(t, LineError{File: "Module.symvers", Line: 3, Why: c.why}, *le, c.in)
		assert.Contains(t, err.Error(), "Module.symvers:3: "+c.why)
	}
}

// versionsSection lays entries out as modpost's struct modversion_info
// array: an unsigned long CRC, then the name padded with NULs to 64 bytes.
func versionsSection(order binary.ByteOrder, is64 bool, vs ...Version) []byte {
	var out []byte
	for _, v := range vs {
		e := make([]byte, VersionSize)
		word := 4
		if is64 {
			word = 8
			order.PutUint64(e, v.CRC)
		} else {
			order.PutUint32(e, uint32(v.CRC))
		}
		copy(e[word:], v.Name)
		out = append(out, e...)
	}
	return out
}

func TestParseVersions(t *testing.T) {
	vs := []Version{{"module_layout", 0x9060323f}, {"seq_printf", 0xf0949581}, {strings.Repeat("n", 55), 7}}
	for _, c := range []struct {
		order binary.ByteOrder
		is64  bool
	}{{binary.LittleEndian, true}, {binary.BigEndian, true}, {binary.LittleEndian, false}, {binary.BigEndian, false}} {
		data := versionsSection(c.order, c.is64, vs...)
		got, err := ParseVersions(data, c.order, c.is64)
		require.NoError(t, err)
		assert.Equal(t, vs, got)
		// A partial entry at the end is not counted (sh_size / 64).
		got, err = ParseVersions(append(data, 1, 2, 3), c.order, c.is64)
		require.NoError(t, err)
		assert.Len(t, got, 3)
	}
	// A 64-bit CRC with upper bits is kept: it never matches.
	got, err := ParseVersions(versionsSection(binary.LittleEndian, true, Version{"x", 1<<32 | 5}), binary.LittleEndian, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<32|5), got[0].CRC)
	// A name that fills its bytes without a NUL.
	bad := versionsSection(binary.LittleEndian, true, Version{"module_layout", 1}, Version{strings.Repeat("n", 56), 2})
	_, err = ParseVersions(bad, binary.LittleEndian, true)
	assert.ErrorIs(t, err, ErrBadVersions)
	assert.Contains(t, err.Error(), "entry 1's name has no NUL in its 56 bytes")
	got, err = ParseVersions(nil, binary.LittleEndian, true)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestCheck(t *testing.T) {
	tb, err := Parse("Module.symvers", strings.NewReader(sample))
	require.NoError(t, err)
	good := Module{
		Name:        "fix",
		Versions:    []Version{{"module_layout", 0x9060323f}, {"seq_printf", 0xf0949581}, {"insert_resource_expand_to_fit", 0x84b45156}},
		HasVersions: true,
		Imports:     []string{"CXL"},
		// vfs_read is not exported (not checked here: "Unknown symbol");
		// seq_printf twice in the list is checked once.
		Undefined: []string{"seq_printf", "vfs_read", "insert_resource_expand_to_fit", "seq_printf"},
	}
	r := tb.Check(good, kgen.Linux6_1)
	assert.True(t, r.OK())
	assert.Equal(t, 3, r.Checked)
	assert.False(t, r.Forced)
	assert.False(t, r.NoCRCs)
	assert.Equal(t, "Module.symvers", r.Source)

	// Another build's CRCs, a symbol missing from __versions, a namespace
	// not imported; module_layout comes first.
	bad := good
	bad.Versions = []Version{{"xfs_stat", 0x1234abcd}, {"module_layout", 0x160c03af}, {"seq_printf", 0xac8427d8}}
	bad.Imports = nil
	bad.Undefined = []string{"xfs_stat", "seq_printf", "insert_resource_expand_to_fit"}
	r = tb.Check(bad, kgen.Linux6_1)
	require.Len(t, r.Problems, 3)
	assert.Equal(t, 4, r.Checked)
	assert.Equal(t, Problem{Symbol: "module_layout", Err: ErrVersionMismatch, ModuleCRC: 0x160c03af, KernelCRC: 0x9060323f,
		Message: "fix: disagrees about version of symbol module_layout"}, r.Problems[0])
	assert.Equal(t, Problem{Symbol: "seq_printf", Err: ErrVersionMismatch, ModuleCRC: 0xac8427d8, KernelCRC: 0xf0949581,
		Message: "fix: disagrees about version of symbol seq_printf"}, r.Problems[1])
	assert.Equal(t, Problem{Symbol: "insert_resource_expand_to_fit", Err: ErrNoSymbolVersion, KernelCRC: 0x84b45156,
		Message: "fix: no symbol version for insert_resource_expand_to_fit"}, r.Problems[2])
	var p error = &r.Problems[2]
	assert.ErrorIs(t, p, ErrNoSymbolVersion)
	assert.Equal(t, "fix: no symbol version for insert_resource_expand_to_fit", p.Error())

	// The version agrees, the namespace is not imported.
	ns := good
	ns.Imports = []string{"CRYPTO_INTERNAL"}
	r = tb.Check(ns, kgen.Linux6_1)
	require.Len(t, r.Problems, 1)
	assert.Equal(t, Problem{Symbol: "insert_resource_expand_to_fit", Err: ErrNamespaceNotImported, Namespace: "CXL",
		Message: "fix: module uses symbol (insert_resource_expand_to_fit) from namespace CXL, but does not import it."}, r.Problems[0])

	// No __versions: every symbol passes only by force.
	none := good
	none.Versions, none.HasVersions = nil, false
	r = tb.Check(none, kgen.Linux6_1)
	assert.True(t, r.OK())
	assert.True(t, r.Forced)
	assert.Equal(t, 3, r.Checked)

	// A kernel without CONFIG_MODVERSIONS checks namespaces only.
	plain, err := Parse("plain", strings.NewReader("0x00000000\tinsert_resource_expand_to_fit\tvmlinux\tEXPORT_SYMBOL_GPL\tCXL\n"))
	require.NoError(t, err)
	r = plain.Check(Module{Name: "fix", Undefined: []string{"insert_resource_expand_to_fit"}}, kgen.Linux6_1)
	assert.True(t, r.NoCRCs)
	assert.False(t, r.Forced)
	require.Len(t, r.Problems, 1)
	assert.ErrorIs(t, &r.Problems[0], ErrNamespaceNotImported)
}

// countLines is the tests' own count of a Module.symvers's lines and the
// CRC of name in it.
func countLines(t *testing.T, path, name string) (int, uint32) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n, crc := 0, uint32(0)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		require.Len(t, fields, 5, sc.Text())
		n++
		if fields[1] == name {
			v, err := strconv.ParseUint(fields[0], 0, 32)
			require.NoError(t, err)
			crc = uint32(v)
		}
	}
	require.NoError(t, sc.Err())
	return n, crc
}

// kbuildModule reads testdata/kbuild/klp-demo.ko (built by Kbuild against
// Debian's linux-headers-6.1.0-57-amd64).
func kbuildModule(t *testing.T) Module {
	return moduleOf(t, filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko"), "klp_demo")
}

// moduleOf reads a module with debug/elf: the __versions entries and the
// undefined symbols.
func moduleOf(t *testing.T, path, name string) Module {
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	s := f.Section("__versions")
	require.NotNil(t, s)
	data, err := s.Data()
	require.NoError(t, err)
	vs, err := ParseVersions(data, f.ByteOrder, f.Class == elf.ELFCLASS64)
	require.NoError(t, err)
	syms, err := f.Symbols()
	require.NoError(t, err)
	m := Module{Name: name, Versions: vs, HasVersions: true}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" {
			m.Undefined = append(m.Undefined, s.Name)
		}
	}
	return m
}

// Debian's real Module.symvers: the module built against it agrees with
// it; the same module against another ABI's (6.1.0-47, 6.1.170) is
// refused as that kernel refuses it, module_layout first.
func TestDebianSymvers(t *testing.T) {
	p57 := testutil.Headers(t, "6.1.0-57-amd64")
	tb, err := Open(p57)
	require.NoError(t, err)
	lines, crc := countLines(t, p57, "seq_printf")
	assert.Equal(t, lines, tb.Len()) // no name is listed twice
	e, ok := tb.Lookup("seq_printf")
	require.True(t, ok)
	assert.Equal(t, crc, e.CRC)
	assert.True(t, tb.HasCRCs())

	m := kbuildModule(t)
	// modpost wrote module_layout's CRC and each import's from this file.
	byName := map[string]uint64{}
	for _, v := range m.Versions {
		byName[v.Name] = v.CRC
	}
	_, layout := countLines(t, p57, "module_layout")
	assert.Equal(t, uint64(layout), byName["module_layout"])
	r := tb.Check(m, kgen.Linux6_1)
	assert.True(t, r.OK(), "%v", r.Problems)
	exported := 0
	for _, u := range m.Undefined {
		if _, ok := tb.Lookup(u); ok {
			exported++
		}
	}
	assert.Equal(t, exported+1, r.Checked)
	assert.GreaterOrEqual(t, exported, 5) // __fentry__, seq_printf, klp_enable_patch, ...

	p47 := testutil.Headers(t, "6.1.0-47-amd64")
	old, err := Open(p47)
	require.NoError(t, err)
	r = old.Check(m, kgen.Linux6_1)
	require.False(t, r.OK())
	assert.Equal(t, "module_layout", r.Problems[0].Symbol)
	for _, p := range r.Problems {
		assert.ErrorIs(t, &p, ErrVersionMismatch)
		_, kc := countLines(t, p47, p.Symbol)
		assert.Equal(t, kc, p.KernelCRC, p.Symbol)
		assert.Equal(t, byName[p.Symbol], p.ModuleCRC, p.Symbol)
		assert.NotEqual(t, uint64(p.KernelCRC), p.ModuleCRC)
	}
	var names []string
	for _, p := range r.Problems {
		names = append(names, p.Symbol)
	}
	t.Logf("6.1.0-47 refuses klp_demo for %v", names)
}

// Debian's own modules (the corpus's amd64 ones, from the same build as
// the headers) agree with its Module.symvers, every import that it
// exports checked; 6.1.0-47's refuses each, module_layout first.
func TestDebianModules(t *testing.T) {
	tb, err := Open(testutil.Headers(t, "6.1.0-57-amd64"))
	require.NoError(t, err)
	old, err := Open(testutil.Headers(t, "6.1.0-47-amd64"))
	require.NoError(t, err)
	dir := testutil.Corpus(t, "amd64/modules")
	kos, err := filepath.Glob(filepath.Join(dir, "*.ko"))
	require.NoError(t, err)
	require.NotEmpty(t, kos)
	for _, ko := range kos {
		m := moduleOf(t, ko, strings.TrimSuffix(filepath.Base(ko), ".ko"))
		exported := 0
		for _, u := range m.Undefined {
			if _, ok := tb.Lookup(u); ok {
				exported++
			}
		}
		r := tb.Check(m, kgen.Linux6_1)
		assert.True(t, r.OK(), "%s: %v", ko, r.Problems)
		assert.Equal(t, exported+1, r.Checked, ko)
		r = old.Check(m, kgen.Linux6_1)
		require.False(t, r.OK(), ko)
		assert.Equal(t, "module_layout", r.Problems[0].Symbol, ko)
	}
}

// TestExtendedVersions7_2: a 7.2 kernel reads a module's extended
// versions (__version_ext_crcs and __version_ext_names) instead of
// __versions: a symbol they list must match, one they do not list passes
// with a warning. Older kernels read __versions only.
func TestExtendedVersions7_2(t *testing.T) {
	tb, err := Parse("Module.symvers", strings.NewReader(sample))
	require.NoError(t, err)
	le := binary.LittleEndian
	crcs := le.AppendUint32(le.AppendUint32(nil, 0x9060323f), 0xdeadbeef)
	ext, err := ParseExtVersions(crcs, []byte("module_layout\x00seq_printf\x00"), le)
	require.NoError(t, err)
	assert.Equal(t, []Version{{"module_layout", 0x9060323f}, {"seq_printf", 0xdeadbeef}}, ext)
	_, err = ParseExtVersions(crcs, []byte("module_layout\x00seq_printf"), le)
	require.ErrorIs(t, err, ErrBadVersions)
	assert.Contains(t, err.Error(), "more extended version crcs than names")

	m := Module{Name: "fix", ExtVersions: ext, HasExtVersions: true,
		Undefined: []string{"seq_printf", "xfs_stat"}}
	r := tb.Check(m, kgen.Linux7_2)
	require.Len(t, r.Problems, 1)
	assert.ErrorIs(t, &r.Problems[0], ErrVersionMismatch)
	assert.Equal(t, "fix: disagrees about version of symbol seq_printf", r.Problems[0].Message)
	assert.Equal(t, []string{"xfs_stat"}, r.Unlisted)
	assert.False(t, r.Forced)

	// 6.12 ignores them: no __versions, so only by force.
	r = tb.Check(m, kgen.Linux6_12)
	assert.True(t, r.OK())
	assert.True(t, r.Forced)
	assert.Empty(t, r.Unlisted)
}
