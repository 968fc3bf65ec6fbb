// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// ppc64 addresses for the stub fixtures: modules at VMALLOC_START, the
// kernel image at 0xc000000000000000 (far out of a bl's reach, as it
// always is), its TOC and ftrace entry points.
const (
	ppcKernelTOC   = 0xc000000001f0a100
	ppcMcount      = 0xc000000000071234
	ppcFtraceCall  = 0xc000000000071300
	ppcFtraceRegs  = 0xc000000000071400
	ppcExtFn       = 0xc000000000123450
	ppcExtOther    = 0xc000000000123600
	ppcExtData     = 0xc000000002345678
	ppcExtNotify   = 0xc000000000200000
	ppcExtCompute  = 0xc000000000200100
	ppcExtCounter  = 0xc000000002000000
	ppcExtTable    = 0xc000000002000100
	ppcStubInsnLen = 4
)

func ppcResolvers() (Resolver, Resolver) {
	return mapResolver(map[string]uint64{
			"_mcount": ppcMcount, "ext_fn": ppcExtFn, "ext_other": ppcExtOther, "ext_data": ppcExtData,
			"ext_notify": ppcExtNotify, "ext_compute": ppcExtCompute, "ext_counter": ppcExtCounter, "ext_table": ppcExtTable,
		}), mapResolver(map[string]uint64{
			".TOC.": ppcKernelTOC, "ftrace_caller": ppcFtraceCall, "ftrace_regs_caller": ppcFtraceRegs,
		})
}

// linkPPC links m against ppcResolvers' symbols, every relocation
// applied.
func linkPPC(t *testing.T, m *Module) *Image {
	t.Helper()
	resolve, kernel := ppcResolvers()
	img, err := m.Link(LinkOptions{Resolve: resolve, Kernel: kernel})
	require.NoError(t, err)
	for _, e := range img.Errors {
		t.Errorf("%v", e)
	}
	require.Empty(t, img.Unresolved)
	return img
}

// ppcWord is the instruction at addr, which sec holds.
func ppcWord(t *testing.T, sec *Placed, addr uint64) uint32 {
	t.Helper()
	require.GreaterOrEqual(t, addr, sec.Addr)
	require.LessOrEqual(t, addr+4, sec.Addr+uint64(len(sec.Data)))
	return binary.LittleEndian.Uint32(sec.Data[addr-sec.Addr:])
}

// ppcHiLo is what an addis/addi pair (or addis and a D-form load) adds:
// the high half shifted, plus the low half sign-extended.
func ppcHiLo(hi, lo uint32) uint64 {
	return uint64(int64(int16(hi))<<16 + int64(int16(lo)))
}

// ppcBranch is where the I-form branch at addr goes.
func ppcBranch(t *testing.T, sec *Placed, addr uint64) uint64 {
	t.Helper()
	insn := ppcWord(t, sec, addr)
	require.Equal(t, uint32(18), insn>>26, "%#x: not an I-form branch (%08x)", addr, insn)
	return addr + uint64(int64(int32(insn<<6)>>6)&^3)
}

// checkPPCStub: the stub at addr finds itself from r2 (addis r11,r2;
// addi r11,r11), saves r2, loads its funcdata (ld r12,32(r11)) and
// branches there; funcdata is target.
func checkPPCStub(t *testing.T, stubs *Placed, addr, r2, target uint64) {
	t.Helper()
	require.Zero(t, (addr-stubs.Addr)%ppc64StubEntry, "%#x is not a stub's start", addr)
	w := func(k uint64) uint32 { return ppcWord(t, stubs, addr+ppcStubInsnLen*k) }
	assert.Equal(t, uint32(0x3d620000), w(0)&0xffff0000, "addis r11,r2")
	assert.Equal(t, uint32(0x396b0000), w(1)&0xffff0000, "addi r11,r11")
	assert.Equal(t, addr, r2+ppcHiLo(w(0), w(1)), "r11 = the stub")
	assert.Equal(t, []uint32{0xf8410018, 0xe98b0020, 0x7d8903a6, 0x4e800420, 0, ppc64StubMagic}, []uint32{w(2), w(3), w(4), w(5), w(6), w(7)},
		"std r2,24(r1); ld r12,32(r11); mtctr r12; bctr; (unused); STUB_MAGIC")
	assert.Equal(t, target, binary.LittleEndian.Uint64(stubs.Data[addr-stubs.Addr+32:]), "funcdata")
}

