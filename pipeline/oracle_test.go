// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// The kernel oracle (testdata/oracle): Debian's 6.1 amd64, arm64, ppc64el,
// armhf and s390x kernels, booted under qemu, loaded these modules, and what they
// did is recorded in testdata/oracle/ARCH: where each section went
// (sysfs), the size of each module's core (/proc/modules), its per-cpu
// area, and a digest of the bytes at every relocation site the kernel
// wrote and left alone afterwards. TestKernelOracle links each module as
// klpresolve does and compares.

var oracleDumps = flag.String("oracle.dumps", "", "rewrite testdata/oracle/ARCH (-oracle.arch) from a kernel run's dumps (testdata/oracle/Makefile)")
var oracleArch = flag.String("oracle.arch", "amd64", "the kernel run -oracle.dumps are of (a folder of testdata/oracle): amd64, arm64, arm64-kaslr, arm64-a53, ppc64el, armhf or s390x")

// oracleCase is a module the kernel loaded, dumped as name: absent are the
// objects not yet loaded then (the livepatch module is dumped three times,
// before and after each module it patches loads).
type oracleCase struct {
	name, path, module string
	absent             []string
	// firstPercpu: the module's per-cpu area is the reserved chunk's
	// first, where Link puts it by default.
	firstPercpu bool
}

// oracleArches are the kernel runs asked, by the release each booted:
// Debian's 6.1 amd64, arm64, ppc64el, armhf and s390x kernels (the
// corpus's builds, and bookworm's own s390x build), and arm64 twice more
// with KASLR, which puts modules out of branch range of the kernel: on a
// Cortex-A57, and on a Cortex-A53, whose erratum 843419 the kernel works
// around (arm64-kaslr and arm64-a53 are runs of arch arm64: oracleArchOf).
var oracleArches = map[string]string{"amd64": "6.1.0-57-amd64", "arm64": "6.1.0-57-arm64", "arm64-kaslr": "6.1.0-57-arm64",
	"arm64-a53": "6.1.0-57-arm64", "ppc64el": "6.1.0-57-powerpc64le", "armhf": "6.1.0-50-armmp", "s390x": testutil.S390XRelease}

// oracleArchOf is the architecture of a kernel run.
func oracleArchOf(run string) string {
	arch, _, _ := strings.Cut(run, "-")
	return arch
}

func oracleCases(t *testing.T, arch string) []oracleCase {
	if arch == "ppc64el" || arch == "s390x" {
		// (their modules are in the kernel's package, which CI fetches:
		// testutil.PPC64EL, testutil.S390X)
		// Each asks for its own kernel only: s390x's run does not skip
		// for want of the ppc64el one.
		var kernel string
		if arch == "s390x" {
			kernel = filepath.Join(testutil.S390X(t), "lib", "modules", testutil.S390XRelease, "kernel")
		} else {
			kernel = filepath.Join(testutil.PPC64EL(t), "lib", "modules", testutil.PPC64ELRelease, "kernel")
		}
		var cs []oracleCase
		for _, m := range []string{"crypto/md4", "lib/crc-t10dif", "net/key/af_key", "fs/xfs/xfs"} {
			name := strings.ReplaceAll(filepath.Base(m), "-", "_")
			cs = append(cs, oracleCase{name: name, path: filepath.Join(kernel, m+".ko"), module: name})
		}
		return cs
	}
	// (Debian's arm64 and armhf 6.1 have no livepatch: real modules only,
	// the corpus's; arm64's btrfs after zstd_compress, raid6_pq, xor and
	// libcrc32c, its amdgpu and armhf's nouveau after drm and its
	// helpers.)
	if ms := map[string][]string{
		"arm64": {"md4", "crc-t10dif", "llc2", "chacha_generic", "btrfs", "amdgpu"},
		"armhf": {"md4", "af_key", "crct10dif-arm-ce", "libpoly1305", "industrialio-triggered-buffer", "nouveau"},
	}[oracleArchOf(arch)]; ms != nil {
		var cs []oracleCase
		for _, m := range ms {
			name := strings.ReplaceAll(m, "-", "_") // (every module is dumped by its name)
			cs = append(cs, oracleCase{name: name, path: testutil.Corpus(t, oracleArchOf(arch)+"/modules/"+m+".ko"), module: name})
		}
		return cs
	}
	root := testutil.RepoRoot()
	kb := filepath.Join(root, "testdata", "kbuild", "klp-demo.ko")
	return []oracleCase{
		{name: "percpu-demo", path: filepath.Join(root, "testdata", "oracle", "percpu-demo.ko"), module: "percpu_demo", firstPercpu: true},
		{name: "klp-demo", path: kb, module: "klp_demo", absent: []string{"ext4", "xfs"}},
		{name: "klp-demo+ext4", path: kb, module: "klp_demo", absent: []string{"xfs"}},
		{name: "klp-demo+ext4+xfs", path: kb, module: "klp_demo"},
		{name: "xfs", path: testutil.Corpus(t, "amd64/modules/xfs.ko"), module: "xfs"},
		{name: "md4", path: testutil.Corpus(t, "amd64/modules/md4.ko"), module: "md4"},
		{name: "crc-t10dif", path: testutil.Corpus(t, "amd64/modules/crc-t10dif.ko"), module: "crc_t10dif"},
		{name: "af_key", path: testutil.Corpus(t, "amd64/modules/af_key.ko"), module: "af_key"},
	}
}

