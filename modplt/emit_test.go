// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kgen"
)

// farResolver places every undefined symbol at a made-up address derived
// from its name, inside [lo, lo+span).
func farResolver(lo, span uint64, align uint64) Resolver {
	return func(name string) (uint64, bool) {
		h := fnv.New64a()
		h.Write([]byte(name))
		return lo + h.Sum64()%span&^(align-1), true
	}
}

// decodeARM64Entry decodes ADRP x16 / ADD x16 / BR x16 at addr.
func decodeARM64Entry(t *testing.T, b []byte, addr uint64) uint64 {
	adrp, add, br := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
	require.Equal(t, uint32(0x90000010), adrp&0x9f00001f, "ADRP x16")
	require.Equal(t, uint32(0x91000210), add&0xffc003ff, "ADD x16, x16")
	require.Equal(t, uint32(0xd61f0200), br, "BR x16")
	imm := int64(int32(((adrp>>5)&0x7ffff)<<2|(adrp>>29)&3) << 11 >> 11)
	return uint64(int64(addr&^0xfff)+imm<<12) + uint64((add>>10)&0xfff)
}

// branchTarget decodes a B/BL at place.
func arm64BranchTarget(insn uint32, place uint64) uint64 {
	return place + uint64(int64(int32(insn<<6)>>6)*4)
}

// checkARM64PLT: every CALL26/JUMP26 to a symbol outside its section
// branches to a PLT entry whose target is the symbol plus addend, or
// straight to it.
func checkARM64PLT(t *testing.T, m *Module, img *Image, resolve Resolver) (viaPLT int) {
	f := m.f
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA {
			continue
		}
		dst := img.Section(f.Sections[s.Info].Name)
		if dst == nil || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		rs, err := f.Relocs(s)
		require.NoError(t, err)
		for _, r := range rs {
			if t26 := elf.R_AARCH64(r.Type); t26 != elf.R_AARCH64_CALL26 && t26 != elf.R_AARCH64_JUMP26 {
				continue
			}
			sym := &f.Symbols[r.Sym]
			var want uint64
			if sym.Shndx == uint16(elf.SHN_UNDEF) {
				want, _ = resolve(sym.Name)
			} else {
				want = img.Section(f.Sections[sym.Shndx].Name).Addr + sym.Value
			}
			want += uint64(r.Addend)
			place := dst.Addr + r.Offset
			got := arm64BranchTarget(binary.LittleEndian.Uint32(dst.Data[r.Offset:]), place)
			if got == want {
				continue
			}
			plt := img.Section(".plt")
			if dst.Region == Init {
				plt = img.Section(".init.plt")
			}
			require.True(t, got >= plt.Addr && got < plt.Addr+plt.Size, "%s+%#x: branch to %#x, neither the target %#x nor the PLT", s.Name, r.Offset, got, want)
			require.Equal(t, want, decodeARM64Entry(t, plt.Data[got-plt.Addr:], got), "%s+%#x", s.Name, r.Offset)
			viaPLT++
		}
	}
	return viaPLT
}

// TestARM64PLTEmission links the corpus arm64 modules with every
// external symbol 256 MiB to 1.25 GiB away (past a branch, within PREL32) (out of branch range: each call needs a
// PLT entry), and with ForcePLT: every branch must reach its target
// through an entry that decodes to it, within the slots counted.
func TestARM64PLTEmission(t *testing.T) {
	mods, _ := filepath.Glob(filepath.Join(testutil.Corpus(t, "arm64/modules"), "*.ko"))
	require.NotEmpty(t, mods)
	for _, p := range mods {
		m, err := Open(p)
		require.NoError(t, err)
		for _, tc := range []struct {
			name    string
			opts    LinkOptions
			erratum bool
		}{
			{"far", LinkOptions{Resolve: farResolver(0xffff800018000000, 1<<30, 4)}, false},
			{"forced", LinkOptions{Resolve: farResolver(0xffff800008000000, 64<<20, 4), ForcePLT: true}, false},
			{"far+erratum", LinkOptions{Resolve: farResolver(0xffff800018000000, 1<<30, 4), Erratum843419: true}, true},
		} {
			t.Run(m.Name+"/"+tc.name, func(t *testing.T) {
				img, err := m.Link(tc.opts)
				require.NoError(t, err)
				for _, e := range img.Errors {
					t.Errorf("%v", e)
				}
				n := checkARM64PLT(t, m, img, tc.opts.Resolve)
				assert.Greater(t, n, 0)
				assert.LessOrEqual(t, img.PLTCoreUsed, img.PLTCoreMax)
				assert.LessOrEqual(t, img.PLTInitUsed, img.PLTInitMax)
				if tc.erratum {
					// No entry's ADRP sits at a forbidden page offset.
					for _, name := range []string{".plt", ".init.plt"} {
						plt := img.Section(name)
						for off := uint64(0); off+12 <= plt.Size; off += 12 {
							if binary.LittleEndian.Uint32(plt.Data[off:])&0x9f000000 == 0x90000000 {
								assert.Less(t, (plt.Addr+off)&0xfff, uint64(0xff8), "%s+%#x", name, off)
							}
						}
					}
				}
			})
		}
	}
}

