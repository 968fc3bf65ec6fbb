// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/internal/testutil/testelf"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

func amd64Index(t *testing.T) *kallsyms.Index {
	t.Helper()
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	return ix
}

func TestParseSymbolName(t *testing.T) {
	long := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a'
		}
		return string(b)
	}
	tests := []struct {
		in   string
		n    int
		want SymbolName
	}{
		{".klp.sym.vmlinux.printk,0", 3, SymbolName{"vmlinux", "printk", 0}},
		{".klp.sym.btrfs.foo.isra.0,2", 3, SymbolName{"btrfs", "foo.isra.0", 2}},
		{".klp.sym.vmlinux.c_stop.llvm.123,1", 3, SymbolName{"vmlinux", "c_stop.llvm.123", 1}},
		{".klp.sym.vmlinux.x, 7", 3, SymbolName{"vmlinux", "x", 7}},                                // %lu skips blanks
		{".klp.sym.vmlinux.x,1junk", 3, SymbolName{"vmlinux", "x", 1}},                             // trailing text ignored
		{".klp.sym.vmlinux.x,18446744073709551617", 3, SymbolName{"vmlinux", "x", 1}},              // wraps mod 2^64
		{".klp.sym.zfs.ko.dmu_objset_from_ds,0", 3, SymbolName{"zfs", "ko.dmu_objset_from_ds", 0}}, // kpatch #918
		{".klp.sym.vmlinux.x,-1", 2, SymbolName{"vmlinux", "x", 0}},                                // no sign for %lu
		{".klp.sym.vmlinux.x,+1", 2, SymbolName{"vmlinux", "x", 0}},
		{".klp.sym.vmlinux.x,", 2, SymbolName{"vmlinux", "x", 0}},
		{".klp.sym.vmlinux.x", 2, SymbolName{"vmlinux", "x", 0}},
		{".klp.sym.vmlinux.,0", 1, SymbolName{"vmlinux", "", 0}},
		{".klp.sym..x,0", 0, SymbolName{}},
		{".klp.sym.vmlinux", 1, SymbolName{"vmlinux", "", 0}},
		{"klp.sym.vmlinux.x,0", 0, SymbolName{}},
		{".klp.sym." + long(55) + ".x,0", 3, SymbolName{long(55), "x", 0}},
		{".klp.sym." + long(56) + ".x,0", 1, SymbolName{long(55), "", 0}},
		{".klp.sym.m." + long(511) + ",4", 3, SymbolName{"m", long(511), 4}},
		{".klp.sym.m." + long(512) + ",4", 2, SymbolName{"m", long(511), 0}},
	}
	for _, tt := range tests {
		got, n := ParseSymbolName(tt.in)
		assert.Equal(t, tt.n, n, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestParseSectionName(t *testing.T) {
	obj, ok, tr := ParseSectionName(".klp.rela.vmlinux..text.foo")
	assert.True(t, ok)
	assert.False(t, tr)
	assert.Equal(t, "vmlinux", obj)
	_, ok, _ = ParseSectionName(".klp.rela..text")
	assert.False(t, ok)
	obj, ok, tr = ParseSectionName(".klp.rela.a_module_name_that_is_longer_than_fifty_five_bytes_xxxxxxx..text")
	assert.True(t, ok)
	assert.True(t, tr)
	assert.Len(t, obj, 55)
}

func TestOpenSample(t *testing.T) {
	m, err := Open(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	assert.Equal(t, FormatKLP, m.Format)
	assert.Equal(t, "x86_64", m.Arch)
	assert.Equal(t, "livepatch_sample", m.Name)
	assert.True(t, m.Livepatch)
	assert.Equal(t, 7, m.NumRelocs())
	var objs []string
	for _, s := range m.Sections {
		objs = append(objs, s.Object)
		require.NoError(t, s.Err)
	}
	assert.Equal(t, []string{"vmlinux", "vmlinux", "ext4", "xfs", "vmlinux", "vmlinux"}, objs)
	r := m.Sections[0].Relocs[1]
	assert.Equal(t, "R_X86_64_PLT32", r.TypeName())
	assert.Equal(t, uint64(0xd), r.Offset)
	assert.Equal(t, int64(-4), r.Addend)
	assert.Equal(t, SymbolName{"vmlinux", "vfs_read", 0}, r.Sym)
}

// wantAddr computes the expected address with the index's own Candidates,
// independently of Resolve.
func wantAddr(t *testing.T, ix *kallsyms.Index, obj, name string, pos int) uint64 {
	c := ix.Candidates(obj, name)
	require.NotEmpty(t, c, "%s:%s", obj, name)
	if pos == 0 {
		require.Len(t, c, 1)
		return c[0].Address
	}
	return c[pos-1].Address
}

func TestResolveSample(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, 6, res.Resolved)
	assert.Equal(t, 1, res.Deferred)
	assert.Equal(t, 0, res.Errors)
	assert.Equal(t, []string{"xfs"}, res.DeferredObjects)
	assert.True(t, res.OK(false))
	assert.False(t, res.OK(true))
	want := map[string]uint64{
		"vfs_read":               0xffffffff813669e0,
		"jiffies":                0xffffffff82a079c0,
		"ext4_read_inode_bitmap": 0xffffffffc0350680,
		"type_show":              wantAddr(t, ix, "vmlinux", "type_show", 3),
	}
	for _, r := range res.Results {
		if r.Status == Deferred {
			assert.Equal(t, "xfs_iget", r.Name)
			continue
		}
		require.Equal(t, Resolved, r.Status, r.Symbol)
		assert.Equal(t, want[r.Name], r.Address, r.Symbol)
	}
}

func TestResolveErrorFixtures(t *testing.T) {
	ix := amd64Index(t)
	tests := []struct {
		file   string
		kind   error
		kernel string
		hint   string
		name   string // RelocError.Kind
	}{
		{"err-not-livepatch.ko", ErrNotLivepatchSymbol, "symbol .klp.sym.vmlinux.vfs_read,0 is not marked as a livepatch symbol", "SHN_LIVEPATCH", "not_livepatch_symbol"},
		{"err-bad-name.ko", ErrBadSymbolName, "symbol .klp.sym.vmlinux.vfs_read has an incorrectly formatted name", "decimal sympos", "bad_symbol_name"},
		{"err-ambiguous.ko", kallsyms.ErrAmbiguous, "unresolvable ambiguity for symbol 'type_show' in object '(null)'", "17 symbols named", "ambiguous"},
		{"err-position.ko", kallsyms.ErrNoSuchPosition, "symbol position 18 for symbol 'type_show' in object 'vmlinux' not found", "only 17", "no_such_position"},
		{"err-vmlinux-from-module.ko", ErrVmlinuxFromModule, "invalid access to vmlinux symbol 'vfs_read' from module-specific livepatch relocation section", ".klp.rela.vmlinux", "vmlinux_from_module"},
		{"err-not-found.ko", kallsyms.ErrNotFound, "symbol 'no_such_function' not found in symbol table", "", "not_found"},
		{"err-object-name-too-long.ko", ErrBadSectionName, "(no message: the kernel fails silently)", "silently never applies the section", "bad_section_name"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m, err := Open(fixture(tt.file))
			require.NoError(t, err)
			res := m.Resolve(ix, ResolveOptions{})
			require.Equal(t, 1, res.Errors, "exactly one relocation fails")
			for _, r := range res.Results {
				if r.Status != Failed {
					continue
				}
				require.ErrorIs(t, r.Err, tt.kind)
				var re *RelocError
				require.True(t, errors.As(r.Err, &re))
				assert.Contains(t, re.Kernel, tt.kernel)
				assert.Contains(t, re.Hint, tt.hint)
				assert.Equal(t, fixture(tt.file), re.File)
				assert.NotEmpty(t, re.Section)
				assert.Equal(t, tt.name, re.Kind())
			}
			assert.False(t, res.OK(false))
		})
	}
}

// TestNotMarkedMessage7_2: from 7.2, klp_resolve_symbols() says where
// the unmarked symbol is: the symbol table's section index ("rela sec",
// as it names it) and the relocation's index in its section.
func TestNotMarkedMessage7_2(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("err-not-livepatch.ko"))
	require.NoError(t, err)
	// The fixture's second relocation (index 1) is the unmarked one.
	for _, tc := range []struct {
		gen  kgen.Generation
		want string
	}{
		{kgen.Linux6_12, "symbol .klp.sym.vmlinux.vfs_read,0 is not marked as a livepatch symbol"},
		{kgen.Linux7_2, fmt.Sprintf("symbol .klp.sym.vmlinux.vfs_read,0 at rela sec %d idx 1 is not marked as a livepatch symbol", m.elf.Symtab)},
	} {
		res := m.Resolve(ix, ResolveOptions{Generation: tc.gen})
		var msgs []string
		for _, r := range res.Results {
			if r.Err != nil {
				require.Equal(t, 1, r.Index)
				msgs = append(msgs, r.Err.Kernel)
			}
		}
		assert.Equal(t, []string{tc.want}, msgs, "%s", tc.gen)
	}
}