// oracle is what the kernel did with one module (a NAME.oracle file).
type oracle struct {
	module     string
	core, size uint64
	percpu     uint64            // 0: the module has no per-cpu area
	sections   map[string]uint64 // sysfs: every section it loaded
	sites      map[string]string // relocated section: "count digest"
	changed    map[string]bool   // "section+0xoff": changed at run time
	whole      map[string]string // oracleWhole section: "length digest"
}

// oracleWhole are the sections the loader itself fills, compared whole:
// arm and arm64's PLT (the kernel's slots in its order, arm's fixed ftrace
// slots, the ldr blocks' literal pools), powerpc's stubs and arm64's
// ftrace trampolines. Each runs from its address to the next section's, or
// core's end (the gap is zero in both: move_module() clears core).
// oracleHead is what core holds before its first section: s390's GOT and
// PLT.
var oracleWhole = []string{oracleHead, ".plt", ".stubs", ".text.ftrace_trampoline"}

const oracleHead = "(head)"

// wholeSpan is where oracleWhole's section name runs in a layout (addr:
// every section's address; core and its size): its address and length,
// or 0, 0 where it is not in core.
func wholeSpan(name string, addr map[string]uint64, core, size uint64) (uint64, uint64) {
	a, ok := addr[name]
	if name == oracleHead {
		a, ok = core, true
	}
	if !ok || a < core || a >= core+size {
		return 0, 0
	}
	end := core + size
	for _, x := range addr {
		if x >= a && x < end && (x > a || name == oracleHead) {
			end = x
		}
	}
	return a, end - a
}

// siteSet is the relocation sites the oracle compares, by section.
type siteSet map[string]*siteDigest

// siteDigest is a section's sites: their count and the xxhash of their
// bytes, in the file's relocation order.
type siteDigest struct {
	n int
	h *xxhash.Digest
}

func (d *siteDigest) String() string { return fmt.Sprintf("%d %016x", d.n, d.h.Sum64()) }

// memory reads n bytes of a module's core at addr (nil: not in core).
type memory func(addr uint64, n int) []byte

// oracleSkip are sections the kernel rewrites or reorders after it
// applies their relocations: ftrace_process_locs() sorts __mcount_loc
// (and arm64's __patchable_function_entries), post_relocation() the
// exception table, unwind_module_init() the ORC tables,
// jump_label_add_module() the jump table, and static_call_add_module()
// sets flags in each site's key.
var oracleSkip = map[string]bool{"__mcount_loc": true, "__patchable_function_entries": true, "__ex_table": true,
	".orc_unwind_ip": true, ".orc_unwind": true, "__jump_table": true, ".static_call_sites": true}

