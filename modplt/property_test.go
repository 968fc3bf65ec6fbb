// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/reference"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// genModule writes a random module of machine m: a few text sections
// (core and init), symbols undefined, local to each section, and section
// symbols; each section's relocations are branches (with mostly zero
// addends) mixed with other types, and some sections hold nothing but
// branches that need a PLT (the arm64 partition's quirk).
func genModule(r *rand.Rand, m elf.Machine) []byte {
	is64 := m != elf.EM_ARM
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: m}
	if !is64 {
		b.Class = elf.ELFCLASS32
	}
	var branches, others []uint32
	switch m {
	case elf.EM_AARCH64:
		branches = []uint32{uint32(elf.R_AARCH64_CALL26), uint32(elf.R_AARCH64_JUMP26)}
		others = []uint32{uint32(elf.R_AARCH64_ABS64), uint32(elf.R_AARCH64_ADR_PREL_PG_HI21), uint32(elf.R_AARCH64_ADD_ABS_LO12_NC)}
	case elf.EM_ARM:
		branches = []uint32{uint32(elf.R_ARM_CALL), uint32(elf.R_ARM_JUMP24), uint32(elf.R_ARM_PC24), uint32(elf.R_ARM_THM_PC22), uint32(elf.R_ARM_THM_JUMP24)}
		others = []uint32{uint32(elf.R_ARM_ABS32), uint32(elf.R_ARM_MOVW_ABS_NC)}
	case elf.EM_X86_64:
		branches = []uint32{uint32(elf.R_X86_64_GOTPCREL), uint32(elf.R_X86_64_GOTPCRELX), uint32(elf.R_X86_64_REX_GOTPCRELX), uint32(elf.R_X86_64_PLT32)}
		others = []uint32{uint32(elf.R_X86_64_64), uint32(elf.R_X86_64_32S)}
	case elf.EM_S390:
		b.Order = binary.BigEndian
		branches = []uint32{uint32(elf.R_390_PLT32DBL), uint32(elf.R_390_GOTENT), uint32(elf.R_390_GOT20)}
		others = []uint32{uint32(elf.R_390_64), uint32(elf.R_390_PC32DBL)}
	case elf.EM_PPC64:
		branches = []uint32{uint32(elf.R_PPC64_REL24)}
		others = []uint32{uint32(elf.R_PPC64_ADDR64), uint32(elf.R_PPC64_TOC16_LO)}
	}
	names := []string{".text", ".text.unlikely", ".init.text", ".exit.text", ".text.hot"}
	nsec := 1 + r.IntN(len(names))
	const textSize = 4096
	var secs []int
	for i := range nsec {
		text := make([]byte, textSize)
		if !is64 {
			// Branch instructions whose addend fields are mostly the PC
			// bias (a zero addend) and sometimes not.
			for off := 0; off < textSize; off += 4 {
				arm := uint32(0xebfffffe) // bl with imm24 = -2 words
				if r.IntN(4) == 0 {
					arm = 0xeb000000 | uint32(r.IntN(3))
				}
				thumbHi, thumbLo := uint16(0xf7ff), uint16(0xfffe)
				if r.IntN(4) == 0 {
					thumbHi, thumbLo = 0xf000, 0xf800|uint16(r.IntN(3))
				}
				if off%8 == 0 {
					binary.LittleEndian.PutUint32(text[off:], arm)
				} else {
					binary.LittleEndian.PutUint16(text[off:], thumbHi)
					binary.LittleEndian.PutUint16(text[off+2:], thumbLo)
				}
			}
		}
		secs = append(secs, b.AddSection(elfobj.BuildSection{Name: names[i], Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: text, Addralign: 4}))
	}
	data := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 8})
	switch m {
	case elf.EM_S390: // s390's PLT is no section
	case elf.EM_PPC64:
		b.AddSection(elfobj.BuildSection{Name: ".stubs", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addralign: 8})
	default:
		b.AddSection(elfobj.BuildSection{Name: ".plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
		b.AddSection(elfobj.BuildSection{Name: ".init.plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Size: 1})
	}
	var syms []uint32
	for _, s := range secs {
		syms = append(syms, b.AddSymbol(elfobj.BuildSymbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint16(s)}))
		for k := range 2 {
			syms = append(syms, b.AddSymbol(elfobj.BuildSymbol{Name: fmt.Sprintf("local%d_%d", s, k), Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_FUNC), Shndx: uint16(s), Value: uint64(8 * k)}))
		}
	}
	for k := range 1 + r.IntN(6) {
		syms = append(syms, b.AddSymbol(elfobj.BuildSymbol{Name: fmt.Sprintf("ext%d", k), Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)}))
	}
	for i, s := range secs {
		onlyBranches := r.IntN(3) == 0
		n := r.IntN(40)
		var rs []elfobj.Reloc
		for range n {
			off := uint64(r.IntN(textSize/8)) * 8
			if !is64 && r.IntN(2) == 0 {
				off += 4 // a Thumb instruction
			}
			rel := elfobj.Reloc{Offset: off, Sym: syms[r.IntN(len(syms))]}
			if onlyBranches || r.IntN(3) > 0 {
				rel.Type = branches[r.IntN(len(branches))]
				if !is64 { // the instruction decides the addend: pick the matching form
					if off%8 == 0 {
						rel.Type = branches[r.IntN(3)]
					} else {
						rel.Type = branches[3+r.IntN(2)]
					}
				} else if r.IntN(6) == 0 {
					rel.Addend = int64(r.IntN(3)) * 4
				}
			} else {
				rel.Type = others[r.IntN(len(others))]
			}
			rs = append(rs, rel)
		}
		b.AddRelocs(".rel"+map[bool]string{true: "a", false: ""}[is64]+names[i], is64, s, rs)
	}
	b.AddRelocs(".rela.data", is64, data, []elfobj.Reloc{{Offset: 0, Sym: syms[0], Type: others[0]}})
	return b.Bytes()
}