// TestARMPLTEmission: the same for 32-bit ARM (ldr pc, [pc, #56] with
// the literal a cache line on) and Thumb-2 (ldr.w pc, [pc, #60]), on the
// corpus armhf modules and on thumb.o.
func TestARMPLTEmission(t *testing.T) {
	mods, _ := filepath.Glob(filepath.Join(testutil.Corpus(t, "armhf/modules"), "*.ko"))
	mods = append(mods, filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "thumb.o"))
	for _, p := range mods {
		m, err := Open(p)
		require.NoError(t, err)
		// >= 64 MiB past the module area: every call needs a PLT. The
		// targets are undefined NOTYPE symbols, so Thumb branches to them
		// are not interworking checks (ARM ones to an odd address are).
		resolve := farResolver(0xd0000000, 256<<20, 4)
		img, err := m.Link(LinkOptions{Resolve: resolve})
		require.NoError(t, err, p)
		for _, e := range img.Errors {
			t.Errorf("%s: %v", p, e)
		}
		f := m.f
		via := 0
		for i := range f.Sections {
			s := &f.Sections[i]
			if s.Type != elf.SHT_REL || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR == 0 {
				continue
			}
			dst := img.Section(f.Sections[s.Info].Name)
			rs, err := f.Relocs(s)
			require.NoError(t, err)
			for _, r := range rs {
				sym := &f.Symbols[r.Sym]
				if sym.Shndx != uint16(elf.SHN_UNDEF) {
					continue
				}
				want, _ := resolve(sym.Name)
				place := dst.Addr + r.Offset
				var got uint64
				thumb := false
				switch elf.R_ARM(r.Type) {
				case elf.R_ARM_CALL, elf.R_ARM_JUMP24, elf.R_ARM_PC24:
					insn := binary.LittleEndian.Uint32(dst.Data[r.Offset:])
					got = uint64(uint32(place) + 8 + uint32(int32(insn<<8)>>6))
				case elf.R_ARM_THM_PC22, elf.R_ARM_THM_JUMP24:
					up, lo := uint32(binary.LittleEndian.Uint16(dst.Data[r.Offset:])), uint32(binary.LittleEndian.Uint16(dst.Data[r.Offset+2:]))
					s := up >> 10 & 1
					v := s<<24 | (^(lo>>13^s)&1)<<23 | (^(lo>>11^s)&1)<<22 | (up&0x3ff)<<12 | (lo&0x7ff)<<1
					got = uint64(uint32(place) + 4 + uint32(int32(v<<7)>>7))
					thumb = true
				default:
					continue
				}
				plt := img.Section(".plt")
				if dst.Region == Init {
					plt = img.Section(".init.plt")
				}
				require.True(t, got >= plt.Addr && got < plt.Addr+plt.Size, "%s %s+%#x -> %#x", p, s.Name, r.Offset, got)
				off := got - plt.Addr
				if thumb {
					assert.Equal(t, []byte{0xdf, 0xf8, 0x3c, 0xf0}, plt.Data[off:off+4], "ldr.w pc, [pc, #60]")
				} else {
					assert.Equal(t, uint32(0xe59ff038), binary.LittleEndian.Uint32(plt.Data[off:]), "ldr pc, [pc, #56]")
				}
				lit := binary.LittleEndian.Uint32(plt.Data[off+64:])
				// A zero addend (the PC bias) leaves the literal = the symbol.
				if z := img.Module.f; z != nil {
					_, zero, _ := armAddend(m, f.SectionData(&f.Sections[s.Info]), r)
					if zero {
						assert.Equal(t, uint32(want), lit, "%s %s+%#x", p, s.Name, r.Offset)
					}
				}
				via++
			}
		}
		assert.Greater(t, via, 0, p)
		assert.LessOrEqual(t, img.PLTCoreUsed, img.PLTCoreMax, p)
		assert.LessOrEqual(t, img.PLTInitUsed, img.PLTInitMax, p)
	}
}

// TestGOTAndRelaxation links got.o (built -fpic -fno-plt): GOT loads of
// data in reach become lea; calls through the GOT keep their entry, which
// holds the target.
func TestGOTAndRelaxation(t *testing.T) {
	m := openFixture(t, "got.o")
	syms := map[string]uint64{"ext_f": 0xffffffff81000000, "ext_g": 0xffffffff81000100, "ext_a": 0xffffffff82000000, "ext_b": 0xffffffff82000008}
	img, err := m.Link(LinkOptions{Resolve: mapResolver(syms)})
	require.NoError(t, err)
	require.Empty(t, img.Errors)
	text := img.Section(".text")
	got := img.Section(".got")
	require.NotNil(t, got)
	rs, err := m.f.Relocs(m.f.SectionByName(".rela.text"))
	require.NoError(t, err)
	for _, r := range rs {
		place := text.Addr + r.Offset
		disp := int64(int32(binary.LittleEndian.Uint32(text.Data[r.Offset:])))
		target := uint64(int64(place) + 4 + disp) // rip-relative: after the disp32
		sym := m.f.Symbols[r.Sym].Name
		switch elf.R_X86_64(r.Type) {
		case elf.R_X86_64_REX_GOTPCRELX: // mov ext_a@GOTPCREL(%rip), %reg -> lea
			assert.Equal(t, byte(0x8d), text.Data[r.Offset-2], "%s: lea", sym)
			assert.Equal(t, syms[sym], target, sym)
		case elf.R_X86_64_GOTPCRELX: // call *ext_f@GOTPCREL(%rip): through the GOT
			require.True(t, target >= got.Addr && target < got.Addr+got.Size, sym)
			assert.Equal(t, syms[sym], binary.LittleEndian.Uint64(got.Data[target-got.Addr:]), sym)
		}
	}
	assert.Equal(t, 2, img.GOTUsed) // ext_f and ext_g: the data loads were relaxed
	assert.Equal(t, 4, img.GOTMax)
}