// rewritten are the code ranges the kernel patches after relocating
// them, read from the module's own tables in mem: ftrace's call sites
// (NOPs), return thunks, retpolines, static calls, alternatives and
// paravirt sites.
func rewritten(f *elfobj.File, addr map[string]uint64, mem memory) [][2]uint64 {
	var out [][2]uint64
	table := func(name string) (uint64, []byte) {
		s := f.SectionByName(name)
		a, ok := addr[name]
		if s == nil || !ok {
			return 0, nil
		}
		return a, mem(a, int(s.Size))
	}
	le := f.Order
	if _, b := table("__mcount_loc"); b != nil {
		// Addresses of the calls: x86's 5-byte call, s390's 6-byte brcl,
		// a 4-byte bl elsewhere (ARM's to __gnu_mcount_nc on 32 bits).
		step, call := 8, uint64(4)
		if !f.Is64() {
			step = 4
		}
		switch f.Machine {
		case elf.EM_X86_64:
			call = 5
		case elf.EM_S390:
			call = 6
		}
		for i := 0; i+step <= len(b); i += step {
			x := uint64(le.Uint32(b[i:]))
			if step == 8 {
				x = le.Uint64(b[i:])
			}
			out = append(out, [2]uint64{x, x + call})
		}
	}
	for _, t := range []struct {
		name       string
		step, size int
	}{{".return_sites", 4, 5}, {".retpoline_sites", 4, 6}, {".static_call_sites", 8, 5}} {
		a, b := table(t.name)
		for i := 0; i+4 <= len(b); i += t.step {
			x := a + uint64(i) + uint64(int64(int32(le.Uint32(b[i:]))))
			out = append(out, [2]uint64{x, x + uint64(t.size)})
		}
	}
	if a, b := table(".altinstructions"); b != nil {
		// struct alt_instr: 12 bytes on x86, 11 (packed) on s390; the
		// original's offset first, its length at byte 10
		step := 12
		if f.Machine == elf.EM_S390 {
			step = 11
		}
		for i := 0; i+step <= len(b); i += step {
			x := a + uint64(i) + uint64(int64(int32(le.Uint32(b[i:]))))
			out = append(out, [2]uint64{x, x + uint64(b[i+10])})
		}
	}
	if _, b := table(".parainstructions"); b != nil { // struct paravirt_patch_site: 16 bytes
		for i := 0; i+16 <= len(b); i += 16 {
			x := le.Uint64(b[i:])
			out = append(out, [2]uint64{x, x + uint64(b[i+9])})
		}
	}
	// powerpc's feature fixups (module_finalize(): do_feature_fixups()
	// and the others), offsets from their entries: struct fixup_entry's
	// code range, and single instructions.
	for _, name := range []string{"__ftr_fixup", "__mmu_ftr_fixup", "__fw_ftr_fixup"} {
		a, b := table(name)
		for i := 0; i+48 <= len(b); i += 48 {
			e := a + uint64(i)
			out = append(out, [2]uint64{e + le.Uint64(b[i+16:]), e + le.Uint64(b[i+24:])})
		}
	}
	for _, name := range []string{"__lwsync_fixup", "__barrier_nospec_fixup", "__rfi_flush_fixup"} {
		a, b := table(name)
		for i := 0; i+8 <= len(b); i += 8 {
			x := a + uint64(i) + le.Uint64(b[i:])
			out = append(out, [2]uint64{x, x + 4})
		}
	}
	return out
}

// relocSize is the size of the place a relocation writes (0: none, or a
// type the oracle does not compare).
func relocSize(m elf.Machine, typ uint32) int {
	if m == elf.EM_S390 {
		// apply_rela_bits()'s widths, by the type's name
		n := elf.R_390(typ).String()
		switch {
		case typ == uint32(elf.R_390_NONE):
			return 0
		case strings.HasSuffix(n, "64"):
			return 8
		case n == "R_390_8":
			return 1
		case strings.HasSuffix(n, "12") || strings.Contains(n, "16"):
			return 2
		}
		return 4 // 32 bits, 20-bit displacements, PC32DBL, GOTENT
	}
	if m == elf.EM_ARM {
		if elf.R_ARM(typ) == elf.R_ARM_NONE {
			return 0
		}
		return 4 // every type the loader takes: words and instructions
	}
	if m == elf.EM_PPC64 {
		switch elf.R_PPC64(typ) {
		case elf.R_PPC64_NONE:
			return 0
		case elf.R_PPC64_ADDR64, elf.R_PPC64_REL64, elf.R_PPC64_TOC, elf.R_PPC64_ENTRY:
			return 8 // (ENTRY: the two instructions that set r2)
		case elf.R_PPC64_ADDR16_LO, elf.R_PPC64_ADDR16_HI, elf.R_PPC64_ADDR16_HA, elf.R_PPC64_TOC16,
			elf.R_PPC64_TOC16_LO, elf.R_PPC64_TOC16_HI, elf.R_PPC64_TOC16_HA, elf.R_PPC64_ADDR16_DS,
			elf.R_PPC64_ADDR16_LO_DS, elf.R_PPC64_TOC16_DS, elf.R_PPC64_TOC16_LO_DS,
			elf.R_PPC64_REL16_LO, elf.R_PPC64_REL16_HI, elf.R_PPC64_REL16_HA:
			return 2
		}
		return 4
	}
	if m == elf.EM_AARCH64 {
		switch elf.R_AARCH64(typ) {
		case elf.R_AARCH64_NONE:
			return 0
		case elf.R_AARCH64_ABS64, elf.R_AARCH64_PREL64:
			return 8
		case elf.R_AARCH64_ABS16, elf.R_AARCH64_PREL16:
			return 2
		}
		return 4 // ABS32, PREL32, and every instruction
	}
	switch elf.R_X86_64(typ) {
	case elf.R_X86_64_64, elf.R_X86_64_PC64:
		return 8
	case elf.R_X86_64_PC32, elf.R_X86_64_PLT32, elf.R_X86_64_32, elf.R_X86_64_32S, elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX:
		return 4
	}
	return 0
}