func TestConvertRoundTrip(t *testing.T) {
	ix := amd64Index(t)
	obj, err := readFixture("patch.o")
	require.NoError(t, err)
	// Positions computed from the index: unique -> 0.
	var syms []ConvertSymbol
	for _, name := range []string{"vfs_read", "jiffies"} {
		c := ix.Candidates("vmlinux", name)
		require.Len(t, c, 1)
		syms = append(syms, ConvertSymbol{Object: "vmlinux", Name: name})
	}
	out, err := Convert("patch.o", obj, syms)
	require.NoError(t, err)
	m, err := Parse("converted", out)
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, 4, res.Resolved) // jiffies x3, vfs_read x1
	for _, r := range res.Results {
		assert.Equal(t, ix.Candidates("vmlinux", r.Name)[0].Address, r.Address)
	}
	// Relocation order within a section is kept.
	assert.Equal(t, []string{"jiffies", "vfs_read"}, []string{m.Sections[0].Relocs[0].Sym.Name, m.Sections[0].Relocs[1].Sym.Name})

	_, err = Convert("patch.o", obj, []ConvertSymbol{{Object: "vmlinux", Name: "not_referenced"}})
	assert.ErrorContains(t, err, "not an undefined symbol")
	_, err = Convert("patch.o", obj, []ConvertSymbol{{Object: "zfs.ko", Name: "vfs_read"}})
	assert.ErrorContains(t, err, "without dots")
}

