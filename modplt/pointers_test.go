// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// pointerModule has a text section with two functions (api at 0, a static
// helper at 0x10) and a data section holding, in order: api's address
// (its symbol), helper's (the text section's symbol + 0x10, as compilers
// write a static function's), an address inside helper (text + 0x14: no
// function starts there) and an undefined function's; plus ftrace's call
// site table pointing at helper. ARM writes its addends into the words
// (REL), x86_64 into the relocations (RELA).
func pointerModule(t *testing.T, m elf.Machine) *Module {
	t.Helper()
	is64 := m != elf.EM_ARM
	b := &elfobj.Builder{Class: elf.ELFCLASS32, Order: binary.LittleEndian, Machine: m}
	word, abs := 4, uint32(elf.R_ARM_ABS32)
	if is64 {
		b.Class, word, abs = elf.ELFCLASS64, 8, uint32(elf.R_X86_64_64)
	}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 32), Addralign: 16})
	data := make([]byte, 4*word)
	mcount := make([]byte, word)
	if !is64 { // REL: the addends are the words' contents
		binary.LittleEndian.PutUint32(data[word:], 0x10)
		binary.LittleEndian.PutUint32(data[2*word:], 0x14)
		binary.LittleEndian.PutUint32(mcount, 0x10)
	}
	d := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: data, Addralign: 8})
	mc := b.AddSection(elfobj.BuildSection{Name: "__mcount_loc", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: mcount, Addralign: 8})
	secSym := b.AddSymbol(elfobj.BuildSymbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint16(text)})
	b.AddSymbol(elfobj.BuildSymbol{Name: "helper", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC), Shndx: uint16(text), Value: 0x10, Size: 16})
	api := b.AddSymbol(elfobj.BuildSymbol{Name: "api", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 16})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "kernel_fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	// RELA carries the addends; REL's are in the words (above).
	add := func(a int64) int64 {
		if is64 {
			return a
		}
		return 0
	}
	rel := ".rel"
	if is64 {
		rel = ".rela"
	}
	w := uint64(word)
	b.AddRelocs(rel+".data", is64, d, []elfobj.Reloc{
		{Offset: 0, Sym: api, Type: abs},
		{Offset: w, Sym: secSym, Type: abs, Addend: add(0x10)},
		{Offset: 2 * w, Sym: secSym, Type: abs, Addend: add(0x14)},
		{Offset: 3 * w, Sym: ext, Type: abs},
	})
	b.AddRelocs(rel+"__mcount_loc", is64, mc, []elfobj.Reloc{{Offset: 0, Sym: secSym, Type: abs, Addend: add(0x10)}})
	mod, err := Parse("fp.ko", b.Bytes())
	require.NoError(t, err)
	return mod
}

func TestFunctionPointers(t *testing.T) {
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_ARM} {
		mod := pointerModule(t, m)
		const kernelFn = 0x12345678
		img, err := mod.Link(LinkOptions{Resolve: func(name string) (uint64, bool) { return kernelFn, name == "kernel_fn" }})
		require.NoError(t, err)
		require.True(t, img.OK(), "%v", img.Errors)
		var text uint64
		for _, p := range img.Sections {
			if p.Name == ".text" {
				text = p.Addr
			}
		}
		require.NotZero(t, text)
		w := uint64(8)
		if m == elf.EM_ARM {
			w = 4
		}
		require.Equal(t, []FuncPointer{
			{Section: ".data", Offset: 0, Symbol: "api", Target: text},
			{Section: ".data", Offset: w, Symbol: "helper", Target: text + 0x10},
			{Section: ".data", Offset: 3 * w, Symbol: "kernel_fn", Target: kernelFn, External: true},
		}, img.FunctionPointers(), "%v", m)
	}
}

// On real modules, every pointer named after a function of the module
// holds that function's address, and the static functions' pointers
// (section symbol + offset) are found: xfs.ko's ops tables.
func TestFunctionPointersCorpus(t *testing.T) {
	mod, err := Open(testutil.Corpus(t, "amd64/modules/xfs.ko"))
	require.NoError(t, err)
	img, err := mod.Link(LinkOptions{Resolve: func(string) (uint64, bool) { return 0xffffffff81000000, true }})
	require.NoError(t, err)
	funcAddr := map[string]uint64{}
	for i, s := range mod.f.Symbols {
		if s.Type() == elf.STT_FUNC && s.Shndx != uint16(elf.SHN_UNDEF) {
			if a, ok := img.SymbolAddr(uint32(i)); ok {
				funcAddr[s.Name] = a
			}
		}
	}
	own := 0
	for _, fp := range img.FunctionPointers() {
		require.NotEqual(t, "__mcount_loc", fp.Section) // ftrace's call sites
		if fp.External {
			continue
		}
		a, ok := funcAddr[fp.Symbol]
		require.True(t, ok, "%+v names no function", fp)
		require.Equal(t, a, fp.Target, "%+v", fp)
		own++
	}
	// Named function symbols alone give 1,767 (the static functions'
	// pointers were missed before).
	require.Greater(t, own, 3000)
}