// sites collects the relocation sites of f that lie in core, in sections
// the kernel leaves alone, outside the ranges it rewrites, and not
// changed (changed: "section+0xoff"): each one's bytes in mem.
func sites(t *testing.T, f *elfobj.File, addr map[string]uint64, mem memory, changed func(sec string, off uint64, b []byte) bool) siteSet {
	rw := rewritten(f, addr, mem)
	set := siteSet{}
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL || int(s.Info) >= len(f.Sections) {
			continue
		}
		target := f.Sections[s.Info].Name
		base, ok := addr[target]
		if !ok || oracleSkip[target] {
			continue
		}
		rel, err := f.Relocs(s)
		require.NoError(t, err)
	next:
		for _, r := range rel {
			n := relocSize(f.Machine, r.Type)
			p := base + r.Offset
			b := mem(p, n)
			if n == 0 || b == nil || changed(target, r.Offset, b) {
				continue
			}
			for _, x := range rw {
				if p < x[1] && p+uint64(n) > x[0] {
					continue next
				}
			}
			e := set[target]
			if e == nil {
				e = &siteDigest{h: xxhash.New()}
				set[target] = e
			}
			e.n++
			_, _ = e.h.Write(b)
		}
	}
	return set
}

// directMap reports whether v, a pointer the kernel wrote at a site of a
// writable section, points into the direct map of physical memory past
// the kernel image (x86_64 with nokaslr: from 0xffff888000000000; arm64
// with 48-bit addresses: below 0xffff800000000000; ppc64: the linear map
// from 0xc000000000000000, which holds the kernel too, past its _end,
// imageEnd; ARM: lowmem, PAGE_OFFSET 0xc0000000 up to the 512 MiB the
// oracle's machine has, past _end too): the kernel's heap, which no
// relocation yields, so the module changed it at run time (a list head,
// say, linked into the kernel's lists).
func directMap(m elf.Machine, b []byte, imageEnd uint64) bool {
	if m == elf.EM_ARM {
		if len(b) != 4 {
			return false
		}
		v := uint64(binary.LittleEndian.Uint32(b))
		return v >= max(imageEnd, 0xc0000000) && v < 0xe0000000
	}
	if len(b) != 8 {
		return false
	}
	v := binary.LittleEndian.Uint64(b)
	switch m {
	case elf.EM_S390:
		// s390: the identity map, the kernel in it; past _end up to the
		// oracle machine's 1 GiB
		v = binary.BigEndian.Uint64(b)
		return v >= imageEnd && v < 1<<30
	case elf.EM_AARCH64:
		return v >= 0xffff000000000000 && v < 0xffff800000000000
	case elf.EM_PPC64:
		return v >= max(imageEnd, 0xc000000000000000) && v < 0xc008000000000000
	}
	return v >= 0xffff888000000000 && v < 0xffffc88000000000
}

func TestKernelOracle(t *testing.T) {
	if *oracleDumps != "" {
		dir := filepath.Join(testutil.RepoRoot(), "testdata", "oracle", *oracleArch)
		writeOracle(t, *oracleDumps, dir, *oracleArch, oracleCases(t, *oracleArch))
	}
	for _, arch := range slices.Sorted(maps.Keys(oracleArches)) {
		t.Run(arch, func(t *testing.T) { kernelOracle(t, arch) })
	}
}