func TestBigCompressedModule(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("big.ko.zst"))
	require.NoError(t, err)
	assert.Equal(t, "zstd", string(m.Compression))
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, 20000, res.Resolved)
	// Every relocation answers the unique symbol's own address.
	for i, r := range res.Results {
		if i%499 == 0 {
			c := ix.Candidates("vmlinux", r.Name)
			require.Len(t, c, 1)
			assert.Equal(t, c[0].Address, r.Address)
		}
	}
}

func TestKpatchModule(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("kpatch-sample.ko"))
	require.NoError(t, err)
	assert.Equal(t, FormatKpatch, m.Format)
	require.NotNil(t, m.Kpatch)
	assert.Equal(t, "sympos", m.Kpatch.Layout)
	require.Len(t, m.Kpatch.Dynrelas, 5)
	d := m.Kpatch.Dynrelas[1]
	assert.Equal(t, Dynrela{Index: 1, Dest: ".text.patched_code+0x8", Offset: 8, Type: 1, TypeName: "R_X86_64_64", Pos: 5, Name: "type_show", Object: "vmlinux"}, d)
	assert.True(t, m.Kpatch.Dynrelas[4].External)
	assert.Equal(t, int64(-4), m.Kpatch.Dynrelas[0].Addend)
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, []int{3, 1, 1}, []int{res.Resolved, res.Deferred, res.Errors})
	assert.Equal(t, []string{"xfs"}, res.DeferredObjects)
	assert.Equal(t, wantAddr(t, ix, "vmlinux", "type_show", 5), res.Results[1].Address)
	assert.Equal(t, uint64(8), res.Results[1].Offset, "where it writes")
	// The external one names vfs_read, which 6.1 does not export: the
	// kpatch core looks among exports, then in the patch module itself
	// (kpatch_find_external_symbol()), never at vmlinux's locals.
	ext := res.Results[4]
	require.Equal(t, Failed, ext.Status)
	assert.Equal(t, "symbol 'vfs_read' not found in symbol table\nunable to find symbol 'vfs_read'", ext.Err.Kernel)
	assert.Contains(t, ext.Err.Hint, "never among another object's local symbols")
	require.Len(t, res.Funcs, 2)
	assert.Equal(t, uint64(0xffffffff813669e0), res.Funcs[0].Address)
	assert.Equal(t, wantAddr(t, ix, "vmlinux", "type_show", 2), res.Funcs[1].Address)

	// The xfs dynrela's object renamed "x-s" (.kpatch.strings): no module
	// has such a name; it fails instead of waiting forever.
	data, err := readFixture("kpatch-sample.ko")
	require.NoError(t, err)
	i := bytes.Index(data, []byte("xfs\x00ext4\x00"))
	require.Positive(t, i)
	data[i+1] = '-'
	m, err = Parse("dashed.ko", data)
	require.NoError(t, err)
	res = m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, []int{3, 0, 2}, []int{res.Resolved, res.Deferred, res.Errors})
	bad := failures(res)
	require.Len(t, bad, 2)
	assert.Equal(t, "x-s", bad[0].Object)
	assert.Equal(t, "never_loads", bad[0].Err.Kind())
	assert.Contains(t, bad[0].Err.Hint, `so the object is "x_s"`)
}

