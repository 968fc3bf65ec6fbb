// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kgen"
)

// TestARM64Generations: what arm64's loader does by generation.
// count_plts() skips branches without CONFIG_RANDOMIZE_BASE in 6.1 only;
// module_init_ftrace_plt() fills two ftrace PLT entries in
// .text.ftrace_trampoline in 6.1, one in it and one in
// .init.text.ftrace_trampoline from 6.12; a 6.1 module lacks the init
// one, which a 6.12 kernel refuses (MissingFtracePLT), and Debian's
// 6.12 modules have both.
func TestARM64Generations(t *testing.T) {
	m, err := Open(testutil.Corpus(t, "arm64/modules/btrfs.ko"))
	require.NoError(t, err)
	kaslr, err := m.Count(Options{})
	require.NoError(t, err)
	require.Greater(t, kaslr.PLTCore, 100)
	old, err := m.Count(Options{NoRandomizeBase: true})
	require.NoError(t, err)
	assert.True(t, old.NoRandomizeBase)
	assert.Zero(t, old.PLTCore, "6.1 without KASLR: no branch counted")
	for _, g := range []kgen.Generation{kgen.Linux6_12, kgen.Linux7_2} {
		c, err := m.Count(Options{NoRandomizeBase: true, Generation: g})
		require.NoError(t, err)
		assert.False(t, c.NoRandomizeBase, g)
		assert.Equal(t, kaslr.PLTCore, c.PLTCore, "%s counts every branch", g)
		assert.Equal(t, kaslr.PLTInit, c.PLTInit, g)
	}

	md4, err := Open(testutil.Corpus(t, "arm64/modules/md4.ko"))
	require.NoError(t, err)
	assert.Empty(t, MissingFtracePLT(md4.f.Machine, md4.f.HasSection, kgen.Linux6_1))
	assert.Equal(t, ".init.text.ftrace_trampoline", MissingFtracePLT(md4.f.Machine, md4.f.HasSection, kgen.Linux6_12))
	const base, caller = 0xffff800000d00000, 0xffff800008010000
	kernel := func(name string) (uint64, bool) {
		return caller, name == "ftrace_caller" || name == "ftrace_regs_caller"
	}
	resolve := func(string) (uint64, bool) { return base - 16<<20, true }
	for _, tc := range []struct {
		gen     kgen.Generation
		entries uint64
	}{{kgen.Linux6_1, 2}, {kgen.Linux6_12, 1}} {
		img, err := md4.Link(LinkOptions{Base: base, Resolve: resolve, Kernel: kernel, Generation: tc.gen})
		require.NoError(t, err)
		tramp := img.Section(".text.ftrace_trampoline")
		require.NotNil(t, tramp)
		assert.Equal(t, tc.entries*arm64PLTEntry, tramp.Size, "%s", tc.gen)
		// Each entry branches to ftrace_caller: ADRP x16 first.
		for i := range tc.entries {
			assert.Equal(t, uint32(0x90000010), binary.LittleEndian.Uint32(tramp.Data[12*i:])&0x9f00001f, "%s entry %d", tc.gen, i)
		}
	}

	mods, _ := filepath.Glob(filepath.Join(testutil.DebianKernelModules(t, "6.12", "arm64"), "fs/configfs/configfs.ko*"))
	require.Len(t, mods, 1)
	cfs, err := Open(mods[0])
	require.NoError(t, err)
	assert.Empty(t, MissingFtracePLT(cfs.f.Machine, cfs.f.HasSection, kgen.Linux6_12), "Debian's 6.12 modules have both trampolines")
	img, err := cfs.Link(LinkOptions{Base: base, Resolve: resolve, Kernel: kernel, Generation: kgen.Linux6_12})
	require.NoError(t, err)
	for _, name := range []string{".text.ftrace_trampoline", ".init.text.ftrace_trampoline"} {
		s := img.Section(name)
		require.NotNil(t, s, name)
		assert.Equal(t, uint64(arm64PLTEntry), s.Size, name)
	}
}

// oracleSections reads a testdata/oracle/GEN-ARCH/NAME.sections record:
// where the booted kernel put each of the module's sections.
func oracleSections(t *testing.T, path string) map[string]uint64 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]uint64{}
	for l := range strings.Lines(string(b)) {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "section" {
			addr, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			require.NoError(t, err, l)
			out[f[1]] = addr
		}
	}
	return out
}