func kernelOracle(t *testing.T, arch string) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "oracle", arch)
	text, err := os.ReadFile(filepath.Join(dir, "kallsyms"))
	require.NoError(t, err)
	for _, tc := range oracleCases(t, arch) {
		t.Run(tc.name, func(t *testing.T) {
			o := readOracle(t, filepath.Join(dir, tc.name+".oracle"))
			require.Equal(t, tc.module, o.module)
			ix, err := kallsyms.ParseBytes("oracle kallsyms", withoutObjects(text, tc.absent), kallsyms.Options{})
			require.NoError(t, err)
			m, err := klp.Open(tc.path)
			require.NoError(t, err)
			// Debian's arm64, ppc64el, armhf and s390x 6.1 kernels have no
			// CONFIG_KALLSYMS_ALL (their configurations say so; the
			// oracle's symbols, a System.map among them, list data all
			// the same).
			lo := modplt.LinkOptions{Base: o.core, NoKallsymsAll: arch != "amd64", Erratum843419: arch == "arm64-a53"}
			if arch == "s390x" {
				// Options from the kernel's own configuration, as --root
				// gives them (no CONFIG_EXPOLINE: no thunk in the PLT).
				c, err := OpenConfig(filepath.Join(testutil.S390X(t), "boot", "config-"+testutil.S390XRelease))
				require.NoError(t, err)
				lo = c.LinkOptions(lo)
				require.True(t, lo.NoExpoline)
			}
			// Init where the kernel put it: where it followed core and its
			// guard page, Link's default must put it there; elsewhere
			// (vmalloc's first fit reused a hole an earlier module's init
			// left: arm64's chacha_generic, below its core) it is given.
			// (powerpc has no init region: its .init sections are in
			// core.)
			page := uint64(4096)
			if arch == "ppc64el" {
				page = 64 << 10 // (CONFIG_PPC_64K_PAGES)
			}
			for name, a := range o.sections {
				inCore := a >= o.core && a < o.core+o.size
				if strings.HasPrefix(name, ".init") && !inCore && (lo.InitBase == 0 || a&^(page-1) < lo.InitBase) {
					lo.InitBase = a &^ (page - 1)
				}
			}
			if lo.InitBase == o.core+o.size+page {
				lo.InitBase = 0
			}
			if !tc.firstPercpu {
				lo.PercpuBase = o.percpu
			}
			img, _, err := Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, lo, nil)
			require.NoError(t, err)
			require.True(t, img.Linked(), "%v %v", img.Errors, img.Unresolved)

			// Layout: every section where the kernel put it, and core's size.
			assert.Equal(t, o.size, img.CoreSize, "core size (/proc/modules)")
			assert.Equal(t, o.percpu, img.Percpu, "per-cpu area")
			ours := map[string]uint64{}
			for _, p := range img.Sections {
				if p.Index < 0 {
					continue // (s390's GOT and PLT: the head of core, compared whole)
				}
				ours[p.Name] = p.Addr
				if want, ok := o.sections[p.Name]; ok {
					assert.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", p.Addr), p.Name)
				} else {
					assert.Zero(t, p.Size, "%s: the kernel has no such section", p.Name)
				}
			}
			for name := range o.sections {
				if name != ".symtab" && name != ".strtab" { // (layout_symtab()'s, in init)
					assert.Contains(t, ours, name, "the kernel's section")
				}
			}

			// Bytes: every relocation site the kernel left alone.
			mem := func(addr uint64, n int) []byte {
				for _, p := range img.Sections {
					if p.Region == modplt.Core && addr >= p.Addr && addr+uint64(n) <= p.Addr+uint64(len(p.Data)) {
						return p.Data[addr-p.Addr : addr-p.Addr+uint64(n)]
					}
				}
				return nil
			}
			got := sites(t, objectOf(t, m), ours, mem, func(sec string, off uint64, _ []byte) bool {
				return o.changed[fmt.Sprintf("%s+%#x", sec, off)]
			})
			total := 0
			for sec, want := range o.sites {
				e := got[sec]
				require.NotNil(t, e, "%s: no relocation site", sec)
				assert.Equal(t, want, e.String(), "%s: relocation sites (count, digest of their bytes)", sec)
				total += e.n
			}
			for sec := range got {
				assert.Contains(t, o.sites, sec, "%s: relocation sites the kernel's lack", sec)
			}
			assert.Greater(t, total, 10)
			// The sections the loader fills, whole (zero between sections).
			for _, name := range oracleWhole {
				a, n := wholeSpan(name, o.sections, o.core, o.size)
				if n == 0 {
					continue
				}
				b := make([]byte, n)
				for _, p := range img.Sections {
					if lo, hi := max(p.Addr, a), min(p.Addr+uint64(len(p.Data)), a+n); p.Region == modplt.Core && lo < hi {
						copy(b[lo-a:], p.Data[lo-p.Addr:hi-p.Addr])
					}
				}
				assert.Equal(t, o.whole[name], fmt.Sprintf("%d %016x", n, xxhash.Sum64(b)), "%s: its bytes, whole", name)
			}
			t.Logf("%s: %d sections where the kernel put them, %d relocation sites as it wrote them (%d changed at run time)", tc.name, len(o.sections), total, len(o.changed))
		})
	}
}