func TestLinkErrors(t *testing.T) {
	// An arm64 branch out of range with no PLT section.
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_AARCH64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 4})
	far := b.AddSymbol(elfobj.BuildSymbol{Name: "far", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	missing := b.AddSymbol(elfobj.BuildSymbol{Name: "missing", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	weak := b.AddSymbol(elfobj.BuildSymbol{Name: "weakling", Info: elf.ST_INFO(elf.STB_WEAK, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{
		{Offset: 0, Sym: far, Type: uint32(elf.R_AARCH64_CALL26)},
		{Offset: 4, Sym: missing, Type: uint32(elf.R_AARCH64_CALL26)},
		{Offset: 8, Sym: far, Type: uint32(elf.R_AARCH64_TLSGD_ADR_PAGE21)},
		{Offset: 12, Sym: weak, Type: uint32(elf.R_AARCH64_ABS32)},
		{Offset: 14, Sym: far, Type: uint32(elf.R_AARCH64_ABS32)},
	})
	m, err := Parse("bad.ko", b.Bytes())
	require.NoError(t, err)
	img, err := m.Link(LinkOptions{Resolve: mapResolver(map[string]uint64{"far": 0xffff900000000000})})
	require.NoError(t, err)
	require.Len(t, img.Errors, 4)
	kinds := []error{ErrNoPLT, ErrUnresolved, ErrUnsupported, ErrBadTarget}
	for i, e := range img.Errors {
		assert.ErrorIs(t, e, kinds[i], "%v", e)
	}
	assert.Equal(t, ".rela.text+0x8: R_AARCH64_TLSGD_ADR_PAGE21 against far: unsupported relocation type", img.Errors[2].Error())
	assert.Equal(t, []string{"missing"}, img.Unresolved)
	assert.Equal(t, 1, img.Relocs) // the weak symbol: 0, and 0 fits ABS32

	// x86_64: the kernel refuses a target that is not zero.
	b = &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text = b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: []byte{0, 0, 0, 0, 1, 0, 0, 0}, Addralign: 4})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "ext", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{
		{Offset: 0, Sym: ext, Type: uint32(elf.R_X86_64_PC32), Addend: -4},
		{Offset: 4, Sym: ext, Type: uint32(elf.R_X86_64_PC32), Addend: -4},
	})
	m, err = Parse("x.ko", b.Bytes())
	require.NoError(t, err)
	img, err = m.Link(LinkOptions{Resolve: mapResolver(map[string]uint64{"ext": 0xffffffff00000000})}) // 3 GiB below the module area
	require.NoError(t, err)
	require.Len(t, img.Errors, 2)
	assert.ErrorIs(t, img.Errors[0], ErrOutOfRange)
	assert.Contains(t, img.Errors[0].Error(), "the kernel does not check")
	assert.ErrorIs(t, img.Errors[1], ErrNonZeroTarget)
}

// A module's .bss is laid out but never made: a file of a few hundred
// bytes may claim 100 MB of it. A relocation against it is an error.
// Sections whose headers lie about what the loader can lay out are
// malformed files (ErrMalformed, naming the file and section), found
// before anything is allocated for them.
func TestLayoutMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sec   elfobj.BuildSection
		error string
	}{
		{"4 GiB of .bss", elfobj.BuildSection{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Size: 4 << 30, Addralign: 8},
			"bad.ko: section .bss: claims 4294967296 bytes, more than a module area holds (134217728)"},
		{"alignment not a power of two", elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 16), Addralign: 10241},
			"bad.ko: section .data: alignment 10241 is not a power of two"},
		// FuzzRun found it: no bytes in the file, and 14 MB made of them.
		{"SHT_NULL with SHF_ALLOC", elfobj.BuildSection{Name: ".null", Type: elf.SHT_NULL, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Size: 14 << 20, Addralign: 8},
			"bad.ko: section .null: is SHT_NULL and SHF_ALLOC with 14680064 bytes: the loader would copy them from an offset it never checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
			b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 16})
			b.AddSection(tc.sec)
			m, err := Parse("bad.ko", b.Bytes())
			require.NoError(t, err)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			img, err := m.Link(LinkOptions{Resolve: mapResolver(nil)})
			runtime.ReadMemStats(&m1)
			assert.Nil(t, img)
			require.ErrorIs(t, err, ErrMalformed)
			var fe *elfobj.FormatError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.sec.Name, fe.Section)
			assert.EqualError(t, err, tc.error)
			assert.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(1<<20))
		})
	}
}