// TestMemLayoutOracle: Debian's 6.12 and 7.2 kernels, booted under qemu
// (testdata/oracle/gen.mk), put each section of the modules they loaded
// where memLayout does: by kind of memory, each kind a block of its own.
// Each block's base is taken from where the kernel put its first section
// (vmalloc may reuse space a module's freed init left); every other
// section of the block must then be where the kernel put it. And where
// the kernel's blocks follow one another (the first module loaded, and
// md4), they do as memLayout chains them: each past the one before and
// a guard page.
func TestMemLayoutOracle(t *testing.T) {
	for _, tc := range []struct {
		gen  kgen.Generation
		arch string
		// chained: modules whose blocks the kernel put one after another.
		chained []string
	}{
		{kgen.Linux6_12, "amd64", []string{"crc32c_generic", "md4"}},
		{kgen.Linux7_2, "amd64", []string{"md4"}},
		{kgen.Linux6_12, "arm64", nil},
		{kgen.Linux7_2, "arm64", nil},
	} {
		name := tc.gen.String() + "-" + tc.arch
		t.Run(name, func(t *testing.T) {
			testutil.LightKernel(t, tc.gen.String(), tc.arch)
			records, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata/oracle", name, "*.sections"))
			if len(records) == 0 {
				t.Skipf("no records in testdata/oracle/%s", name)
			}
			mods := testutil.DebianKernelModules(t, tc.gen.String(), tc.arch)
			checked := 0
			for _, rec := range records {
				mod := strings.TrimSuffix(filepath.Base(rec), ".sections")
				want := oracleSections(t, rec)
				files, _ := filepath.Glob(filepath.Join(mods, "*", "*", mod+".ko*"))
				files2, _ := filepath.Glob(filepath.Join(mods, "*", mod+".ko*"))
				files = append(files, files2...)
				files3, _ := filepath.Glob(filepath.Join(mods, "*", "*", "*", mod+".ko*"))
				files = append(files, files3...)
				require.Len(t, files, 1, "%s's file under %s", mod, mods)
				m, err := Open(files[0])
				require.NoError(t, err)
				resolve := func(string) (uint64, bool) { return want[".text"] - 16<<20, true }
				// A first guess: MOD_TEXT on .text's page (where the PLT
				// or the ftrace trampolines are not before it).
				lo := LinkOptions{Base: want[".text"] &^ (DefaultPageSize - 1), Resolve: resolve, Generation: tc.gen}
				img, err := m.Link(lo)
				require.NoError(t, err, mod)
				// Each block's base from its first section's place.
				lo.MemBase = map[MemType]uint64{}
				for _, p := range img.Sections {
					if _, ok := lo.MemBase[p.Mem]; ok || p.Index < 0 {
						continue
					}
					if a, ok := want[p.Name]; ok {
						lo.MemBase[p.Mem] = a &^ (img.PageSize - 1)
					}
				}
				lo.Base = lo.MemBase[MemText]
				chained := slices.Contains(tc.chained, mod)
				if chained && roxTextCache(tc.gen, m.arch.machine) {
					// Two chains: the text in the ROX cache, the rest
					// wherever vmalloc has room: its first block from
					// the kernel's record too.
					clo := lo
					clo.MemBase = map[MemType]uint64{MemData: lo.MemBase[MemData]}
					img, err = m.Link(clo)
					require.NoError(t, err, mod)
				}
				if chained {
					for tp, b := range lo.MemBase {
						p := img.Sections[slices.IndexFunc(img.Sections, func(p *Placed) bool { return p.Mem == tp })]
						assert.Equal(t, b, p.Addr&^(img.PageSize-1), "%s: %s chained", mod, tp)
					}
				}
				img, err = m.Link(lo)
				require.NoError(t, err, mod)
				for _, p := range img.Sections {
					a, ok := want[p.Name]
					if !ok {
						continue
					}
					assert.Equal(t, fmt.Sprintf("%#x", a), fmt.Sprintf("%#x", p.Addr), "%s: %s (%s)", mod, p.Name, p.Mem)
					checked++
				}
			}
			t.Logf("%d sections of %d modules where the kernel put them", checked, len(records))
		})
	}
}