// withoutObjects is a kallsyms text without the lines of objects.
func withoutObjects(text []byte, objects []string) []byte {
	if len(objects) == 0 {
		return text
	}
	var out []byte
	for line := range bytes.Lines(text) {
		drop := false
		for _, o := range objects {
			drop = drop || bytes.HasSuffix(bytes.TrimRight(line, "\n"), []byte("\t["+o+"]"))
		}
		if !drop {
			out = append(out, line...)
		}
	}
	return out
}

func readOracle(t *testing.T, path string) *oracle {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	o := &oracle{sections: map[string]uint64{}, sites: map[string]string{}, changed: map[string]bool{}, whole: map[string]string{}}
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 0, 64)
		require.NoError(t, err, "%s: %q", path, s)
		return v
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "module" && len(f) == 2:
			o.module = f[1]
		case f[0] == "core" && len(f) == 3:
			o.core, o.size = num(f[1]), num(f[2])
		case f[0] == "percpu" && len(f) == 2:
			o.percpu = num(f[1])
		case f[0] == "section" && len(f) == 3:
			o.sections[f[1]] = num(f[2])
		case f[0] == "sites" && len(f) == 4:
			o.sites[f[1]] = f[2] + " " + f[3]
		case f[0] == "changed" && len(f) == 2:
			o.changed[f[1]] = true
		case f[0] == "whole" && len(f) == 4:
			o.whole[f[1]] = f[2] + " " + f[3]
		default:
			t.Fatalf("%s: %q", path, line)
		}
	}
	require.NotZero(t, o.core, path)
	return o
}

// kaslrSlid is System.map sm as the kernel that printed the kallsyms ks
// has it: every address but absolute ones moved by KASLR's slide, the
// distance from a code symbol's link-time address to its address in ks
// (the first of vmlinux's symbols in ks that sm lists once).
func kaslrSlid(t *testing.T, sm, ks []byte, digits int) []byte {
	addr, count := map[string]uint64{}, map[string]int{}
	for line := range bytes.Lines(sm) {
		if f := strings.Fields(string(line)); len(f) == 3 {
			a, err := strconv.ParseUint(f[0], 16, 64)
			require.NoError(t, err)
			addr[f[2]] = a
			count[f[2]]++
		}
	}
	var slide uint64
	found := false
	for line := range bytes.Lines(ks) {
		f := strings.Fields(string(line))
		if len(f) != 3 || count[f[2]] != 1 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		require.NoError(t, err)
		slide, found = a-addr[f[2]], true
		break
	}
	require.True(t, found, "no symbol of the System.map in kallsyms")
	if slide == 0 {
		return append([]byte(nil), sm...)
	}
	var out []byte
	for line := range bytes.Lines(sm) {
		f := strings.Fields(string(line))
		if len(f) != 3 || f[1] == "A" || f[1] == "a" {
			out = append(out, line...)
			continue
		}
		a, _ := strconv.ParseUint(f[0], 16, 64)
		out = fmt.Appendf(out, "%0*x %s %s\n", digits, a+slide, f[1], f[2])
	}
	return out
}

