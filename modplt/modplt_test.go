// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// small builds a module of machine m with one executable section per
// name, symbols "memset", "memcpy" (undefined) and "local" (in the first
// section), and the relocations rel(section index, symbols) returns.
type smallMod struct {
	b    *elfobj.Builder
	secs map[string]int
	sym  map[string]uint32
}

func newSmall(m elf.Machine, text []byte, names ...string) *smallMod {
	s := &smallMod{b: &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: m}, secs: map[string]int{}, sym: map[string]uint32{}}
	if m == elf.EM_ARM {
		s.b.Class = elf.ELFCLASS32
	}
	if text == nil {
		text = make([]byte, 0x2000)
	}
	for _, n := range names {
		s.secs[n] = s.b.AddSection(elfobj.BuildSection{Name: n, Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: text, Addralign: 4})
	}
	s.b.AddSection(elfobj.BuildSection{Name: ".plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
	s.b.AddSection(elfobj.BuildSection{Name: ".init.plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
	s.sym["local"] = s.b.AddSymbol(elfobj.BuildSymbol{Name: "local", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC), Shndx: uint16(s.secs[names[0]])})
	s.sym["memcpy"] = s.b.AddSymbol(elfobj.BuildSymbol{Name: "memcpy", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	s.sym["memset"] = s.b.AddSymbol(elfobj.BuildSymbol{Name: "memset", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	return s
}

func (s *smallMod) rel(sec string, rs ...elfobj.Reloc) {
	rela := s.b.Class == elf.ELFCLASS64
	prefix := ".rel"
	if rela {
		prefix = ".rela"
	}
	s.b.AddRelocs(prefix+sec, rela, s.secs[sec], rs)
}

func (s *smallMod) count(t *testing.T, o Options) *Counts {
	t.Helper()
	m, err := Parse("small.ko", s.b.Bytes())
	require.NoError(t, err)
	c, err := m.Count(o)
	require.NoError(t, err)
	return c
}

func call26(off uint64, sym uint32) elfobj.Reloc {
	return elfobj.Reloc{Offset: off, Sym: sym, Type: uint32(elf.R_AARCH64_CALL26)}
}

// TestARM64PartitionQuirk is md4.ko's .rela.text: [memset x3, memcpy x2],
// all needing a PLT, memcpy's symbol index below memset's. The partition
// leaves the second memcpy outside the sorted prefix [memcpy memset x3],
// so it is compared with memset and counted again: the kernel counts 3
// where 2 suffice.
func TestARM64PartitionQuirk(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text")
	ms, mc := s.sym["memset"], s.sym["memcpy"]
	s.rel(".text", call26(0, ms), call26(4, ms), call26(8, ms), call26(12, mc), call26(16, mc))
	k := s.count(t, Options{})
	assert.Equal(t, 3, k.Sections[0].PLT)
	assert.Equal(t, 3, k.PLTCore)
	assert.Equal(t, uint64(4*12), k.PLTSizeCore) // (n+1) * 12
	assert.Equal(t, uint64(12), k.PLTSizeInit)
	o := s.count(t, Options{Mode: ModeOptimal})
	assert.Equal(t, 2, o.PLTCore)

	// With memset's index below memcpy's, the left-out memcpy equals the
	// prefix's largest entry and is deduplicated.
	s = newSmall(elf.EM_AARCH64, nil, ".text")
	s.sym["memset2"] = s.b.AddSymbol(elfobj.BuildSymbol{Name: "memset2", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	s.rel(".text", call26(0, s.sym["memset"]), call26(4, s.sym["memcpy"]), call26(8, s.sym["memset2"]), call26(12, s.sym["memset2"]))
	assert.Equal(t, 3, s.count(t, Options{}).PLTCore)

	// One relocation that needs no PLT (a call into .text itself) ends
	// the partition on it, the prefix holds all five, and the kernel
	// counts 2.
	s = newSmall(elf.EM_AARCH64, nil, ".text")
	s.rel(".text", call26(0, ms), call26(4, ms), call26(8, ms), call26(12, mc), call26(16, mc), call26(20, s.sym["local"]))
	k = s.count(t, Options{})
	assert.Equal(t, 2, k.PLTCore)
	assert.Equal(t, 1, k.Totals.SameSection)
	assert.Equal(t, 5, k.Totals.Candidates)
}

// TestARM64Addends: non-zero addends always take their own slot in the
// kernel; optimal mode shares equal (symbol, addend) pairs across
// sections of one region, never across regions.
func TestARM64Addends(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text", ".text.unlikely", ".init.text")
	ms := s.sym["memset"]
	a := func(off uint64, add int64) elfobj.Reloc { r := call26(off, ms); r.Addend = add; return r }
	s.rel(".text", a(0, 8), a(4, 8), a(8, 0), elfobj.Reloc{Offset: 12, Sym: ms, Type: uint32(elf.R_AARCH64_ABS64)})
	s.rel(".text.unlikely", a(0, 8), a(4, 0))
	s.rel(".init.text", a(0, 0), a(4, 0))
	k := s.count(t, Options{})
	// .text: 8, 8, 0 -> 3 (no dedupe of non-zero addends); .text.unlikely:
	// 2; .init.text: 1.
	assert.Equal(t, []int{3, 2, 1}, []int{k.Sections[0].PLT, k.Sections[1].PLT, k.Sections[2].PLT})
	assert.Equal(t, []int{5, 1}, []int{k.PLTCore, k.PLTInit})
	assert.Equal(t, 2, k.Sections[0].NonZeroAddend)
	assert.Equal(t, Init, k.Sections[2].Region)
	o := s.count(t, Options{Mode: ModeOptimal})
	// core: memset+8, memset+0; init: memset+0.
	assert.Equal(t, []int{2, 1}, []int{o.PLTCore, o.PLTInit})
	assert.Equal(t, []int{2, 0}, []int{o.Sections[0].PLT, o.Sections[1].PLT})
}

// TestARM64Erratum843419: an ADRP whose offset has bits [11:3] all set
// needs a veneer slot (2 << ffz(off|7) = 8 KiB > 4 KiB); others only raise
// the section's alignment; then one slot of slack per 341.
func TestARM64Erratum843419(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text")
	adrp := func(off uint64) elfobj.Reloc {
		return elfobj.Reloc{Offset: off, Sym: s.sym["memset"], Type: uint32(elf.R_AARCH64_ADR_PREL_PG_HI21)}
	}
	// 0xff8|7 = 0xfff: ffz 12 -> veneer. 0x1ff8: bits [11:3] set -> veneer.
	// 0x10|7 = 0x17: ffz 3 -> align 16. 0x7f8|7 = 0x7ff: ffz 11 -> align 4096.
	s.rel(".text", adrp(0xff8), adrp(0x1ff8), adrp(0x10), adrp(0x7f8), call26(0x20, s.sym["memcpy"]))
	k := s.count(t, Options{Erratum843419: true})
	sc := k.Sections[0]
	assert.Equal(t, 2, sc.Veneers)
	assert.Equal(t, uint64(4096), sc.Align)
	assert.Equal(t, 1+2+1, sc.PLT) // branch, veneers, ceil(3/341) slack
	k = s.count(t, Options{})
	assert.Equal(t, 1, k.PLTCore)
	assert.Zero(t, k.Sections[0].Veneers)
}

// TestNoModuleUnload: without CONFIG_MODULE_UNLOAD, .exit sections are
// init (module_init_layout_section()).
func TestNoModuleUnload(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text", ".exit.text")
	s.rel(".exit.text", call26(0, s.sym["memset"]))
	k := s.count(t, Options{})
	assert.Equal(t, []int{1, 0}, []int{k.PLTCore, k.PLTInit})
	k = s.count(t, Options{NoModuleUnload: true})
	assert.Equal(t, []int{0, 1}, []int{k.PLTCore, k.PLTInit})
}

// TestARMHeapsortOrderDecides: three CALLs to one symbol, two with a zero
// addend (imm24 = 0xfffffe, the -8 PC bias) and one without. lib/sort.c
// turns [a b c] of equal keys into [b c a] (internal/ksort's test), and
// count_plts() dedupes only a zero-addend entry that follows a zero-addend
// one: [z z nz] sorts to [z nz z] and counts 3; [nz z z] sorts to
// [z z nz] and counts 2.
func TestARMHeapsortOrderDecides(t *testing.T) {
	for _, tc := range []struct {
		insns []uint32
		want  int
	}{
		{[]uint32{0xebfffffe, 0xebfffffe, 0xeb000001}, 3},
		{[]uint32{0xeb000001, 0xebfffffe, 0xebfffffe}, 2},
		{[]uint32{0xebfffffe, 0xebfffffe, 0xebfffffe}, 1},
		{[]uint32{0xeb000001, 0xeb000001, 0xeb000001}, 3},
	} {
		text := make([]byte, 16)
		for i, in := range tc.insns {
			binary.LittleEndian.PutUint32(text[4*i:], in)
		}
		s := newSmall(elf.EM_ARM, text, ".text")
		var rs []elfobj.Reloc
		for i := range tc.insns {
			rs = append(rs, elfobj.Reloc{Offset: uint64(4 * i), Sym: s.sym["memset"], Type: uint32(elf.R_ARM_CALL)})
		}
		s.rel(".text", rs...)
		k := s.count(t, Options{})
		assert.Equal(t, tc.want+armFixedPLTs, k.PLTCore, "%x", tc.insns)
		assert.Equal(t, uint64(128), k.PLTSizeCore)
		o := s.count(t, Options{Mode: ModeOptimal})
		distinct := map[uint32]bool{}
		for _, in := range tc.insns {
			distinct[in] = true
		}
		assert.Equal(t, len(distinct)+armFixedPLTs, o.PLTCore, "%x", tc.insns)
	}
}

// TestARMThumbAddends decodes Thumb-2 BL addends: 0xf7ff 0xfffe is -4
// (zero addend, the Thumb PC bias); 0xf000 0xf800 is 0.
func TestARMThumbAddends(t *testing.T) {
	text := []byte{0xff, 0xf7, 0xfe, 0xff, 0x00, 0xf0, 0x00, 0xf8, 0xff, 0xf7, 0xfe, 0xbf}
	s := newSmall(elf.EM_ARM, text, ".text")
	m, err := Parse("t.ko", s.b.Bytes())
	require.NoError(t, err)
	for _, tc := range []struct {
		off  uint64
		typ  elf.R_ARM
		add  int64
		zero bool
	}{{0, elf.R_ARM_THM_PC22, -4, true}, {4, elf.R_ARM_THM_JUMP24, 0, false}, {8, elf.R_ARM_THM_JUMP24, -4, true}} {
		a, z, err := armAddend(m, text, elfobj.Reloc{Offset: tc.off, Type: uint32(tc.typ)})
		require.NoError(t, err)
		assert.Equal(t, tc.add, a, "offset %d", tc.off)
		assert.Equal(t, tc.zero, z, "offset %d", tc.off)
	}
	a, z, err := armAddend(m, []byte{0xfe, 0xff, 0xff, 0xeb}, elfobj.Reloc{Type: uint32(elf.R_ARM_CALL)})
	require.NoError(t, err)
	assert.Equal(t, int64(-8), a)
	assert.True(t, z)
}

func TestBadInput(t *testing.T) {
	// A branch whose instruction lies past the end of its section.
	s := newSmall(elf.EM_ARM, make([]byte, 8), ".text")
	s.rel(".text", elfobj.Reloc{Offset: 6, Sym: s.sym["memset"], Type: uint32(elf.R_ARM_CALL)})
	m, err := Parse("bad.ko", s.b.Bytes())
	require.NoError(t, err)
	_, err = m.Count(Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "bad.ko: section .rel.text: relocation 0")
	assert.Contains(t, err.Error(), "past the end of the section")

	// A symbol index past the table.
	s = newSmall(elf.EM_AARCH64, nil, ".text")
	s.rel(".text", call26(0, 99))
	m, err = Parse("bad.ko", s.b.Bytes())
	require.NoError(t, err)
	_, err = m.Count(Options{})
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "symbol index 99 past the symbol table")

	// No .plt: counted, with the kernel's refusal as a warning.
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_AARCH64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8)})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "ext", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{call26(0, ext)})
	m, err = Parse("noplt.ko", b.Bytes())
	require.NoError(t, err)
	c, err := m.Count(Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, c.PLTCore)
	require.Len(t, c.Warnings, 1)
	assert.Contains(t, c.Warnings[0], "module PLT section(s) missing")
	// With .plt and .init.plt but no .text.ftrace_trampoline: the refusal
	// of module_finalize(), after the relocations; with it, none.
	for _, n := range []string{".plt", ".init.plt"} {
		b.AddSection(elfobj.BuildSection{Name: n, Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
	}
	m, err = Parse("notramp.ko", b.Bytes())
	require.NoError(t, err)
	c, err = m.Count(Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"no .text.ftrace_trampoline section: a kernel with dynamic ftrace refuses the module (module_finalize(), without a message); it was not linked with the kernel's module.lds"}, c.Warnings)
	b.AddSection(elfobj.BuildSection{Name: ".text.ftrace_trampoline", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
	m, err = Parse("tramp.ko", b.Bytes())
	require.NoError(t, err)
	c, err = m.Count(Options{})
	require.NoError(t, err)
	assert.Empty(t, c.Warnings)

	// Unsupported machine, wrong class, not relocatable, not ELF.
	b.Machine = elf.EM_RISCV
	_, err = Parse("riscv.ko", b.Bytes())
	require.ErrorIs(t, err, ErrUnsupportedArch)
	assert.Contains(t, err.Error(), "EM_RISCV")
	// ppc64 ELFv1 (big-endian, function descriptors): not linked.
	b.Machine, b.Order = elf.EM_PPC64, binary.BigEndian
	_, err = Parse("ppc64.ko", b.Bytes())
	require.ErrorIs(t, err, ErrUnsupportedArch)
	assert.Contains(t, err.Error(), "ELFv1")
	b.Order = binary.LittleEndian
	b.Machine = elf.EM_ARM
	_, err = Parse("arm64bit.ko", b.Bytes())
	require.ErrorIs(t, err, ErrUnsupportedArch)
	exe := b.Bytes()
	binary.LittleEndian.PutUint16(exe[16:], uint16(elf.ET_EXEC))
	_, err = Parse("exe", exe)
	require.ErrorIs(t, err, ErrNotRelocatable)
	_, err = Parse("junk", []byte("hello"))
	require.True(t, errors.Is(err, ErrMalformed))
}

func TestParseMode(t *testing.T) {
	m, err := ParseMode("optimal")
	require.NoError(t, err)
	assert.Equal(t, ModeOptimal, m)
	_, err = ParseMode("fast")
	assert.ErrorContains(t, err, `unknown mode "fast"`)
}

// license_is_gpl_compatible(): exactly these six strings.
func TestGPLCompatible(t *testing.T) {
	for license, want := range map[string]bool{
		"GPL": true, "GPL v2": true, "GPL and additional rights": true,
		"Dual BSD/GPL": true, "Dual MIT/GPL": true, "Dual MPL/GPL": true,
		"": false, "Proprietary": false, "gpl": false, "GPLv2": false, "Dual BSD/GPL ": false,
	} {
		assert.Equal(t, want, (&Module{License: license}).GPLCompatible(), "%q", license)
	}
}

// TestInitSection: module_init_layout_section() with CONFIG_MODULE_UNLOAD,
// and arm's module_init_section() override.
func TestInitSection(t *testing.T) {
	for _, c := range []struct {
		m    elf.Machine
		name string
		init bool
	}{
		{elf.EM_X86_64, ".init.text", true},
		{elf.EM_X86_64, ".init.data", true},
		{elf.EM_X86_64, ".exit.text", false},
		{elf.EM_X86_64, ".text", false},
		{elf.EM_X86_64, ".ARM.exidx.init.text", false},
		{elf.EM_ARM, ".ARM.exidx.init.text", true},
		{elf.EM_ARM, ".ARM.extab.init.text", true},
		{elf.EM_ARM, ".ARM.exidx", false},
		{elf.EM_AARCH64, ".init.text", true},
		{elf.EM_RISCV, ".init.text", true}, // the generic rule
		{elf.EM_RISCV, ".text.init", false},
	} {
		if got := InitSection(c.m, c.name); got != c.init {
			t.Errorf("InitSection(%v, %q) = %v, want %v", c.m, c.name, got, c.init)
		}
	}
}

// TestNoRandomizeBase: an arm64 kernel without KASLR counts no branch
// (count_plts() and partition_branch_plt_relas() return early) but still
// the erratum 843419 veneers; the branch statistics are unchanged, and
// other architectures ignore the option.
func TestNoRandomizeBase(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text", ".init.text")
	adrp := elfobj.Reloc{Offset: 0xff8, Sym: s.sym["memset"], Type: uint32(elf.R_AARCH64_ADR_PREL_PG_HI21)}
	s.rel(".text", call26(0, s.sym["memset"]), call26(4, s.sym["memcpy"]), call26(8, s.sym["memcpy"]), adrp)
	s.rel(".init.text", call26(0, s.sym["memset"]))
	k := s.count(t, Options{})
	assert.Equal(t, []int{2, 1}, []int{k.PLTCore, k.PLTInit})
	assert.False(t, k.NoRandomizeBase)
	for _, mode := range []Mode{ModeKernel, ModeOptimal} {
		n := s.count(t, Options{Mode: mode, NoRandomizeBase: true})
		assert.True(t, n.NoRandomizeBase)
		assert.Equal(t, []int{0, 0}, []int{n.PLTCore, n.PLTInit}, "%v", mode)
		assert.Equal(t, []uint64{arm64PLTEntry, arm64PLTEntry}, []uint64{n.PLTSizeCore, n.PLTSizeInit}, "%v: the spare slot only", mode)
		assert.Equal(t, k.Totals.Branches, n.Totals.Branches)
		assert.Equal(t, k.Totals.Undef, n.Totals.Undef)
		assert.Zero(t, n.Totals.Candidates)
		// The erratum's veneer (ADRP at 0xff8) and its slack remain.
		e := s.count(t, Options{Mode: mode, NoRandomizeBase: true, Erratum843419: true})
		assert.Equal(t, 1, e.Totals.Veneers)
		assert.Equal(t, []int{1 + 1, 0}, []int{e.PLTCore, e.PLTInit}, "%v: veneer and slack", mode)
	}

	a := newSmall(elf.EM_ARM, nil, ".text")
	a.rel(".text", elfobj.Reloc{Offset: 0, Sym: a.sym["memset"], Type: uint32(elf.R_ARM_CALL)})
	plain, without := a.count(t, Options{}), a.count(t, Options{NoRandomizeBase: true})
	assert.False(t, without.NoRandomizeBase, "arm64 only")
	assert.Equal(t, plain.PLTCore, without.PLTCore)
}

// TestNoRandomizeBaseWithoutPLTSections: a kernel without KASLR may
// lack ARM64_MODULE_PLTS (RANDOMIZE_BASE and ARM64_ERRATUM_843419 select
// it), and its modules then come without .plt sections (module.lds.h adds
// them only with it): no warning then, unlike with KASLR, or with one of
// the two sections only.
func TestNoRandomizeBaseWithoutPLTSections(t *testing.T) {
	for _, keep := range [][]string{nil, {".plt"}} {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_AARCH64}
		text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 4})
		for _, name := range keep {
			b.AddSection(elfobj.BuildSection{Name: name, Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
		}
		memset := b.AddSymbol(elfobj.BuildSymbol{Name: "memset", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{call26(0, memset)})
		m, err := Parse("noplt.ko", b.Bytes())
		require.NoError(t, err)
		with, err := m.Count(Options{})
		require.NoError(t, err)
		assert.Len(t, with.Warnings, 1, "%v", keep)
		without, err := m.Count(Options{NoRandomizeBase: true})
		require.NoError(t, err)
		if keep != nil {
			assert.Len(t, without.Warnings, 1, "one PLT section only: from no module.lds")
			continue
		}
		assert.Empty(t, without.Warnings)
		// Linked, a call out of a BL's reach overflows, as that kernel's
		// apply_relocate_add() says; within it, the module links.
		const base = 0xffff800010000000
		for _, tc := range []struct {
			target uint64
			err    error
		}{{base - 64<<20, nil}, {base - 256<<20, ErrOutOfRange}} {
			img, err := m.Link(LinkOptions{Base: base, NoRandomizeBase: true, Resolve: func(string) (uint64, bool) { return tc.target, true }})
			require.NoError(t, err)
			if tc.err == nil {
				assert.Empty(t, img.Errors)
				continue
			}
			require.Len(t, img.Errors, 1)
			assert.ErrorIs(t, img.Errors[0], tc.err)
			assert.Contains(t, img.Errors[0].Error(), "a module without PLT sections (no ARM64_MODULE_PLTS) has no PLT")
		}
	}
}