// TestKpatchCoreRules: the kpatch core module's rules for dynrelas
// (kpatch_write_relocations()): an external symbol that the kernel
// exports resolves to the export; x86_64's NONE, 64, PC32, PLT32 and 32S
// are applied, any other type is refused with its message.
func TestKpatchCoreRules(t *testing.T) {
	ix := amd64Index(t)
	data, err := readFixture("kpatch-sample.ko")
	require.NoError(t, err)
	// The type_show dynrela (R_X86_64_64) becomes R_X86_64_PC64.
	m0, err := Parse("k.ko", data)
	require.NoError(t, err)
	dyn := m0.elf.SectionByName(".kpatch.dynrelas")
	data[dyn.Offset+64+16] = byte(elf.R_X86_64_PC64) // entry 1's type
	m, err := Parse("k.ko", data)
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	d1 := res.Results[1]
	require.Equal(t, Failed, d1.Status, "R_X86_64_PC64")
	assert.ErrorIs(t, d1.Err, ErrDynrelaType)
	assert.Equal(t, "unsupported_dynrela_type", d1.Err.Kind())
	assert.Equal(t, "unsupported rela type 24 for source type_show (.text.patched_code+0x8 <- type_show)", d1.Err.Kernel)

	// The external dynrela naming kernel_read, which 6.1 exports.
	m.Kpatch.Dynrelas[4].Name = "kernel_read"
	res = m.Resolve(ix, ResolveOptions{})
	s, ok := ix.FindExport("kernel_read", true)
	require.True(t, ok)
	assert.Equal(t, Resolved, res.Results[4].Status)
	assert.Equal(t, s.Address, res.Results[4].Address)
}

func TestRelocTypeNames(t *testing.T) {
	for _, tt := range []struct {
		m    elf.Machine
		t    uint32
		want string
	}{
		{elf.EM_X86_64, 4, "R_X86_64_PLT32"},
		{elf.EM_AARCH64, 283, "R_AARCH64_CALL26"},
		{elf.EM_ARM, 28, "R_ARM_CALL"},
		{elf.EM_PPC64, 10, "R_PPC64_REL24"},
		{elf.EM_S390, 19, "R_390_PC32DBL"},
		// debug/elf has no name for these, and printed the nearest lower
		// one "+N" ("R_AARCH64_LDST64_ABS_LO12_NC+1"): the ABI's names,
		// or the number where the ABI has none.
		{elf.EM_AARCH64, 287, "R_AARCH64_MOVW_PREL_G0"},
		{elf.EM_AARCH64, 293, "R_AARCH64_MOVW_PREL_G3"},
		{elf.EM_AARCH64, 308, "R_AARCH64_GOTREL32"},
		{elf.EM_AARCH64, 294, "R_AARCH64_294"},
		{elf.EM_AARCH64, 281, "R_AARCH64_281"},
		{elf.EM_X86_64, 43, "R_X86_64_CODE_4_GOTPCRELX"},
		{elf.EM_X86_64, 46, "R_X86_64_46"},
		{elf.EM_ARM, 150, "R_ARM_150"},
	} {
		assert.Equal(t, tt.want, RelocTypeName(tt.m, tt.t))
	}
	assert.Equal(t, "arm64", ArchName(elf.EM_AARCH64))
	assert.Equal(t, "R_EM_MIPS_5", RelocTypeName(elf.EM_MIPS, 5))
}