// writeOracle writes dir's files from the dumps of a kernel run: only the
// kernel's word counts (its memory, sysfs, /proc/modules and kallsyms),
// read against the modules' files; klpresolve's linker plays no part.
func writeOracle(t *testing.T, dumps, dir, arch string, cases []oracleCase) {
	ks, err := os.ReadFile(filepath.Join(dumps, "kallsyms"))
	require.NoError(t, err)
	switch oracleArchOf(arch) {
	case "arm64", "armhf":
		ks = nativeSymbols(t, dumps, oracleArchOf(arch), ks, testutil.Corpus(t, oracleArchOf(arch)+"/System.map-"+oracleArches[arch]))
	case "ppc64el":
		ks = nativeSymbols(t, dumps, arch, ks, filepath.Join(testutil.PPC64EL(t), "boot", "System.map-"+testutil.PPC64ELRelease))
	case "s390x":
		// (made from the -dbg package's vmlinux: testdata/oracle/Makefile)
		ks = nativeSymbols(t, dumps, arch, ks, filepath.Join(dumps, "System.map"))
	}
	secs, err := os.ReadFile(filepath.Join(dumps, "sections"))
	require.NoError(t, err)
	ix, err := kallsyms.ParseBytes("kallsyms", ks, kallsyms.Options{})
	require.NoError(t, err)
	end, _ := ix.Find(kallsyms.Vmlinux, "_end", 0)
	imageEnd := end.Address
	require.NoError(t, os.MkdirAll(dir, 0o755))
	keep := map[string]bool{}
	for _, n := range []string{"_text", "_stext", "_etext", "_end", "__per_cpu_start", "__per_cpu_end", "x86_64_start_kernel", "startup_64",
		"start_here_multiplatform", "__secondary_hold", ".TOC.", "ftrace_caller", "ftrace_regs_caller", "_mcount",
		"primary_entry", "el0t_64_sync", "reserved_pg_dir", "swapper_pg_dir",
		"__start___ksymtab", "__stop___ksymtab", "__start___ksymtab_gpl", "__stop___ksymtab_gpl"} {
		keep[n] = true
	}
	for _, tc := range cases {
		m, err := klp.Open(tc.path)
		require.NoError(t, err)
		f := objectOf(t, m)
		for _, s := range f.Symbols {
			switch {
			case s.Shndx == uint16(elf.SHN_UNDEF) && s.Name != "":
				keep[s.Name], keep["__ksymtab_"+s.Name] = true, true
			case strings.HasPrefix(s.Name, klp.SymPrefix):
				if sn, n := klp.ParseSymbolName(s.Name); n == 3 {
					keep[sn.Name] = true
				}
			}
		}
		// The module's sections, as sysfs lists them.
		addr := map[string]uint64{}
		var out strings.Builder
		fmt.Fprintf(&out, "# %s: %s as Debian's %s kernel loaded it (testdata/oracle/Makefile)\n", tc.name, filepath.Base(tc.path), oracleArches[arch])
		fmt.Fprintf(&out, "module %s\n", tc.module)
		mods, err := os.ReadFile(filepath.Join(dumps, tc.name+".modules"))
		require.NoError(t, err)
		mf := strings.Fields(string(mods)) // name size refs deps state address [taints]
		require.GreaterOrEqual(t, len(mf), 6, "%s.modules", tc.name)
		size, err := strconv.ParseUint(mf[1], 10, 64)
		require.NoError(t, err)
		core, err := strconv.ParseUint(mf[5], 0, 64)
		require.NoError(t, err)
		fmt.Fprintf(&out, "core %#x %#x\n", core, size)
		if pc := f.SectionByName(".data..percpu"); pc != nil {
			for _, s := range f.Symbols {
				if int(s.Shndx) == pc.Index && s.Name != "" && s.Type() == elf.STT_OBJECT {
					k, err := ix.Lookup(tc.module, s.Name, 0)
					require.NoError(t, err, s.Name)
					fmt.Fprintf(&out, "percpu %#x\n", k.Address-s.Value)
					break
				}
			}
		}
		for line := range strings.Lines(string(secs)) {
			if g := strings.Fields(line); len(g) == 3 && g[0] == tc.module {
				a, err := strconv.ParseUint(g[2], 0, 64)
				require.NoError(t, err)
				addr[g[1]] = a
				fmt.Fprintf(&out, "section %s %#x\n", g[1], a)
			}
		}
		dump, err := os.ReadFile(filepath.Join(dumps, tc.name+".core"))
		require.NoError(t, err)
		require.Equal(t, size, uint64(len(dump)))
		mem := func(a uint64, n int) []byte {
			if a < core || a+uint64(n) > core+size {
				return nil
			}
			return dump[a-core : a-core+uint64(n)]
		}
		var changed []string
		got := sites(t, f, addr, mem, func(sec string, off uint64, b []byte) bool {
			s := f.SectionByName(sec)
			if s.Flags&elf.SHF_WRITE != 0 && directMap(f.Machine, b, imageEnd) {
				changed = append(changed, fmt.Sprintf("%s+%#x", sec, off))
				return true
			}
			return false
		})
		names := make([]string, 0, len(got))
		for sec := range got {
			names = append(names, sec)
		}
		slices.Sort(names)
		for _, sec := range names {
			fmt.Fprintf(&out, "sites %s %s\n", sec, got[sec])
		}
		for _, c := range changed {
			fmt.Fprintf(&out, "changed %s\n", c)
		}
		for _, name := range oracleWhole {
			if a, n := wholeSpan(name, addr, core, size); n != 0 {
				fmt.Fprintf(&out, "whole %s %d %016x\n", name, n, xxhash.Sum64(mem(a, int(n))))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, tc.name+".oracle"), []byte(out.String()), 0o644))
	}
	// The kernel's symbols the modules need, every line of each name (so
	// that positions count as in the whole list).
	var kept bytes.Buffer
	w := bufio.NewWriter(&kept)
	for line := range bytes.Lines(ks) {
		f := bytes.Fields(line)
		if len(f) >= 3 && keep[string(f[2])] {
			_, _ = w.Write(line)
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kallsyms"), kept.Bytes(), 0o644))
}

// nativeSymbols is what the oracle's arm64, ppc64el, armhf and s390x links
// resolve against: Debian's 6.1 kernels for them have no
// CONFIG_KALLSYMS_ALL, so their /proc/kallsyms (ks) lists code only.
// vmlinux's symbols come from its real System.map, systemMap, moved by
// KASLR's slide where it is on (kallsyms' code shows it; nokaslr keeps
// link-time addresses, and ppc64 and arm have no KASLR); the modules'
// code from ks; and their
// exports, data among them (raid6_pq's raid6_call, which btrfs uses), from
// the kernel's own export tables in each module's memory (the dumps): an
// EXPORT_SYMBOL line in upper case, an EXPORT_SYMBOL_GPL one in lower case
// with its __ksymtab_ entry, as a kernel with CONFIG_KALLSYMS_ALL lists
// them.
func nativeSymbols(t *testing.T, dumps, arch string, ks []byte, systemMap string) []byte {
	digits := 16 // (an address's, as /proc/kallsyms prints it)
	if arch == "armhf" {
		digits = 8
	}
	sm, err := os.ReadFile(systemMap)
	require.NoError(t, err)
	out := kaslrSlid(t, sm, ks, digits)
	listed := map[string]bool{} // "module name"
	for line := range bytes.Lines(ks) {
		if f := bytes.Fields(line); len(f) == 4 && bytes.HasPrefix(f[3], []byte("[")) {
			out = append(out, line...)
			listed[string(f[3][1:len(f[3])-1])+" "+string(f[2])] = true
		}
	}
	secs, err := os.ReadFile(filepath.Join(dumps, "sections"))
	require.NoError(t, err)
	starts := map[string][]uint64{} // each module's section addresses
	tables := map[string]map[string]uint64{}
	for line := range strings.Lines(string(secs)) {
		g := strings.Fields(line)
		if len(g) != 3 {
			continue
		}
		a, err := strconv.ParseUint(g[2], 0, 64)
		require.NoError(t, err)
		starts[g[0]] = append(starts[g[0]], a)
		if g[1] == "__ksymtab" || g[1] == "__ksymtab_gpl" {
			if tables[g[0]] == nil {
				tables[g[0]] = map[string]uint64{}
			}
			tables[g[0]][g[1]] = a
		}
	}
	mods := slices.Sorted(maps.Keys(tables))
	for _, mod := range mods {
		mf, err := os.ReadFile(filepath.Join(dumps, mod+".modules"))
		require.NoError(t, err)
		f := strings.Fields(string(mf))
		core, err := strconv.ParseUint(f[5], 0, 64)
		require.NoError(t, err)
		dump, err := os.ReadFile(filepath.Join(dumps, mod+".core"))
		require.NoError(t, err)
		var le binary.ByteOrder = binary.LittleEndian
		if arch == "s390x" {
			le = binary.BigEndian
		}
		for _, table := range []string{"__ksymtab", "__ksymtab_gpl"} {
			a, ok := tables[mod][table]
			if !ok {
				continue
			}
			end := core + uint64(len(dump))
			for _, x := range starts[mod] {
				if x > a && x < end {
					end = x
				}
			}
			// struct kernel_symbol: value, name and namespace; with
			// CONFIG_HAVE_ARCH_PREL32_RELOCATIONS (arm64) 32-bit offsets,
			// each from its own field, else addresses (powerpc 64-bit,
			// arm 32-bit).
			prel32, step := arch == "arm64", uint64(12)
			if arch == "ppc64el" || arch == "s390x" {
				step = 24
			}
			for e := a; e+step <= end; e += step {
				b := dump[e-core:]
				var v, n uint64
				switch {
				case prel32:
					v, n = e+uint64(int64(int32(le.Uint32(b)))), e+4+uint64(int64(int32(le.Uint32(b[4:]))))
				case step == 24:
					v, n = le.Uint64(b), le.Uint64(b[8:])
				default:
					v, n = uint64(le.Uint32(b)), uint64(le.Uint32(b[4:]))
				}
				if v == e && n == e+4 || v == 0 && n == 0 {
					break // padding
				}
				n -= core
				require.Less(t, n, uint64(len(dump)), "%s %s: name outside the module", mod, table)
				name := string(dump[n : n+uint64(bytes.IndexByte(dump[n:], 0))])
				typ := "D"
				if table == "__ksymtab_gpl" {
					typ = "d"
					out = fmt.Appendf(out, "%0*x r __ksymtab_%s\t[%s]\n", digits, e, name, mod)
				}
				if !listed[mod+" "+name] {
					out = fmt.Appendf(out, "%0*x %s %s\t[%s]\n", digits, v, typ, name, mod)
				}
			}
		}
	}
	return out
}