func TestNobitsHasNoBytes(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8), Addralign: 16})
	bss := b.AddSection(elfobj.BuildSection{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Size: 100 << 20, Addralign: 64})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "ext", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddSymbol(elfobj.BuildSymbol{Name: "counter", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT), Shndx: uint16(bss), Value: 0x40, Size: 8})
	b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{{Offset: 0, Sym: ext, Type: uint32(elf.R_X86_64_64)}})
	file := b.Bytes()
	require.Less(t, len(file), 1024)
	m, err := Parse("bss.ko", file)
	require.NoError(t, err)
	link := func() *Image {
		img, err := m.Link(LinkOptions{Resolve: mapResolver(map[string]uint64{"ext": 0xffffffffc0001000})})
		require.NoError(t, err)
		return img
	}
	img := link()
	require.True(t, img.OK(), "%v", img.Errors)
	var bssP, textP *Placed
	for _, p := range img.Sections {
		switch p.Name {
		case ".bss":
			bssP = p
		case ".text":
			textP = p
		}
	}
	require.NotNil(t, bssP)
	assert.Equal(t, uint64(100<<20), bssP.Size)
	assert.Nil(t, bssP.Data)
	assert.Zero(t, bssP.Addr%64)
	assert.Equal(t, uint64(0xffffffffc0001000), binary.LittleEndian.Uint64(textP.Data))
	addr, ok := img.SymbolAddr(2)
	require.True(t, ok)
	assert.Equal(t, bssP.Addr+0x40, addr)
	// The image holds it as SHT_NOBITS of the claimed size.
	out, err := elf.NewFile(bytes.NewReader(img.ELF()))
	require.NoError(t, err)
	sec := out.Section(".bss")
	require.NotNil(t, sec)
	assert.Equal(t, elf.SHT_NOBITS, sec.Type)
	assert.Equal(t, uint64(100<<20), sec.Size)
	assert.Equal(t, bssP.Addr, sec.Addr)
	// Linking it again allocates nothing near its size.
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	link()
	runtime.ReadMemStats(&m1)
	assert.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(1<<20))

	// A relocation against it: each is ErrBadTarget, the rest links.
	b.AddRelocs(".rela.bss", true, bss, []elfobj.Reloc{{Offset: 0x40, Sym: ext, Type: uint32(elf.R_X86_64_64)}, {Offset: 0x48, Sym: ext, Type: uint32(elf.R_X86_64_64)}})
	m, err = Parse("bss.ko", b.Bytes())
	require.NoError(t, err)
	img = link()
	require.Len(t, img.Errors, 2)
	assert.ErrorIs(t, img.Errors[1], ErrBadTarget)
	assert.Equal(t, ".rela.bss+0x48: R_X86_64_64 against ext: relocation target outside its section (section .bss is SHT_NOBITS: it has no bytes to relocate)", img.Errors[1].Error())
	assert.Equal(t, 1, img.Relocs)
}

func TestTwoLinksAtOnce(t *testing.T) {
	m := openFixture(t, "thumb.o")
	done := make(chan string)
	for k := range 2 {
		go func() {
			img, err := m.Link(LinkOptions{Base: 0xbf000000 + uint64(k)<<20, Resolve: farResolver(0xbe000000, 1<<20, 4), ForcePLT: true})
			if err != nil || !img.OK() {
				done <- fmt.Sprint(err, img.Errors)
				return
			}
			done <- ""
		}()
	}
	for range 2 {
		assert.Empty(t, <-done)
	}
}

// TestPLTFull: emitting past the slots the count reserved is an error,
// never a write past the section (arm64 and arm, whose two fixed slots
// count among them); a target repeated right after itself takes no slot,
// as the kernel reuses the last entry made.
func TestPLTFull(t *testing.T) {
	for _, mach := range []elf.Machine{elf.EM_AARCH64, elf.EM_ARM} {
		p := &Placed{Name: ".plt", Addr: 0x10000, Size: 128, Data: make([]byte, 128)}
		m := &Module{arch: archFor(mach), f: &elfobj.File{Order: binary.LittleEndian}}
		l := &linker{m: m, opts: &LinkOptions{}}
		slots := 2
		if mach == elf.EM_ARM {
			slots += armFixedPLTs
		}
		l.plt[Core] = newPLTArea(p, slots)
		var first uint64
		for i, target := range []uint64{0x5000000, 0x5000000, 0x6000000, 0x7000000} {
			var err error
			var e uint64
			if mach == elf.EM_AARCH64 {
				e, err = l.arm64PLT(Core, target)
			} else {
				e, err = l.armPLT(Core, false, uint32(target))
			}
			switch i {
			case 0:
				first = e
			case 1:
				assert.Equal(t, first, e, "%v: the repeat takes the last entry", mach)
			}
			if i < 3 {
				assert.NoError(t, err, "%v call %d", mach, i)
			} else {
				assert.ErrorIs(t, err, ErrPLTFull, "%v", mach)
				assert.Contains(t, err.Error(), fmt.Sprintf(".plt has %d slots", slots))
			}
		}
		_, err := l.arm64PLT(Init, 0x1000)
		assert.ErrorIs(t, err, ErrNoPLT)
	}
}