// checkPPCFtraceStub: an mprofile stub loads the kernel's TOC from the
// paca (ld r12,16(r13)) and adds the target's offset from it.
func checkPPCFtraceStub(t *testing.T, stubs *Placed, addr, target uint64) {
	t.Helper()
	require.Zero(t, (addr-stubs.Addr)%ppc64StubEntry, "%#x is not a stub's start", addr)
	w := func(k uint64) uint32 { return ppcWord(t, stubs, addr+ppcStubInsnLen*k) }
	assert.Equal(t, uint32(0xe98d0010), w(0), "ld r12,16(r13): paca->kernel_toc")
	assert.Equal(t, uint32(0x3d8c0000), w(1)&0xffff0000, "addis r12,r12")
	assert.Equal(t, uint32(0x398c0000), w(2)&0xffff0000, "addi r12,r12")
	assert.Equal(t, target, ppcKernelTOC+ppcHiLo(w(1), w(2)))
	assert.Equal(t, []uint32{0x7d8903a6, 0x4e800420, ppc64StubMagic}, []uint32{w(3), w(4), w(7)})
	assert.Equal(t, target, binary.LittleEndian.Uint64(stubs.Data[addr-stubs.Addr+32:]), "funcdata")
}

// TestPPC64Stubs links testdata/modplt/link/ppc64le-stubs.o (every
// relocation type the powerpc loader handles through a stub or r2) and
// checks what each instruction reaches: external calls through stubs
// handed out in the kernel's order (each RELA section sorted by r_info
// and addend, descending; the ftrace stubs after the module's
// relocations), the nop after each call turned into ld r2,24(r1),
// TOC-relative accesses from my_r2(), the large-model prologue
// rewritten.
func TestPPC64Stubs(t *testing.T) {
	m, err := Open(linkFixture("ppc64le-stubs.o"))
	require.NoError(t, err)
	c, err := m.Count(Options{})
	require.NoError(t, err)
	// .rela.text's REL24s: ext_other, ext_fn+8, ext_fn (twice), _mcount:
	// 4, plus the terminator and the two ftrace stubs.
	assert.Equal(t, 7, c.PLTCore)
	assert.Equal(t, uint64(7*ppc64StubEntry), c.PLTSizeCore)
	assert.Equal(t, 3, c.FixedPLTs)

	img := linkPPC(t, m)
	assert.Equal(t, uint64(64<<10), img.PageSize, "Debian's ppc64el pages")
	text, stubs, toc, data := img.Section(".text"), img.Section(".stubs"), img.Section(".toc"), img.Section(".data")
	require.NotNil(t, stubs)
	assert.Equal(t, uint64(ppc64VmallocStart), text.Addr)
	assert.Equal(t, uint64(7*ppc64StubEntry), stubs.Size)
	assert.Equal(t, 6, img.PLTCoreUsed)
	assert.Equal(t, 7, img.PLTCoreMax)
	r2 := toc.Addr&^0xff + 0x8000
	stub := func(i uint64) uint64 { return stubs.Addr + i*ppc64StubEntry }

	g := text.Addr
	// addis r2,r12,.TOC.-g@ha; addi r2,r2,.TOC.-g@l: r2 from the global entry.
	assert.Equal(t, r2, g+ppcHiLo(ppcWord(t, text, g), ppcWord(t, text, g+4)), ".TOC.")
	// The stubs in the kernel's order: ext_other (the highest r_info),
	// ext_fn+8, ext_fn, _mcount; then ftrace_caller, ftrace_regs_caller.
	checkPPCStub(t, stubs, stub(0), r2, ppcExtOther)
	checkPPCStub(t, stubs, stub(1), r2, ppcExtFn+8)
	checkPPCStub(t, stubs, stub(2), r2, ppcExtFn)
	checkPPCFtraceStub(t, stubs, stub(3), ppcMcount)
	checkPPCFtraceStub(t, stubs, stub(4), ppcFtraceCall)
	checkPPCFtraceStub(t, stubs, stub(5), ppcFtraceRegs)
	assert.True(t, isZero(stubs.Data[5*ppc64StubEntry+ppc64StubEntry:]), "the last stub ends the search: zero")

	assert.Equal(t, stub(3), ppcBranch(t, text, g+0x0c), "bl _mcount")
	assert.Equal(t, stub(2), ppcBranch(t, text, g+0x10), "bl ext_fn")
	assert.Equal(t, uint32(ppcLdTOC), ppcWord(t, text, g+0x14), "the nop after it: ld r2,24(r1)")
	assert.Equal(t, stub(2), ppcBranch(t, text, g+0x18), "bl ext_fn: the same stub")
	assert.Equal(t, uint32(ppcLdTOC), ppcWord(t, text, g+0x1c))
	assert.Equal(t, stub(1), ppcBranch(t, text, g+0x20), "bl ext_fn+8")
	assert.Equal(t, uint32(ppcLdTOC), ppcWord(t, text, g+0x24))
	// addis r9,r2,.LC0@toc@ha; ld r9,.LC0@toc@l(r9)
	assert.Equal(t, toc.Addr, r2+ppcHiLo(ppcWord(t, text, g+0x28), ppcWord(t, text, g+0x2c)), "TOC16_HA + TOC16_LO_DS")
	assert.Equal(t, toc.Addr+8, r2+ppcHiLo(0, ppcWord(t, text, g+0x30)), "TOC16_LO")
	assert.Equal(t, toc.Addr, r2+ppcHiLo(0, ppcWord(t, text, g+0x34)), "TOC16_DS")
	assert.Equal(t, uint32(0xe8000000), ppcWord(t, text, g+0x34)&0xfc000003, "ld keeps its DS form bits")
	assert.Equal(t, toc.Addr+8, r2+ppcHiLo(0, ppcWord(t, text, g+0x38)), "TOC16")
	assert.Equal(t, uint32(ppcNop), ppcWord(t, text, g+0x3c), "TOCSAVE: nothing")
	assert.Equal(t, stub(0), ppcBranch(t, text, g+0x40), "b ext_other")
	assert.Equal(t, uint32(0x4e800020), ppcWord(t, text, g+0x44), "a sibling call's next instruction stays (blr)")
	// big: ld r2,-8(r12); add r2,r2,r12 -> addis r2,r12; addi r2,r2.
	big := g + 0x48
	hi, lo := ppcWord(t, text, big), ppcWord(t, text, big+4)
	assert.Equal(t, uint32(ppcAddisR2), hi&0xffff0000)
	assert.Equal(t, uint32(ppcAddiR2), lo&0xffff0000)
	assert.Equal(t, r2, big+ppcHiLo(hi, lo), "ENTRY: r2 from r12")

	assert.Equal(t, uint64(ppcExtData), binary.LittleEndian.Uint64(toc.Data), ".toc: ADDR64")
	assert.Equal(t, r2, binary.LittleEndian.Uint64(data.Data), "R_PPC64_TOC")

	// Without the kernel's symbols the _mcount stub cannot be written,
	// and the ftrace stubs are not made.
	resolve, _ := ppcResolvers()
	img, err = m.Link(LinkOptions{Resolve: resolve})
	require.NoError(t, err)
	require.Len(t, img.Errors, 1)
	assert.ErrorIs(t, img.Errors[0], ErrUnresolved)
	assert.Equal(t, "_mcount", img.Errors[0].Symbol)
	assert.Equal(t, 2, img.Errors[0].Index, "its index in the file, not in the kernel's sorted order")
	assert.Contains(t, img.Errors[0].Error(), "the kernel's TOC (.TOC.) is not in its symbols")
	assert.Equal(t, 3, img.PLTCoreUsed)
}