// TestARM64KernelModeMatchesPort: kernel mode (which does not sort)
// gives what the faithful port of module_frob_arch_sections() gives, on
// random modules.
func TestARM64KernelModeMatchesPort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		data := genModule(r, elf.EM_AARCH64)
		m, err := Parse(fmt.Sprintf("gen%d", i), data)
		require.NoError(t, err)
		c, err := m.Count(Options{})
		require.NoError(t, err)
		core, init, err := reference.KernelARM64PLTs(m.f)
		require.NoError(t, err)
		require.Equal(t, core, c.PLTCore, "module %d core", i)
		require.Equal(t, init, c.PLTInit, "module %d init", i)
	}
}

// TestARM64KernelModeMatchesPortCorpus does the same on the real modules.
func TestARM64KernelModeMatchesPortCorpus(t *testing.T) {
	mods, _ := filepath.Glob(filepath.Join(testutil.Corpus(t, "arm64/modules"), "*.ko"))
	require.NotEmpty(t, mods)
	for _, p := range mods {
		m, err := Open(p)
		require.NoError(t, err)
		c, err := m.Count(Options{})
		require.NoError(t, err)
		core, init, err := reference.KernelARM64PLTs(m.f)
		require.NoError(t, err)
		require.Equal(t, []int{core, init}, []int{c.PLTCore, c.PLTInit}, p)
	}
}

// TestARMKernelFastPathMatchesSort: for every section, the order-free
// count equals the kernel's heapsort-then-count, whenever the fast path
// applies (and kernel mode uses the sort otherwise).
func TestARMKernelFastPathMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	mixed := 0
	for i := range 2000 {
		m, err := Parse(fmt.Sprintf("gen%d", i), genModule(r, elf.EM_ARM))
		require.NoError(t, err)
		c, err := m.Count(Options{})
		require.NoError(t, err)
		for _, sc := range c.Sections {
			if !sc.Exec {
				continue
			}
			w := sectionFor(t, m, sc.Name)
			sorted, err := armKernelSorted(m, w)
			require.NoError(t, err)
			require.Equal(t, sorted, sc.PLT, "module %d section %s", i, sc.Name)
			cc := &counter{m: m, nsym: len(m.f.Symbols)}
			serial := cc.nextSerial()
			for j := range w.cands {
				if cc.markGroup(&w.cands[j], serial) == groupMixed {
					mixed++
					break
				}
			}
		}
	}
	require.Greater(t, mixed, 100, "the generator must produce sections that need the sort")
}