// TestDefaultBase: with no Base, the core goes where the kernel's
// module_alloc() starts: MODULES_VADDR on x86_64 and arm, and on arm64
// the first page at or above _etext - 128 MiB (kaslr_init()'s
// module_alloc_base, aligned up as vmalloc does), from which a BL reaches
// all of the kernel's text.
func TestDefaultBase(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		machine elf.Machine
		etext   uint64
		want    uint64
		page    uint64
	}{
		{elf.EM_X86_64, 0, 0xffffffffc0000000, 0},
		{elf.EM_X86_64, 0xffffffff82000000, 0xffffffffc0000000, 0}, // _etext does not matter
		{elf.EM_ARM, 0, 0xbf000000, 0},
		{elf.EM_ARM, 0xc0800000, 0xbf000000, 0},
		{elf.EM_AARCH64, 0, 0xffff800000000000, 0},                            // MODULES_VADDR
		{elf.EM_AARCH64, 0xffff800008d00000, 0xffff800008d00000 - 128*mib, 0}, // Debian 6.1 arm64's _etext
		{elf.EM_AARCH64, 0xffff800008d00abc, 0xffff800008d01000 - 128*mib, 0}, // vmalloc aligns up to a page
		{elf.EM_AARCH64, 0xffff800000001000, 0xffff800000000000, 0},           // below MODULES_END: not a kernel's
		{elf.EM_AARCH64, 0xffffffffffff0000, 0xffffffffffff0000 - 128*mib, 0}, // no wrap at the top
		// Up to a 16 or a 64 KiB page.
		{elf.EM_AARCH64, 0xffff800008d0f000, 0xffff800008d10000 - 128*mib, 16 << 10},
		{elf.EM_AARCH64, 0xffff800008d01000, 0xffff800008d10000 - 128*mib, 64 << 10},
		{elf.EM_AARCH64, 0xffff800008d10000, 0xffff800008d10000 - 128*mib, 64 << 10},
	} {
		s := newSmall(tc.machine, make([]byte, 64), ".text")
		m, err := Parse("small.ko", s.b.Bytes())
		require.NoError(t, err)
		lo := LinkOptions{KernelEtext: tc.etext, PageSize: tc.page, Resolve: mapResolver(nil)}
		assert.Equal(t, tc.want, m.DefaultBase(lo), "%v %#x", tc.machine, tc.etext)
		img, err := m.Link(lo)
		require.NoError(t, err)
		assert.Equal(t, tc.want, img.Sections[0].Addr, "%v %#x: %s", tc.machine, tc.etext, img.Sections[0].Name)
		// An explicit Base wins.
		img, err = m.Link(LinkOptions{Base: 0x10000, KernelEtext: tc.etext, PageSize: tc.page, Resolve: mapResolver(nil)})
		require.NoError(t, err)
		assert.Equal(t, uint64(0x10000), img.Sections[0].Addr)
	}
}

// TestInitAfterGuardPage: without InitBase, init goes where vmalloc puts
// module_alloc()'s next allocation: past core's pages, which end with the
// symbols kallsyms keeps (layout_symtab()), and core's guard page. Debian's
// 6.1 kernel loaded md4 so (testdata/oracle: core 0x4000 bytes at
// 0xffffffffc0526000, .init.text at 0xffffffffc052b000).
func TestInitAfterGuardPage(t *testing.T) {
	m, err := Open(testutil.Corpus(t, "amd64/modules/md4.ko"))
	require.NoError(t, err)
	const base = 0xffffffffc0526000
	img, err := m.Link(LinkOptions{Base: base, Resolve: func(string) (uint64, bool) { return 0xffffffff81000000, true }})
	require.NoError(t, err)
	var coreEnd uint64
	for _, p := range img.Sections {
		if p.Region == Core {
			coreEnd = max(coreEnd, p.Addr+p.Size)
		}
	}
	assert.Equal(t, uint64(base+0x2580), coreEnd, "core's sections")
	assert.Equal(t, uint64(0x4000), img.CoreSize, "and a page of md4's symbols")
	assert.Equal(t, uint64(0xffffffffc052b000), img.Section(".init.text").Addr)
	img, err = m.Link(LinkOptions{Base: base, InitBase: 0xffffffffc0600000, Resolve: func(string) (uint64, bool) { return 0xffffffff81000000, true }})
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffc0600000), img.Section(".init.text").Addr)
}

// TestPageSize: with 64 KiB pages (an arm64 kernel-64k) every group of
// sections starts on a 64 KiB page, init follows core's last page and a
// 64 KiB guard page, a base off such a page is refused, and a page size
// the architecture's kernels do not have is ErrBadPageSize.
func TestPageSize(t *testing.T) {
	m, err := Open(testutil.Corpus(t, "arm64/modules/md4.ko"))
	require.NoError(t, err)
	const base, page = 0xffff800000d00000, 64 << 10
	resolve := func(string) (uint64, bool) { return base - 16<<20, true }
	small, err := m.Link(LinkOptions{Base: base, Resolve: resolve})
	require.NoError(t, err)
	assert.Equal(t, uint64(DefaultPageSize), small.PageSize)
	img, err := m.Link(LinkOptions{Base: base, PageSize: page, Resolve: resolve})
	require.NoError(t, err)
	assert.True(t, img.Linked())
	assert.Equal(t, uint64(page), img.PageSize)
	// md4's groups (as `klpresolve link` lists them with 4 KiB pages:
	// text at +0, read-only data at +0x1000, data at +0x2000, the symbols
	// kallsyms keeps at +0x3000, init text at +0x5000 and its data at
	// +0x6000) move to 64 KiB pages.
	for _, tc := range []struct {
		name       string
		small, big uint64
	}{
		{".text", base, base},
		{".note.gnu.property", base + 0x1000, base + page},
		{".data", base + 0x2080, base + 2*page + 0x80},
		{".init.text", base + 0x5000, base + 5*page}, // core: 4 pages, then the guard page
		{".init.data", base + 0x6000, base + 6*page},
	} {
		assert.Equal(t, tc.small, small.Section(tc.name).Addr, "%s, 4 KiB pages", tc.name)
		assert.Equal(t, tc.big, img.Section(tc.name).Addr, "%s, 64 KiB pages", tc.name)
	}
	assert.Equal(t, uint64(0x4000), small.CoreSize)
	assert.Equal(t, uint64(4*page), img.CoreSize)
	assert.Equal(t, uint64(base+7*page+page), img.Next(), "past init's page and a guard page")

	_, err = m.Link(LinkOptions{Base: base + 0x1000, PageSize: page, Resolve: resolve})
	assert.ErrorIs(t, err, ErrBadBase)
	assert.Contains(t, err.Error(), "is not on a 65536-byte page")
	_, err = m.Link(LinkOptions{PageSize: 8192, Resolve: resolve})
	assert.ErrorIs(t, err, ErrBadPageSize)
	assert.Contains(t, err.Error(), "8192 (arm64 kernels have [4096 16384 65536])")
	x86 := openFixture(t, "got.o")
	_, err = x86.Link(LinkOptions{PageSize: page, Resolve: resolve})
	assert.ErrorIs(t, err, ErrBadPageSize)
	assert.Equal(t, []uint64{4096, 16384, 65536}, PageSizes(elf.EM_AARCH64))
	assert.Equal(t, []uint64{4096}, PageSizes(elf.EM_X86_64))
	assert.Equal(t, []uint64{65536, 4096}, PageSizes(elf.EM_PPC64), "64 KiB first: the default")
	assert.Nil(t, PageSizes(elf.EM_RISCV), "not linked by modplt")
}