// TestPPC64CFix links cfix.c as Kbuild builds a ppc64le module
// (-mcmodel=medium, -mprofile-kernel) and checks every call: the local
// one straight to helper's local entry, the external ones through stubs
// with r2 restored after them, _mcount through the kernel's TOC; and its
// data through r2. The kernel counts every REL24 (the local call too);
// optimal mode only the external targets.
func TestPPC64CFix(t *testing.T) {
	m, err := Open(linkFixture("cfix-ppc64le.o"))
	require.NoError(t, err)
	c, err := m.Count(Options{})
	require.NoError(t, err)
	assert.Equal(t, 4+3, c.PLTCore, "_mcount, ext_notify, helper, ext_compute")
	opt, err := m.Count(Options{Mode: ModeOptimal})
	require.NoError(t, err)
	assert.Equal(t, 3+3, opt.PLTCore, "_mcount, ext_notify, ext_compute")

	img := linkPPC(t, m)
	text, stubs, toc := img.Section(".text"), img.Section(".stubs"), img.Section(".toc")
	r2 := toc.Addr&^0xff + 0x8000
	f := m.f
	addrOf := func(name string) uint64 {
		for i := range f.Symbols {
			if f.Symbols[i].Name == name {
				v, ok := img.SymbolAddr(uint32(i))
				require.True(t, ok)
				return v
			}
		}
		t.Fatalf("no symbol %s", name)
		return 0
	}
	helper := addrOf("helper")
	targets := map[string]uint64{"_mcount": ppcMcount, "ext_notify": ppcExtNotify, "ext_compute": ppcExtCompute}
	rt, err := f.RelocTable(f.SectionByName(".rela.text"))
	require.NoError(t, err)
	calls := 0
	for j := range rt.Len() {
		r, err := rt.Reloc(j)
		require.NoError(t, err)
		if elf.R_PPC64(r.Type) != elf.R_PPC64_REL24 {
			continue
		}
		calls++
		at := text.Addr + r.Offset
		dst := ppcBranch(t, text, at)
		name := f.Symbols[r.Sym].Name
		switch name {
		case "helper":
			assert.Equal(t, helper+ppc64LocalEntry(f.Symbols[r.Sym].Other), dst, "bl helper: its local entry")
			assert.NotZero(t, ppc64LocalEntry(f.Symbols[r.Sym].Other), "helper sets up r2 at its global entry")
		case "_mcount":
			checkPPCFtraceStub(t, stubs, dst, ppcMcount)
		default:
			checkPPCStub(t, stubs, dst, r2, targets[name])
			assert.Equal(t, uint32(ppcLdTOC), ppcWord(t, text, at+4), "r2 restored after bl %s", name)
		}
	}
	assert.Equal(t, 5, calls)
	// The data: every TOC16_HA/TOC16_LO pair reaches its symbol.
	assert.Equal(t, uint64(ppcExtCounter), binary.LittleEndian.Uint64(toc.Data))
	assert.Equal(t, uint64(ppcExtTable), binary.LittleEndian.Uint64(toc.Data[8:]))
	ha := map[uint64]uint32{}
	for j := range rt.Len() {
		r, _ := rt.Reloc(j)
		switch elf.R_PPC64(r.Type) {
		case elf.R_PPC64_TOC16_HA:
			ha[uint64(r.Addend)<<32|uint64(r.Sym)] = ppcWord(t, text, text.Addr+r.Offset)
		case elf.R_PPC64_TOC16_LO, elf.R_PPC64_TOC16_LO_DS:
			hi, ok := ha[uint64(r.Addend)<<32|uint64(r.Sym)]
			require.True(t, ok)
			s := f.Symbols[r.Sym]
			want := img.Section(f.Sections[s.Shndx].Name).Addr + s.Value + uint64(r.Addend)
			lo := ppcWord(t, text, text.Addr+r.Offset)
			if elf.R_PPC64(r.Type) == elf.R_PPC64_TOC16_LO_DS {
				lo &^= 3
			}
			assert.Equal(t, want, r2+ppcHiLo(hi, lo), "%s+%#x", f.Sections[s.Shndx].Name, r.Addend)
		}
	}
}