// TestConvertRefusals: what Convert will not do, each with its error.
func TestConvertRefusals(t *testing.T) {
	// 32-bit arm: REL relocations, which no livepatch section can hold.
	b := &elfobj.Builder{Class: elf.ELFCLASS32, Order: binary.LittleEndian, Machine: elf.EM_ARM}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 4})
	vr := b.AddSymbol(elfobj.BuildSymbol{Name: "vfs_read", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rel.text", false, text, []elfobj.Reloc{{Offset: 4, Sym: vr, Type: uint32(elf.R_ARM_CALL)}})
	_, err := Convert("arm.o", b.Bytes(), []ConvertSymbol{{Object: "vmlinux", Name: "vfs_read"}})
	require.ErrorIs(t, err, ErrRELRelocations)
	assert.ErrorContains(t, err, "arm.o: ")
	assert.ErrorContains(t, err, ".rel.text relocates vfs_read (EM_ARM)")

	// x86_64: a symbol no relocation uses; a name given for two objects.
	b = &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text = b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 16})
	used := b.AddSymbol(elfobj.BuildSymbol{Name: "used", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddSymbol(elfobj.BuildSymbol{Name: "idle", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{{Offset: 1, Sym: used, Type: uint32(elf.R_X86_64_PLT32), Addend: -4}})
	obj := b.Bytes()
	_, err = Convert("x.o", obj, []ConvertSymbol{{Object: "vmlinux", Name: "used"}, {Object: "vmlinux", Name: "idle"}})
	require.ErrorIs(t, err, ErrNothingToConvert)
	assert.ErrorContains(t, err, `x.o: symbol "idle"`)
	_, err = Convert("x.o", obj, []ConvertSymbol{{Object: "vmlinux", Name: "used"}, {Object: "ext4", Name: "used"}})
	assert.EqualError(t, err, `x.o: symbol "used" given twice: .klp.sym.vmlinux.used,0 and .klp.sym.ext4.used,0`)

	// The same symbol twice is converted once.
	out, err := Convert("x.o", obj, []ConvertSymbol{{Object: "vmlinux", Name: "used", Pos: 2}, {Object: "vmlinux", Name: "used", Pos: 2}})
	require.NoError(t, err)
	m, err := Parse("x.ko", out)
	require.NoError(t, err)
	require.Len(t, m.Sections, 1)
	assert.Equal(t, ".klp.rela.vmlinux..text", m.Sections[0].Name)
	require.Len(t, m.Sections[0].Relocs, 1)
	assert.Equal(t, SymbolName{Object: "vmlinux", Name: "used", Pos: 2}, m.Sections[0].Relocs[0].Sym)
}

// respelt is a copy of data with the first old overwritten by new, no
// longer than it: a string table's name or a .modinfo key changed in
// place.
func respelt(t *testing.T, data []byte, old, new string) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(old))
	require.Positive(t, i, "%q", old)
	require.LessOrEqual(t, len(new), len(old))
	out := slices.Clone(data)
	copy(out[i:], new)
	return out
}