// A load address module_alloc() could not return is refused, before any
// relocation is applied: one off a page, or a region that would run past
// the end of the address space (32 bits for arm) and wrap around to 0.
func TestLinkBadBase(t *testing.T) {
	resolve := func(string) (uint64, bool) { return 0xffffffff81000000, true }
	x86, arm := openFixture(t, "got.o"), openFixture(t, "thumb.o")
	for _, tt := range []struct {
		m          *Module
		base, init uint64
		msg        string
	}{
		{x86, 0xffffffffc0000001, 0, "core at 0xffffffffc0000001 is not on a 4096-byte page"},
		{x86, 0xffffffffc0000000, 0xffffffffc0100800, "init at 0xffffffffc0100800 is not on a 4096-byte page"},
		{x86, 0xfffffffffffff000, 0, "core at 0xfffffffffffff000, 0x1000 bytes, runs past the end of the address space (0xffffffffffffffff)"},
		{x86, 0xffffffffc0000000, 0xfffffffffffff000, "init at 0xfffffffffffff000"},
		{arm, 0x100000000, 0, "core at 0x100000000"},
		{arm, 0xfffff000, 0, "runs past the end of the address space (0xffffffff)"},
	} {
		_, err := tt.m.Link(LinkOptions{Base: tt.base, InitBase: tt.init, Resolve: resolve})
		require.ErrorIs(t, err, ErrBadBase, "%#x %#x", tt.base, tt.init)
		assert.ErrorContains(t, err, tt.msg)
	}
	// The highest core that leaves room for init's page after it links.
	img, err := x86.Link(LinkOptions{Base: 0xffffffffffff0000, Resolve: resolve})
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffffff0000), img.Section(".text").Addr)
	assert.Less(t, img.Section(".text").Addr, img.Section(".init.text").Addr, "init after core, not wrapped round to 0")
}

// Linked is every relocation applied and every symbol resolved: an
// unknown symbol no relocation uses still makes insmod refuse the module.
func TestImageLinked(t *testing.T) {
	assert.True(t, (&Image{}).Linked())
	assert.False(t, (&Image{Errors: []*RelocError{{}}}).Linked())
	img := &Image{Unresolved: []string{"only_declared"}}
	assert.True(t, img.OK())
	assert.False(t, img.Linked())
}

// Core (one page, got.o's) just below the last page leaves no room for
// init's guard page and init after it; with init placed by the caller,
// none is needed.
func TestLinkCoreOnLastPage(t *testing.T) {
	m := openFixture(t, "got.o")
	resolve := func(string) (uint64, bool) { return 0xffffffff81000000, true }
	_, err := m.Link(LinkOptions{Base: 0xffffffffffffe000, Resolve: resolve})
	require.ErrorIs(t, err, ErrBadBase)
	img, err := m.Link(LinkOptions{Base: 0xffffffffffffe000, InitBase: 0xffffffffc0000000, Resolve: resolve})
	require.NoError(t, err)
	assert.Equal(t, uint64(0xffffffffffffe000), img.Section(".text").Addr)
}

// TestLinkNoRandomizeBase: without KASLR an arm64 module links while
// every branch is in range, and one out of range finds no PLT slot, as
// module_emit_plt_entry() fails the load on such a 6.1 kernel; with
// KASLR the same branch goes through the PLT.
func TestLinkNoRandomizeBase(t *testing.T) {
	s := newSmall(elf.EM_AARCH64, nil, ".text")
	s.rel(".text", call26(0, s.sym["memset"]), call26(4, s.sym["memcpy"]))
	m, err := Parse("small.ko", s.b.Bytes())
	require.NoError(t, err)
	const base = 0xffff800010000000
	near := func(string) (uint64, bool) { return base - 64<<20, true }
	far := func(name string) (uint64, bool) {
		if name == "memcpy" {
			return base - 256<<20, true // beyond a BL's 128 MiB
		}
		return near(name)
	}

	img, err := m.Link(LinkOptions{Base: base, Resolve: near, NoRandomizeBase: true})
	require.NoError(t, err)
	assert.True(t, img.Linked())
	assert.Equal(t, []int{0, 0}, []int{img.PLTCoreUsed, img.PLTCoreMax})

	img, err = m.Link(LinkOptions{Base: base, Resolve: far, NoRandomizeBase: true})
	require.NoError(t, err)
	require.Len(t, img.Errors, 1)
	assert.ErrorIs(t, img.Errors[0], ErrPLTFull)
	assert.Equal(t, uint64(4), img.Errors[0].Offset, "memcpy's call")
	assert.Contains(t, img.Errors[0].Error(), ".plt has 0 slots: without KASLR, 6.1 reserves none for branches")

	img, err = m.Link(LinkOptions{Base: base, Resolve: far})
	require.NoError(t, err)
	assert.Empty(t, img.Errors)
	assert.Equal(t, []int{1, 2}, []int{img.PLTCoreUsed, img.PLTCoreMax})
}