// TestPPC64Refusals: what the powerpc loader refuses. A module without
// .stubs (not built with the kernel's asm/module.h); a call through a
// stub without the nop to restore r2 after it; a TOC16 field more than
// 32 KiB from r2; a local call more than 32 MiB away.
func TestPPC64Refusals(t *testing.T) {
	build := func(stubs bool, text []byte, rels []elfobj.Reloc, syms ...elfobj.BuildSymbol) *Module {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_PPC64, Flags: 2}
		ti := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: text, Addralign: 4})
		b.AddSection(elfobj.BuildSection{Name: ".far", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 4})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=ppc\x00"), Addralign: 1})
		if stubs {
			b.AddSection(elfobj.BuildSection{Name: ".stubs", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addralign: 8})
		}
		var idx []uint32
		for _, s := range syms {
			idx = append(idx, b.AddSymbol(s))
		}
		rels = slices.Clone(rels)
		for k := range rels {
			rels[k].Sym = idx[rels[k].Sym]
		}
		b.AddRelocs(".rela.text", true, ti, rels)
		m, err := Parse("ppc.ko", b.Bytes())
		require.NoError(t, err)
		return m
	}
	le := func(words ...uint32) []byte {
		out := make([]byte, 4*len(words))
		for k, w := range words {
			binary.LittleEndian.PutUint32(out[4*k:], w)
		}
		return out
	}
	ext := elfobj.BuildSymbol{Name: "ext_fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)}
	call := []elfobj.Reloc{{Offset: 0, Sym: 0, Type: uint32(elf.R_PPC64_REL24)}}
	resolve, kernel := ppcResolvers()

	m := build(false, le(0x48000001, ppcNop), call, ext)
	_, err := m.Count(Options{})
	require.ErrorIs(t, err, ErrNoPLT)
	assert.Contains(t, err.Error(), `"ppc: doesn't contain .stubs."`)
	_, err = m.Link(LinkOptions{Resolve: resolve})
	require.ErrorIs(t, err, ErrNoPLT)

	// bl ext_fn; blr: no nop to restore r2 into.
	m = build(true, le(0x48000001, 0x4e800020), call, ext)
	img, err := m.Link(LinkOptions{Resolve: resolve, Kernel: kernel})
	require.NoError(t, err)
	require.Len(t, img.Errors, 1)
	assert.ErrorIs(t, img.Errors[0], ErrBadTarget)
	assert.Contains(t, img.Errors[0].Error(), "expected nop after call, got 4e800020")
	// The call as the section's last instruction; a sibling call (b,
	// no link) there needs no nop.
	m = build(true, le(0x48000001), call, ext)
	img, err = m.Link(LinkOptions{Resolve: resolve, Kernel: kernel})
	require.NoError(t, err)
	require.Len(t, img.Errors, 1)
	assert.ErrorIs(t, img.Errors[0], ErrBadTarget)
	m = build(true, le(0x48000000), call, ext)
	img, err = m.Link(LinkOptions{Resolve: resolve, Kernel: kernel})
	require.NoError(t, err)
	assert.Empty(t, img.Errors)

	// addi r9,r2,sym@toc against a symbol 64 KiB past r2 (.stubs is the
	// TOC section: the module has no .toc).
	far := elfobj.BuildSymbol{Name: "far", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: 2}
	m = build(true, le(0x39220000), []elfobj.Reloc{{Offset: 0, Sym: 0, Type: uint32(elf.R_PPC64_TOC16)}}, far)
	img, err = m.Link(LinkOptions{At: map[string]uint64{".text": ppc64VmallocStart, ".stubs": ppc64VmallocStart + 0x100, ".far": ppc64VmallocStart + 0x18100}})
	require.NoError(t, err)
	require.Len(t, img.Errors, 1)
	assert.ErrorIs(t, img.Errors[0], ErrOutOfRange)
	assert.Equal(t, uint64(0x10000), img.Errors[0].Value, "far - r2")
	// 32 KiB - 1 and -32 KiB fit.
	for _, d := range []int64{0x7ffc, -0x8000} {
		img, err = m.Link(LinkOptions{At: map[string]uint64{".text": ppc64VmallocStart, ".stubs": ppc64VmallocStart + 0x100, ".far": uint64(ppc64VmallocStart+0x8100) + uint64(d)}})
		require.NoError(t, err)
		assert.Empty(t, img.Errors, "%#x", d)
	}

	// bl far, 32 MiB away: out of a REL24's reach; 32 MiB - 4 is not.
	m = build(true, le(0x48000001, ppcNop), call, far)
	for _, c := range []struct {
		d  uint64
		ok bool
	}{{32<<20 - 4, true}, {32 << 20, false}} {
		img, err = m.Link(LinkOptions{At: map[string]uint64{".text": ppc64VmallocStart, ".far": ppc64VmallocStart + c.d}})
		require.NoError(t, err)
		if c.ok {
			assert.Empty(t, img.Errors)
			continue
		}
		require.Len(t, img.Errors, 1)
		assert.ErrorIs(t, img.Errors[0], ErrOutOfRange)
	}
}