// sectionFor collects the candidates of one section the way Count does.
func sectionFor(t *testing.T, m *Module, name string) *sectionWork {
	s := m.f.SectionByName(name)
	tab, err := m.f.RelocTable(s)
	require.NoError(t, err)
	w := &sectionWork{table: tab, text: m.f.SectionData(tab.Target()), relocs: tab.Len()}
	for j := range w.relocs {
		rel, err := tab.Reloc(j)
		require.NoError(t, err)
		k, slot, entry := m.arch.kind(rel.Type)
		if k != kindBranch && k != kindGOT || uint32(m.f.Symbols[rel.Sym].Shndx) == s.Info && k != kindGOT {
			continue
		}
		a, z, err := m.arch.addend(m, w.text, rel)
		require.NoError(t, err)
		w.cands = append(w.cands, candidate{typ: rel.Type, sym: rel.Sym, addend: a, slot: slot, entry: entry, zero: z})
	}
	return w
}

// TestOptimalIsSafeAndNeverAboveKernel emits an entry for every candidate
// of every section, sharing entries per region the way modplt's emitter
// does (by entry kind, symbol and addend), and checks that the optimal
// count always has room, and is never above kernel mode.
func TestOptimalIsSafeAndNeverAboveKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, mach := range []elf.Machine{elf.EM_AARCH64, elf.EM_ARM, elf.EM_X86_64} {
		for i := range 1000 {
			m, err := Parse(fmt.Sprintf("gen%d", i), genModule(r, mach))
			require.NoError(t, err)
			for _, erratum := range []bool{false, true} {
				k, err := m.Count(Options{Erratum843419: erratum})
				require.NoError(t, err)
				o, err := m.Count(Options{Mode: ModeOptimal, Erratum843419: erratum})
				require.NoError(t, err)
				require.LessOrEqual(t, o.PLTCore, k.PLTCore)
				require.LessOrEqual(t, o.PLTInit, k.PLTInit)
				require.LessOrEqual(t, o.GOT, k.GOT)
				type key struct {
					region Region
					entry  uint8
					sym    uint32
					addend int64
				}
				used := map[key]bool{}
				slots := [2]int{}
				for _, sc := range o.Sections {
					if !sc.Exec {
						continue
					}
					w := sectionFor(t, m, sc.Name)
					for _, c := range w.cands {
						kk := key{sc.Region, c.entry, c.sym, c.addend}
						if mach == elf.EM_X86_64 {
							kk.region = Core // one GOT
						}
						if !used[kk] {
							used[kk] = true
							slots[kk.region]++
						}
					}
					slots[sc.Region] += sc.Veneers
				}
				if mach == elf.EM_X86_64 {
					require.Equal(t, slots[Core], o.GOT, "module %d", i)
					continue
				}
				require.LessOrEqual(t, slots[Core], o.PLTCore-o.FixedPLTs, "module %d core", i)
				require.LessOrEqual(t, slots[Init], o.PLTInit-o.FixedPLTs, "module %d init", i)
			}
		}
	}
}

// The parallel optimal-mode count gives exactly the sequential one (every
// figure, each section credited with the targets first seen in it), with
// pieces cut small enough to split every section several times, on
// random modules of each architecture (with and without the erratum) and
// on every corpus module.
func TestOptimalParallelMatchesSequential(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	check := func(m *Module, erratum bool, pieces ...int) {
		seq, err := m.Count(Options{Mode: ModeOptimal, Erratum843419: erratum, serial: true})
		require.NoError(t, err)
		for _, piece := range pieces {
			par, err := m.Count(Options{Mode: ModeOptimal, Erratum843419: erratum, pieceRelocs: piece})
			require.NoError(t, err)
			require.Equal(t, seq, par, "%s erratum=%v piece=%d", m.Path, erratum, piece)
		}
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, mach := range []elf.Machine{elf.EM_AARCH64, elf.EM_ARM, elf.EM_X86_64} {
		for i := range 300 {
			m, err := Parse(fmt.Sprintf("gen%d", i), genModule(r, mach))
			require.NoError(t, err)
			check(m, i%2 == 0, 0, 1, 7, 100)
		}
	}
	for _, dir := range []string{"amd64", "arm64", "armhf"} {
		mods, err := filepath.Glob(filepath.Join(testutil.Corpus(t, dir), "modules", "*.ko"))
		require.NoError(t, err)
		for _, p := range mods {
			m, err := Open(p)
			require.NoError(t, err)
			check(m, dir == "arm64", 0, 999)
		}
	}
}