// TestPercpu: a module's .data..percpu is not loaded with it
// (layout_and_allocate() clears its SHF_ALLOC); its symbols are addressed
// in the per-cpu area percpu_modalloc() gives it: by default where the
// kernel's reserved chunk starts (__per_cpu_end, aligned for the
// section), as Debian's 6.1 kernel placed testdata/oracle's percpu_demo
// (percpu_demo_shared at 0x35000, percpu_demo_hits 8 bytes on).
func TestPercpu(t *testing.T) {
	m, err := Open(filepath.Join(testutil.RepoRoot(), "testdata", "oracle", "percpu-demo.ko"))
	require.NoError(t, err)
	resolve := func(string) (uint64, bool) { return 0xffffffff81000000, true }
	for _, tc := range []struct {
		base, perCPUEnd, want uint64
	}{
		{0, 0x35000, 0x35000},
		{0, 0x35004, 0x35008}, // aligned for the section (8)
		{0x40010, 0x35000, 0x40010},
	} {
		kernel := mapResolver(map[string]uint64{"__per_cpu_end": tc.perCPUEnd})
		img, err := m.Link(LinkOptions{PercpuBase: tc.base, Kernel: kernel, Resolve: resolve})
		require.NoError(t, err)
		require.True(t, img.Linked())
		assert.Nil(t, img.Section(".data..percpu"), "not laid out")
		assert.Equal(t, tc.want, img.Percpu)
		assert.Equal(t, uint64(0x10), img.PercpuSize)
		// percpu_demo_ptr = &percpu_demo_hits: an R_X86_64_64 against the
		// section, in .data.
		assert.Equal(t, tc.want+8, binary.LittleEndian.Uint64(img.Section(".data").Data), "%+v", tc)
	}
}

// TestJumpTableROAfterInit: layout_and_allocate() marks __jump_table
// SHF_RO_AFTER_INIT, so it gets the ro-after-init group's page of its own
// between the read-only data and the writable data, where Debian's 6.1
// kernel put xfs's (testdata/oracle: core at 0xffffffffc0344000, 0x1e1000
// bytes with the symbols kallsyms keeps).
func TestJumpTableROAfterInit(t *testing.T) {
	m, err := Open(testutil.Corpus(t, "amd64/modules/xfs.ko"))
	require.NoError(t, err)
	img, err := m.Link(LinkOptions{Base: 0xffffffffc0344000, Resolve: func(string) (uint64, bool) { return 0xffffffff81000000, true }})
	require.NoError(t, err)
	for name, want := range map[string]uint64{
		".rodata.cst2": 0xffffffffc046f3fc, // the last read-only section
		"__jump_table": 0xffffffffc0470000,
		"__bug_table":  0xffffffffc0473000, // the first writable one
		".data":        0xffffffffc0473240,
	} {
		assert.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", img.Section(name).Addr), name)
	}
	assert.Equal(t, uint64(0x1e1000), img.CoreSize)
}

// TestPLTKernelOrder: PLT entries are handed out as the kernel hands them
// out, in the order it applies the relocations (each executable section
// sorted by type and symbol, arm64's by addend too, after its partition)
// and reusing only the entry made last: .text's call to memset takes the
// first slot, .text.unlikely's calls, sorted, memcpy (the lower symbol
// index) the next and memset another, not .text's (a linker that shared
// entries across sections would). arm's fixed ftrace slots come first.
func TestPLTKernelOrder(t *testing.T) {
	for _, tc := range []struct {
		mach       elf.Machine
		call       uint32
		base, far  uint64
		first, per uint64 // the first ordinary slot's offset, and each slot's
	}{
		{elf.EM_AARCH64, uint32(elf.R_AARCH64_CALL26), 0xffff800000000000, 0xffff800010000000, 0, 12},
		{elf.EM_ARM, uint32(elf.R_ARM_CALL), 0xbf000000, 0xe0000000, 2 * 4, 4},
	} {
		text := make([]byte, 0x100)
		if tc.mach == elf.EM_ARM {
			for i := 0; i < len(text); i += 4 {
				binary.LittleEndian.PutUint32(text[i:], 0xebfffffe) // bl . (addend -8: zero)
			}
		}
		s := newSmall(tc.mach, text, ".text", ".text.unlikely")
		ms, mc := s.sym["memset"], s.sym["memcpy"]
		require.Less(t, mc, ms)
		s.rel(".text", elfobj.Reloc{Offset: 0, Sym: ms, Type: tc.call})
		s.rel(".text.unlikely", elfobj.Reloc{Offset: 0, Sym: ms, Type: tc.call}, elfobj.Reloc{Offset: 4, Sym: mc, Type: tc.call},
			elfobj.Reloc{Offset: 8, Sym: ms, Type: tc.call})
		m, err := Parse("small.ko", s.b.Bytes())
		require.NoError(t, err)
		img, err := m.Link(LinkOptions{Base: tc.base, Resolve: mapResolver(map[string]uint64{"memset": tc.far, "memcpy": tc.far + 0x1000})})
		require.NoError(t, err)
		require.Empty(t, img.Errors)
		plt := img.Section(".plt")
		target := func(sec string, off uint64) uint64 {
			p := img.Section(sec)
			insn := binary.LittleEndian.Uint32(p.Data[off:])
			if tc.mach == elf.EM_ARM {
				return p.Addr + off + 8 + uint64(int64(int32(insn<<8)>>6))
			}
			return arm64BranchTarget(insn, p.Addr+off)
		}
		slot := func(i uint64) uint64 { return plt.Addr + tc.first + i*tc.per }
		assert.Equal(t, slot(0), target(".text", 0), "%v: .text's memset", tc.mach)
		assert.Equal(t, slot(1), target(".text.unlikely", 4), "%v: memcpy", tc.mach)
		assert.Equal(t, slot(2), target(".text.unlikely", 0), "%v: .text.unlikely's memset", tc.mach)
		assert.Equal(t, slot(2), target(".text.unlikely", 8), "%v: its twin", tc.mach)
		fixed := 0
		if tc.mach == elf.EM_ARM {
			fixed = armFixedPLTs
		}
		assert.Equal(t, fixed+3, img.PLTCoreUsed, "%v", tc.mach)
	}
}