// TestNotMarkedLivepatch: a built module (it has a .modinfo) with
// livepatch sections but no livepatch key fails on every kernel, as
// klp_enable_patch() refuses it; the sample (marked), one marked
// livepatch=N (the kernel tests the key, not its value) and an object
// without .modinfo (convert's output before kbuild) do not.
func TestNotMarkedLivepatch(t *testing.T) {
	data, err := readFixture("livepatch-sample.ko")
	require.NoError(t, err)
	m, err := Parse("sample.ko", data)
	require.NoError(t, err)
	require.True(t, m.Livepatch)
	assert.Empty(t, m.Warnings)

	unmarked := respelt(t, data, "livepatch=Y\x00", "livepatcX=Y")
	m, err = Parse("unmarked.ko", unmarked)
	require.NoError(t, err)
	assert.False(t, m.Livepatch)
	assert.Empty(t, m.Warnings)
	ix, err := kallsyms.Parse("k", strings.NewReader("ffffffff81000000 T vfs_read\n"), kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	require.NotNil(t, res.LoadErr)
	assert.Equal(t, "not_marked_livepatch", res.LoadErr.Kind())
	assert.Equal(t, "module livepatch_sample is not marked as a livepatch module", res.LoadErr.Kernel)
	assert.False(t, res.OK(false))
	// klp-patch.ko unmarked: no livepatch section left, but its init
	// calls klp_enable_patch(), so its klp_patch is read, and refused.
	kp, err := readFixture("klp-patch.o")
	require.NoError(t, err)
	km, err := Parse("klp-patch.o", respelt(t, kp, "livepatch=Y\x00", "livepatcX=Y"))
	require.NoError(t, err)
	assert.Equal(t, FuncsStatic, km.FuncSource)
	require.NotNil(t, km.notMarked)
	assert.Equal(t, "not_marked_livepatch", km.notMarked.Kind())

	m, err = Parse("marked-n.ko", respelt(t, data, "livepatch=Y\x00", "livepatch=N"))
	require.NoError(t, err)
	assert.Nil(t, m.Resolve(ix, ResolveOptions{}).LoadErr, "is_livepatch_module(): the key is there")

	obj, err := readFixture("patch.o")
	require.NoError(t, err)
	out, err := Convert("patch.o", obj, sampleSymbols)
	require.NoError(t, err)
	m, err = Parse("patch.ko", out)
	require.NoError(t, err)
	assert.Equal(t, FormatKLP, m.Format)
	assert.Empty(t, m.Warnings)

	// The object before convert is a livepatch module's (livepatch=Y),
	// which may need no livepatch relocations at all: no warning. An
	// ordinary object has nothing for livepatch to resolve.
	m, err = Parse("patch.o", obj)
	require.NoError(t, err)
	assert.Equal(t, FormatNone, m.Format)
	assert.Empty(t, m.Warnings)
	plain, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o"))
	require.NoError(t, err)
	m, err = Parse("got.o", plain)
	require.NoError(t, err)
	assert.Equal(t, FormatNone, m.Format)
	require.Len(t, m.Warnings, 1)
	assert.Contains(t, m.Warnings[0], "not a livepatch module: no livepatch relocations")
}

// TestBuiltIn: a deferred object whose symbols vmlinux has looks built in
// (its relocations would never apply); one whose symbols vmlinux lacks,
// even one of them, is a module not loaded.
func TestBuiltIn(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/kallsyms/example.txt"))
	require.NoError(t, err)
	var vmlinuxOnly []byte // the example as a System.map would list it: no module
	for line := range bytes.Lines(example) {
		if !bytes.Contains(line, []byte("\t[")) {
			vmlinuxOnly = append(vmlinuxOnly, line...)
		}
	}
	index := func(text string) *kallsyms.Index {
		ix, err := kallsyms.Parse("k", strings.NewReader(text), kallsyms.Options{})
		require.NoError(t, err)
		return ix
	}
	sample, err := Open(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	kp, err := Open(fixture("kpatch-sample.ko"))
	require.NoError(t, err)

	for _, tc := range []struct {
		name     string
		m        *Module
		kernel   string
		deferred []string
		want     []BuiltIn
	}{
		{"xfs a module, not loaded", sample, string(example), []string{"xfs"}, nil},
		{"xfs built in", sample, string(example) + "ffffffff81400000 t xfs_iget\n", []string{"xfs"},
			[]BuiltIn{{Object: "xfs", Names: []string{"xfs_iget"}}}},
		// A System.map lists no module: ext4 built in, xfs a module.
		{"System.map, ext4 built in", sample, string(vmlinuxOnly) + "ffffffff81500000 t ext4_read_inode_bitmap\n", []string{"ext4", "xfs"},
			[]BuiltIn{{Object: "ext4", Names: []string{"ext4_read_inode_bitmap"}}}},
		{"kpatch, xfs built in", kp, string(example) + "ffffffff81400000 t xfs_iget\n", []string{"xfs"},
			[]BuiltIn{{Object: "xfs", Names: []string{"xfs_iget"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.m.Resolve(index(tc.kernel), ResolveOptions{})
			assert.Equal(t, tc.deferred, res.DeferredObjects)
			assert.Equal(t, tc.want, res.BuiltIn)
			for _, b := range res.BuiltIn {
				for _, r := range res.Results {
					if r.Object == b.Object {
						assert.Equal(t, Deferred, r.Status, "the kernel defers it all the same")
					}
				}
			}
		})
	}

	// Two xfs symbols, and a vmlinux one from the xfs section: vmlinux
	// having one of the two is chance, not a built-in xfs; having both
	// is, and the vmlinux symbol is no evidence either way.
	obj := testelf.X86Calls(".text.fn", elf.R_X86_64_PLT32, "xfs_iget", "xfs_ilock", "vfs_read")
	ko, err := Convert("obj.o", obj, []ConvertSymbol{{Object: "xfs", Name: "xfs_iget"}, {Object: "xfs", Name: "xfs_ilock"}, {Object: "vmlinux", Name: "vfs_read"}})
	require.NoError(t, err)
	two, err := Parse("two.ko", ko)
	require.NoError(t, err)
	one := two.Resolve(index(string(example)+"ffffffff81400000 t xfs_iget\n"), ResolveOptions{})
	assert.Equal(t, []string{"xfs"}, one.DeferredObjects)
	assert.Empty(t, one.BuiltIn, "xfs_ilock is not in vmlinux")
	both := two.Resolve(index(string(example)+"ffffffff81400000 t xfs_iget\nffffffff81400100 t xfs_ilock\n"), ResolveOptions{})
	assert.Equal(t, []BuiltIn{{Object: "xfs", Names: []string{"xfs_iget", "xfs_ilock"}}}, both.BuiltIn)
}

// A patch module without .gnu.linkonce.this_module (an object converted
// without the NAME.mod.o kbuild links in) is one the module loader
// refuses on every kernel. The fixtures have it, as kbuild's modules do.
func TestNoThisModule(t *testing.T) {
	data, err := readFixture("livepatch-sample.ko")
	require.NoError(t, err)
	kernel, err := kallsyms.Parse("k", strings.NewReader("ffffffff81000000 T start_kernel\nffffffff81000100 T klp_enable_patch\nffffffff81010180 T vfs_read\n"), kallsyms.Options{})
	require.NoError(t, err)
	sample, err := Parse("sample.ko", data)
	require.NoError(t, err)
	require.Nil(t, sample.Resolve(kernel, ResolveOptions{}).LoadErr)

	// The same bytes with the section renamed.
	renamed := respelt(t, data, ".gnu.linkonce.this_module\x00", ".gnu.linkonce.that_module")
	m, err := Parse("bare.ko", renamed)
	require.NoError(t, err)
	assert.Empty(t, m.Warnings, "an error, not a warning")
	require.NotNil(t, m.noModuleStruct)
	res := m.Resolve(kernel, ResolveOptions{})
	require.NotNil(t, res.LoadErr)
	require.ErrorIs(t, res.LoadErr, ErrNoModuleStruct)
	assert.Equal(t, "no_module_struct", res.LoadErr.Kind())
	assert.Equal(t, "livepatch_sample: No module found in object", res.LoadErr.Kernel)
	assert.Contains(t, res.LoadErr.Hint, "kbuild links livepatch_sample.mod.o into every module")
	assert.False(t, res.OK(false))
	// The loader's refusal comes before klp_enable_patch()'s.
	m, err = Parse("bare-unmarked.ko", respelt(t, renamed, "livepatch=Y\x00", "livepatcX=Y"))
	require.NoError(t, err)
	require.NotNil(t, m.notMarked)
	require.ErrorIs(t, m.Resolve(kernel, ResolveOptions{}).LoadErr, ErrNoModuleStruct)

	// An object without .modinfo is not told: kbuild has still to link
	// it (with its .mod.o, which brings both).
	obj, err := readFixture("kpatch-sample.ko")
	require.NoError(t, err)
	m, err = Parse("kpatch.ko", obj)
	require.NoError(t, err)
	assert.Nil(t, m.noModuleStruct)
}

// TestUnanswered: a System.map lists no module, so it cannot say whether
// xfs is loaded when a patch whose .klp.rela.vmlinux section uses an
// xfs symbol loads: not an error, but deferred and said so (Unanswered);
// with xfs's file, its symbols are checked; a kallsyms that lists
// modules, but not xfs, answers: the kernel's error.
func TestUnanswered(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 16})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=fix\x00livepatch=Y\x00"), Addralign: 1})
	b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
	for _, name := range []string{"xfs_iget", "xfs_no_such_thing"} {
		sym := b.AddSymbol(elfobj.BuildSymbol{Name: ".klp.sym.xfs." + name + ",0", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(SHNLivepatch)})
		i := b.AddRelocs(".klp.rela.vmlinux..text."+name, true, text, []elfobj.Reloc{{Offset: 1, Sym: sym, Type: uint32(elf.R_X86_64_PLT32), Addend: -4}})
		b.Sections[i-1].Flags |= elf.SHF_ALLOC | SHFRelaLivepatch
	}
	m, err := Parse("fix.ko", b.Bytes())
	require.NoError(t, err)

	smap, err := kallsyms.Open(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(smap, ResolveOptions{})
	assert.Equal(t, []int{0, 2, 0}, []int{res.Resolved, res.Deferred, res.Errors})
	assert.Equal(t, []string{"xfs"}, res.Unanswered)
	assert.Empty(t, res.DeferredObjects, "the sections are vmlinux's: they do not wait for xfs")
	assert.True(t, res.OK(false))
	assert.False(t, res.OK(true))

	// xfs's file answers for its symbols.
	xm, err := Open(testutil.Corpus(t, "amd64/modules/xfs.ko"))
	require.NoError(t, err)
	xfs, err := NewTarget(xm, true)
	require.NoError(t, err)
	res = m.Resolve(smap, ResolveOptions{Targets: map[string]*Target{"xfs": xfs}})
	assert.Equal(t, []int{0, 1, 1}, []int{res.Resolved, res.Deferred, res.Errors})

	// A kallsyms that lists modules, not xfs: the kernel's answer.
	res = m.Resolve(amd64Index(t), ResolveOptions{})
	assert.Equal(t, 2, res.Errors)
	assert.Empty(t, res.Unanswered)
}

// A symbol is looked up once, but each relocation that fails on it fails
// where it is: its own section and offset (the sample's three relocations
// against jiffies are in three sections).
func TestFailedSymbolPlacePerRelocation(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/kallsyms/example.txt"))
	require.NoError(t, err)
	noJiffies := strings.ReplaceAll(string(example), "ffffffff82a00000 D jiffies\n", "")
	require.NotEqual(t, string(example), noJiffies)
	ix, err := kallsyms.Parse("k", strings.NewReader(noJiffies), kallsyms.Options{})
	require.NoError(t, err)
	m, err := Open(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	var sections []string
	for _, r := range res.Results {
		if r.Err != nil {
			assert.Equal(t, r.Section, r.Err.Section)
			assert.Equal(t, r.Offset, r.Err.Offset)
			assert.Equal(t, r.Index, r.Err.Index)
			sections = append(sections, r.Err.Section)
		}
	}
	assert.Equal(t, []string{".klp.rela.vmlinux..text.livepatch_vfs_read", ".klp.rela.vmlinux..text.livepatch_bitmap", ".klp.rela.vmlinux..text.livepatch_jiffies_addr"}, sections)
}

// TestResolveReuse: a Resolution written into an earlier one's memory
// (ResolveOptions.Reuse) is the one a fresh call makes, kernel after
// kernel, though the kernels answer differently: nothing of the earlier
// kernel's answers is left in it.
func TestResolveReuse(t *testing.T) {
	text, err := os.ReadFile(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"))
	require.NoError(t, err)
	full, err := kallsyms.ParseBytes("full", text, kallsyms.Options{})
	require.NoError(t, err)
	// The other kernel lacks vfs_read and has jiffies elsewhere.
	var lines []string
	for l := range strings.Lines(string(text)) {
		switch {
		case strings.HasSuffix(l, " T vfs_read\n"):
		case strings.HasSuffix(l, " D jiffies\n"):
			lines = append(lines, "ffffffff82a07000 D jiffies\n")
		default:
			lines = append(lines, l)
		}
	}
	other, err := kallsyms.ParseBytes("other", []byte(strings.Join(lines, "")), kallsyms.Options{})
	require.NoError(t, err)

	m, err := Open(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	want := map[*kallsyms.Index]*Resolution{full: m.Resolve(full, ResolveOptions{}), other: m.Resolve(other, ResolveOptions{})}
	require.Equal(t, 0, want[full].Errors)
	require.Equal(t, 1, want[other].Errors, "vfs_read is missing")

	res := m.Resolve(full, ResolveOptions{})
	for _, ix := range []*kallsyms.Index{other, full, other} {
		again := m.Resolve(ix, ResolveOptions{Reuse: res})
		require.Same(t, res, again, "Reuse is returned")
		assert.Equal(t, want[ix].Results, res.Results, ix.Source())
		assert.Equal(t, want[ix].Resolved, res.Resolved)
		assert.Equal(t, want[ix].Errors, res.Errors)
		assert.Equal(t, want[ix].Source, res.Source)
	}
	for _, r := range res.Results {
		if r.Name == "jiffies" {
			assert.Equal(t, uint64(0xffffffff82a07000), r.Address)
		}
	}
}