// TestPPC64CountRelocs is count_relocs()'s quirks: the previous symbol
// and addend start at 0 (a REL24 against symbol 0, addend 0, first is
// not counted), and a negative addend never equals the previous one,
// which is kept in 32 unsigned bits.
func TestPPC64CountRelocs(t *testing.T) {
	rel24 := uint32(elf.R_PPC64_REL24)
	rs := []elfobj.Reloc{
		{Sym: 0, Type: rel24, Addend: 0},
		{Sym: 3, Type: rel24, Addend: -4}, {Sym: 3, Type: rel24, Addend: -4},
		{Sym: 3, Type: rel24, Addend: 8}, {Sym: 3, Type: rel24, Addend: 8},
		{Sym: 5, Type: uint32(elf.R_PPC64_ADDR64)},
	}
	order := []int{0, 1, 2, 3, 4, 5}
	assert.Equal(t, 3, ppc64CountRelocs(order, rs), "symbol 0 not counted; -4 twice; 8 once")
}

// TestPPC64StubsSuffice links random ppc64le modules with the kernel's
// count: stub_for_addr() never runs out, and the stubs used (one per
// distinct external target, the ftrace ones not made without
// LinkOptions.Kernel) are at most what optimal mode counts, less its
// three fixed entries.
func TestPPC64StubsSuffice(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for i := range 500 {
		m, err := Parse(fmt.Sprintf("gen%d", i), genModule(r, elf.EM_PPC64))
		require.NoError(t, err)
		k, err := m.Count(Options{})
		require.NoError(t, err)
		o, err := m.Count(Options{Mode: ModeOptimal})
		require.NoError(t, err)
		require.LessOrEqual(t, o.PLTCore, k.PLTCore+1, "module %d", i)
		// Every symbol resolves far away (the kernel), each to its own
		// address.
		img, err := m.Link(LinkOptions{Resolve: func(name string) (uint64, bool) {
			return 0xc000000000100000 + uint64(len(name))*0x1000 + uint64(name[len(name)-1])*0x10, true
		}})
		require.NoError(t, err)
		for _, e := range img.Errors {
			require.NotErrorIs(t, e, ErrPLTFull, "module %d", i)
		}
		require.Less(t, img.PLTCoreUsed, img.PLTCoreMax, "module %d: the terminator stays", i)
		require.LessOrEqual(t, img.PLTCoreUsed, o.PLTCore-o.FixedPLTs, "module %d", i)
	}
}