// TestAMD64KernelMessages: x86_64's relocation failures in the kernel's
// words, per generation. 6.1 (__apply_relocate_add()) refuses a nonzero
// target before it checks R_X86_64_32S's range, and prints the value
// before it subtracts the place; 6.12 and 7.2 (__write_relocate_add())
// check the range first and print S+A-P; 7.2 names the relocation
// section's index and the relocation's, and the place's address.
func TestAMD64KernelMessages(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: []byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, Addralign: 16})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "ext", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	rela := b.AddRelocs(".rela.text", true, text, []elfobj.Reloc{
		{Offset: 0, Sym: ext, Type: uint32(elf.R_X86_64_PC32), Addend: -4},           // nonzero target
		{Offset: 4, Sym: ext, Type: uint32(elf.R_X86_64_32S), Addend: 0},             // nonzero and out of range
		{Offset: 8, Sym: ext, Type: uint32(elf.R_X86_64_32), Addend: 0},              // out of range
		{Offset: 8, Sym: ext, Type: uint32(elf.R_X86_64_GOTPC32_TLSDESC), Addend: 0}, // unknown
	})
	m, err := Parse("fix_patch.ko", b.Bytes())
	require.NoError(t, err)
	const s = 0xffffffff7f000000 // ext: 2 GiB and more below 0, so fits neither 32 nor 32S
	const p = 0xffffffffc0000000 // .text
	for _, tc := range []struct {
		g     kgen.Generation
		kinds []error
		says  []string
	}{
		{kgen.Linux6_1, []error{ErrNonZeroTarget, ErrNonZeroTarget, ErrOutOfRange, ErrUnsupported}, []string{
			"x86/modules: Skipping invalid relocation target, existing value is nonzero for type 2, loc %p, val ffffffff7efffffc",
			"x86/modules: Skipping invalid relocation target, existing value is nonzero for type 11, loc %p, val ffffffff7f000000",
			"overflow in relocation type 10 val ffffffff7f000000; `fix_patch' likely not compiled with -mcmodel=kernel",
			"fix_patch: Unknown rela relocation: 34",
		}},
		{kgen.Linux6_12, []error{ErrNonZeroTarget, ErrOutOfRange, ErrOutOfRange, ErrUnsupported}, []string{
			"x86/modules: Invalid relocation target, existing value is nonzero for type 2, loc %p, val ffffffffbefffffc",
			"overflow in relocation type 11 val ffffffff7f000000; `fix_patch' likely not compiled with -mcmodel=kernel",
			"overflow in relocation type 10 val ffffffff7f000000; `fix_patch' likely not compiled with -mcmodel=kernel",
			"fix_patch: Unknown rela relocation: 34",
		}},
		{kgen.Linux7_2, []error{ErrNonZeroTarget, ErrOutOfRange, ErrOutOfRange, ErrUnsupported}, []string{
			fmt.Sprintf("x86/modules: Invalid relocation target, existing value is nonzero for sec %d, idx 0, type 2, loc ffffffffc0000000, val ffffffffbefffffc", rela),
			fmt.Sprintf("overflow in relocation type 11 val ffffffff7f000000 sec %d idx 1; `fix_patch' likely not compiled with -mcmodel=kernel", rela),
			fmt.Sprintf("overflow in relocation type 10 val ffffffff7f000000 sec %d idx 2; `fix_patch' likely not compiled with -mcmodel=kernel", rela),
			"fix_patch: Unknown rela relocation: 34",
		}},
	} {
		img, err := m.Link(LinkOptions{Generation: tc.g, Base: p, Resolve: mapResolver(map[string]uint64{"ext": s})})
		require.NoError(t, err)
		require.Len(t, img.Errors, 4, "%s", tc.g)
		for i, e := range img.Errors {
			assert.ErrorIs(t, e, tc.kinds[i], "%s %d", tc.g, i)
			assert.Equal(t, tc.says[i], e.Kernel, "%s %d", tc.g, i)
		}
	}
}