// TestARMUnwindGenerations: 7.2's arm loader, with CONFIG_ARM_UNWIND and
// without CONFIG_VMSPLIT_3G (LinkOptions.ARMUnwindText), lays the unwind
// sections out with the code (MOD_TEXT), where 6.12 and a 3G split keep
// them read-only data; .ARM.exidx.init.text stays init.
func TestARMUnwindGenerations(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS32, Order: binary.LittleEndian, Machine: elf.EM_ARM, Flags: 0x05000000}
	b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 64), Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".init.text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".rodata", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 8), Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".ARM.exidx", Type: shtARMExidx, Flags: elf.SHF_ALLOC | elf.SHF_INFO_LINK, Data: make([]byte, 16), Addralign: 4, Link: 1})
	b.AddSection(elfobj.BuildSection{Name: ".ARM.extab", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 8), Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".ARM.exidx.init.text", Type: shtARMExidx, Flags: elf.SHF_ALLOC | elf.SHF_INFO_LINK, Data: make([]byte, 8), Addralign: 4, Link: 2})
	b.AddSection(elfobj.BuildSection{Name: ".plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addralign: 4})
	b.AddSection(elfobj.BuildSection{Name: ".init.plt", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addralign: 4})
	m, err := Parse("unwind.ko", b.Bytes())
	require.NoError(t, err)
	for _, tc := range []struct {
		g                kgen.Generation
		unwindText       bool
		exidx, exidxInit MemType
	}{
		{kgen.Linux6_12, true, MemRodata, MemInitRodata},
		{kgen.Linux7_2, false, MemRodata, MemInitRodata},
		{kgen.Linux7_2, true, MemText, MemInitText},
	} {
		img, err := m.Link(LinkOptions{Generation: tc.g, ARMUnwindText: tc.unwindText})
		require.NoError(t, err)
		name := fmt.Sprintf("%s unwind-as-text=%v", tc.g, tc.unwindText)
		assert.Equal(t, tc.exidx, img.Section(".ARM.exidx").Mem, name)
		assert.Equal(t, tc.exidx, img.Section(".ARM.extab").Mem, name)
		assert.Equal(t, tc.exidxInit, img.Section(".ARM.exidx.init.text").Mem, name)
		assert.Equal(t, MemRodata, img.Section(".rodata").Mem, name)
		if tc.exidx == MemText {
			text := img.Section(".text")
			assert.Greater(t, img.Section(".ARM.exidx").Addr, text.Addr, "after .text, in its block")
		}
	}
}

// TestPercpuTemplate7_2: from 7.2 apply_relocations() applies the
// per-cpu section's relocations to its template, which percpu_modcopy()
// copies to each CPU's area; 6.12 skips them, so a per-cpu pointer
// initialised to an address stays 0 there.
func TestPercpuTemplate7_2(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: []byte{0xc3}, Addralign: 16})
	pcpu := b.AddSection(elfobj.BuildSection{Name: ".data..percpu", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 16), Addralign: 8})
	ext := b.AddSymbol(elfobj.BuildSymbol{Name: "ext_table", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT)})
	b.AddRelocs(".rela.data..percpu", true, pcpu, []elfobj.Reloc{{Offset: 8, Sym: ext, Type: uint32(elf.R_X86_64_64), Addend: 0x10}})
	m, err := Parse("pcpu.ko", b.Bytes())
	require.NoError(t, err)
	resolve := mapResolver(map[string]uint64{"ext_table": 0xffffffff82000000})
	for _, g := range kgen.Known() {
		img, err := m.Link(LinkOptions{Generation: g, PercpuBase: 0x35000, Resolve: resolve})
		require.NoError(t, err)
		require.Empty(t, img.Errors)
		assert.Nil(t, img.Section(".data..percpu"), "%s: not laid out with the module", g)
		if g < kgen.Linux7_2 {
			assert.Nil(t, img.PercpuTemplate, "%s", g)
			assert.Equal(t, 0, img.Relocs, "%s", g)
			continue
		}
		require.NotNil(t, img.PercpuTemplate)
		assert.Equal(t, 1, img.Relocs)
		assert.Equal(t, uint64(0x35000), img.PercpuTemplate.Addr)
		assert.Equal(t, uint64(0xffffffff82000010), binary.LittleEndian.Uint64(img.PercpuTemplate.Data[8:]))
	}
}