// TestPPC64OrderMatchesSort: ppc64Order's counting sort puts the REL24s
// where a comparison sort by relacmp()'s key (descending by r_info, then
// addend; the file's order among equals) puts them, after the other
// relocations in the file's order, on random modules.
func TestPPC64OrderMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	sections := 0
	for i := range 300 {
		m, err := Parse(fmt.Sprintf("gen%d", i), genModule(r, elf.EM_PPC64))
		require.NoError(t, err)
		f := m.f
		for si := range f.Sections {
			s := &f.Sections[si]
			if s.Type != elf.SHT_RELA {
				continue
			}
			rt, err := f.RelocTable(s)
			require.NoError(t, err)
			order, rs, err := ppc64Order(&rt)
			require.NoError(t, err)
			others, calls := []int{}, []int(nil)
			for j, x := range rs {
				if elf.R_PPC64(x.Type) == elf.R_PPC64_REL24 {
					calls = append(calls, j)
				} else {
					others = append(others, j)
				}
			}
			slices.SortStableFunc(calls, func(a, b int) int {
				ka := uint64(rs[a].Sym)<<32 | uint64(rs[a].Type)
				kb := uint64(rs[b].Sym)<<32 | uint64(rs[b].Type)
				if ka != kb {
					return cmp.Compare(kb, ka)
				}
				return cmp.Compare(rs[b].Addend, rs[a].Addend)
			})
			require.Equal(t, append(others, calls...), order, "module %d %s", i, s.Name)
			sections++
		}
	}
	assert.Greater(t, sections, 300)
}

// TestPPC64Generations: get_stubs_size() and stub_for_addr() per
// generation. Up to 6.12 .stubs has one entry that stays zero, ending
// the search; 7.2 counts the stubs in use instead, and reserves the
// out-of-line ftrace stubs (three __patchable_function_entries entries:
// 3 x 24 bytes, two 40-byte stubs) after the ftrace trampolines, so a
// livepatch relocation's stub comes after them. 6.12 and 7.2 take an ld
// r2 already written after a call, which 6.1 refuses.
func TestPPC64Generations(t *testing.T) {
	build := func(after uint32) *Module {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_PPC64, Flags: 2}
		text := make([]byte, 16)
		for k, w := range []uint32{0x48000001, ppcNop, 0x48000001, after} {
			binary.LittleEndian.PutUint32(text[4*k:], w)
		}
		ti := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: text, Addralign: 4})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=ppc\x00"), Addralign: 1})
		b.AddSection(elfobj.BuildSection{Name: ".stubs", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addralign: 8})
		b.AddSection(elfobj.BuildSection{Name: "__patchable_function_entries", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 3*8), Addralign: 8})
		fn := b.AddSymbol(elfobj.BuildSymbol{Name: "ext_fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		other := b.AddSymbol(elfobj.BuildSymbol{Name: "ext_other", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		b.AddRelocs(".rela.text", true, ti, []elfobj.Reloc{{Offset: 0, Sym: fn, Type: uint32(elf.R_PPC64_REL24)}})
		klp := b.AddRelocs(".klp.rela.vmlinux..text", true, ti, []elfobj.Reloc{{Offset: 8, Sym: other, Type: uint32(elf.R_PPC64_REL24)}})
		b.Sections[klp-1].Flags |= shfRelaLivepatch
		m, err := Parse("ppc.ko", b.Bytes())
		require.NoError(t, err)
		return m
	}
	resolve, kernel := ppcResolvers()
	for _, tc := range []struct {
		g            kgen.Generation
		stubs, fixed int
		klpStub      uint64 // ext_other's stub
	}{
		{kgen.Linux6_1, 5, 3, 3},
		{kgen.Linux6_12, 5, 3, 3},
		{kgen.Linux7_2, 6, 4, 5},
	} {
		m := build(ppcNop)
		c, err := m.Count(Options{Generation: tc.g})
		require.NoError(t, err)
		assert.Equal(t, tc.stubs, c.PLTCore, "%s", tc.g)
		assert.Equal(t, tc.fixed, c.FixedPLTs, "%s", tc.g)

		img, err := m.Link(LinkOptions{Generation: tc.g, Resolve: resolve, Kernel: kernel})
		require.NoError(t, err)
		require.Empty(t, img.Errors, "%s", tc.g)
		text, stubs := img.Section(".text"), img.Section(".stubs")
		assert.Equal(t, uint64(tc.stubs*ppc64StubEntry), stubs.Size, "%s", tc.g)
		stub := func(i uint64) uint64 { return stubs.Addr + i*ppc64StubEntry }
		assert.Equal(t, stub(0), ppcBranch(t, text, text.Addr), "%s: bl ext_fn", tc.g)
		checkPPCFtraceStub(t, stubs, stub(1), ppcFtraceCall)
		checkPPCFtraceStub(t, stubs, stub(2), ppcFtraceRegs)
		assert.Equal(t, stub(tc.klpStub), ppcBranch(t, text, text.Addr+8), "%s: bl ext_other, livepatch's", tc.g)
		assert.Equal(t, uint32(ppcLdTOC), ppcWord(t, text, text.Addr+12), "%s", tc.g)

		// An ld r2 already after the second call.
		img, err = build(ppcLdTOC).Link(LinkOptions{Generation: tc.g, Resolve: resolve, Kernel: kernel})
		require.NoError(t, err)
		if tc.g == kgen.Linux6_1 {
			require.Len(t, img.Errors, 1)
			assert.ErrorIs(t, img.Errors[0], ErrBadTarget)
			assert.Contains(t, img.Errors[0].Error(), "expected nop after call, got e8410018")
		} else {
			assert.Empty(t, img.Errors, "%s", tc.g)
		}
	}
}
