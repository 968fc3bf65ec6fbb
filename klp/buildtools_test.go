// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// The build-tool fixtures (testdata/buildtools): livepatch modules that
// klp-build made from Debian's linux-source-7.2 and kpatch-build 0.9.10
// from linux-source-6.12, each for a small x86_64 kernel, and what that
// kernel, booted under qemu, did with each one (TOOL/oracle): livepatch's
// verdict, the functions it patched
// (sysfs) and which symbol of each name ftrace redirected, and every
// section of the module as the kernel relocated it. TestBuildToolsOracle
// resolves each module as klpresolve does and compares.

// toolOracle is what the kernel did with a tool's modules.
type toolOracle struct {
	verdicts map[string]string // module: "enabled=1 transition=0"
	// funcs: module: "object name sympos" as sysfs names them
	funcs map[string][]string
	// patched: module: "object name": the address of the symbol of
	// that name whose first instruction ftrace made a call
	patched map[string]map[string]uint64
	// section: "module section": its address and bytes, relocated
	section map[string]toolSection
}

type toolSection struct {
	addr uint64
	data []byte
}

func readToolOracle(t *testing.T, dir string) *toolOracle {
	o := &toolOracle{verdicts: map[string]string{}, funcs: map[string][]string{},
		patched: map[string]map[string]uint64{}, section: map[string]toolSection{}}
	lines := func(name string, n int, each func(f []string)) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if n > 0 {
				require.Len(t, f, n, "%s: %q", name, line)
			}
			each(f)
		}
	}
	hex := func(s string) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		require.NoError(t, err, s)
		return v
	}
	lines("verdicts", 0, func(f []string) { o.verdicts[f[0]] = strings.Join(f[1:], " ") })
	lines("funcs", 4, func(f []string) { o.funcs[f[0]] = append(o.funcs[f[0]], strings.Join(f[1:], " ")) })
	lines("entries", 5, func(f []string) {
		// A livepatched function's fentry NOP is a call to the ftrace
		// trampoline: e8 and its displacement.
		if strings.HasPrefix(f[4], "e8") {
			if o.patched[f[0]] == nil {
				o.patched[f[0]] = map[string]uint64{}
			}
			key := f[1] + " " + f[2]
			_, dup := o.patched[f[0]][key]
			require.False(t, dup, "%s: two %s patched", f[0], key)
			o.patched[f[0]][key] = hex(f[3])
		}
	})
	xf, err := os.Open(filepath.Join(dir, "sections.bin.xz"))
	require.NoError(t, err)
	defer xf.Close()
	xr, err := xz.NewReader(bufio.NewReader(xf))
	require.NoError(t, err)
	lines("sections.txt", 4, func(f []string) {
		n, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		b := make([]byte, n)
		_, err = io.ReadFull(xr, b)
		require.NoError(t, err, "sections.bin: %s %s", f[0], f[1])
		o.section[f[0]+" "+f[1]] = toolSection{addr: hex(f[2]), data: b}
	})
	return o
}

// siteValue is what the kernel's relocation r (of the module's section
// sec) resolved its symbol to, read back from the bytes it wrote: the
// value less the addend, less the place for PC-relative types.
func siteValue(t *testing.T, s toolSection, typ elf.R_X86_64, off uint64, addend int64) uint64 {
	p := s.addr + off
	switch typ {
	case elf.R_X86_64_PC32, elf.R_X86_64_PLT32:
		v := int64(int32(binary.LittleEndian.Uint32(s.data[off:])))
		return uint64(v - addend + int64(p))
	case elf.R_X86_64_32S:
		return uint64(int64(int32(binary.LittleEndian.Uint32(s.data[off:]))) - addend)
	case elf.R_X86_64_64:
		return binary.LittleEndian.Uint64(s.data[off:]) - uint64(addend)
	}
	t.Fatalf("relocation type %v: not read back", typ)
	return 0
}

func TestBuildToolsOracle(t *testing.T) {
	for _, tool := range []string{"klp-build", "kpatch-build"} {
		t.Run(tool, func(t *testing.T) { buildToolsOracle(t, "../testdata/buildtools/"+tool) })
	}
}

func buildToolsOracle(t *testing.T, dir string) {
	o := readToolOracle(t, filepath.Join(dir, "oracle"))
	ix, err := kallsyms.Open(filepath.Join(dir, "oracle", "kallsyms.xz"), kallsyms.Options{})
	require.NoError(t, err)
	mods, err := filepath.Glob(filepath.Join(dir, "*.ko"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(mods), 5)
	for _, path := range mods {
		name := strings.TrimSuffix(filepath.Base(path), ".ko")
		t.Run(name, func(t *testing.T) {
			// (forced: these small kernels have no reliable unwinder, so
			// the init script ends each transition through sysfs)
			require.Equal(t, "enabled=1 transition=0 forced", o.verdicts[name], "the kernel's verdict")
			m, err := Open(path)
			require.NoError(t, err)
			res := m.Resolve(ix, ResolveOptions{})
			require.True(t, res.OK(true), "%d errors, %d deferred: %+v", res.Errors, res.Deferred, res.Results)
			assert.Empty(t, res.InitRefs, "no reference to freed init memory")
			// The shadow patch's callback frees its shadow variables.
			var callbacks []Callback
			if strings.HasSuffix(name, "-shadow") {
				callbacks = []Callback{{Object: "vmlinux", When: "post_unpatch", Func: "klpfix_free_reads"}}
			}
			assert.Equal(t, callbacks, m.Callbacks)

			// Patched functions: those sysfs lists, each at the address
			// ftrace redirected.
			var funcs []string
			for _, f := range res.Funcs {
				pos := max(f.Pos, 1) // (sysfs: "%s,%lu", old_sympos ? old_sympos : 1)
				funcs = append(funcs, fmt.Sprintf("%s %s %d", f.Object, f.Name, pos))
				want, ok := o.patched[name][f.Object+" "+f.Name]
				require.True(t, ok, "%s %s: no symbol of that name patched", f.Object, f.Name)
				assert.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", f.Address), "%s %s,%d: the function livepatch patched", f.Object, f.Name, pos)
			}
			assert.ElementsMatch(t, o.funcs[name], funcs, "patched functions (sysfs)")
			// Each module patches one object: the one sysfs lists (a
			// patched function's first word).
			require.Len(t, o.funcs[name], 1)
			assert.Equal(t, []string{strings.Fields(o.funcs[name][0])[0]}, m.Objects, "klp_objects")

			// Relocations: every .klp.rela site, the symbol's address as
			// the kernel wrote it.
			relas := map[string][]elf.Rela64{}
			for i := range m.elf.Sections {
				s := &m.elf.Sections[i]
				if !strings.HasPrefix(s.Name, ".klp.rela.") {
					continue
				}
				rs, err := m.elf.Relocs(s)
				require.NoError(t, err)
				for _, r := range rs {
					relas[s.Name] = append(relas[s.Name], elf.Rela64{Off: r.Offset, Info: uint64(r.Type), Addend: r.Addend})
				}
			}
			n := 0
			for _, r := range res.Results {
				require.Equal(t, Resolved, r.Status, "%s+%#x %s", r.Section, r.Offset, r.Symbol)
				_, target, ok := strings.Cut(strings.TrimPrefix(r.Section, ".klp.rela."), ".")
				require.True(t, ok, r.Section)
				s, ok := o.section[name+" "+target]
				require.True(t, ok, "%s: the kernel has no section %s", r.Section, target)
				rel := relas[r.Section][r.Index]
				got := siteValue(t, s, elf.R_X86_64(rel.Info), rel.Off, rel.Addend)
				assert.Equal(t, fmt.Sprintf("%#x", got), fmt.Sprintf("%#x", r.Address), "%s+%#x %s", r.Section, r.Offset, r.Symbol)
				n++
			}
			t.Logf("%s: %d functions and %d relocations as the kernel resolved them", name, len(funcs), n)
		})
	}
}

// A module built for one kernel, resolved against another: Debian's own
// 7.2.13 build (its configuration, not the fixtures'), for klp-build's
// module another build of its release, for kpatch-build's (6.12) another
// release. get_next_ino()'s static local is shared_last_ino.2 in both
// fixtures' kernels and shared_last_ino.3 in Debian's: livepatch's "not
// found", with a help that says why and what to do. The per-cpu last_ino
// the patch also uses lies in init memory's per-cpu template there,
// which is no reference to freed memory.
func TestBuildToolsOtherBuild(t *testing.T) {
	ix := debianIndex(t, "7.2")
	for _, tool := range []string{"klp-build", "kpatch-build"} {
		t.Run(tool, func(t *testing.T) {
			m, err := Open("../testdata/buildtools/" + tool + "/livepatch-static-local.ko")
			require.NoError(t, err)
			res := m.Resolve(ix, ResolveOptions{})
			require.Equal(t, 1, res.Errors)
			assert.Empty(t, res.InitRefs, "last_ino is per-cpu")
			var failed *Result
			for i := range res.Results {
				if res.Results[i].Status == Failed {
					failed = &res.Results[i]
				}
			}
			require.NotNil(t, failed)
			assert.Equal(t, "shared_last_ino.2", failed.Name)
			assert.Equal(t, "symbol 'shared_last_ino.2' not found in symbol table", failed.Err.Kernel)
			assert.True(t, errors.Is(failed.Err, kallsyms.ErrNotFound))
			assert.Equal(t, "shared_last_ino.2 is a name the compiler numbered (a static local variable's, most often) in the build the patch was made for; "+
				"the numbers differ between builds: build the patch against this kernel's own build; nearest: vmlinux:shared_last_ino.3", failed.Err.Hint)
		})
	}
}

// A function inlined away: klp-build's meminfo module patches
// show_val_kb(), a function of its own in the fixtures' 7.2 kernel (the
// booted kernel patched it: TestBuildToolsOracle) and inlined into
// meminfo_proc_show() in Debian's 7.2 build. Livepatch's "not found",
// with a help that says to build against that kernel.
func TestBuildToolsInlinedAway(t *testing.T) {
	ix := debianIndex(t, "7.2")
	res := buildToolModule(t, "klp-build", "livepatch-meminfo.ko").Resolve(ix, ResolveOptions{})
	assert.Equal(t, 0, res.Errors, "its relocations resolve")
	require.Len(t, res.Funcs, 1)
	f := res.Funcs[0]
	require.Equal(t, Failed, f.Status)
	assert.True(t, errors.Is(f.Err, kallsyms.ErrNotFound))
	assert.Equal(t, "symbol 'show_val_kb' not found in symbol table", f.Err.Kernel)
	assert.Equal(t, "livepatch patches a function through its symbol, and this kernel has no function show_val_kb in vmlinux: its build inlined it into its callers, or renamed or dropped it. "+
		"Build the patch against this kernel's own build: where the function is inlined, the build tool patches its callers", f.Err.Hint)
	caller, err := ix.Lookup(kallsyms.Vmlinux, "meminfo_proc_show", 0)
	require.NoError(t, err, "its caller is there")
	assert.Equal(t, byte('t'), caller.Type)
}

// A kernel image's kallsyms table is the kernel's own: its absolute
// per-cpu symbols (x86_64 6.12: zero-based) are there for livepatch to
// find, as the fixtures' booted 6.12 found last_ino.
func TestBuildToolsImagePercpu(t *testing.T) {
	ix := debianIndex(t, "6.12")
	res := buildToolModule(t, "kpatch-build", "livepatch-static-local.ko").Resolve(ix, ResolveOptions{})
	require.True(t, res.OK(true), "%+v", res.Results)
	found := 0
	for _, r := range res.Results {
		if r.Name == "last_ino" {
			found++
			assert.Equal(t, "0x32130", fmt.Sprintf("%#x", r.Address), "Debian 6.12's per-cpu offset of last_ino")
		}
	}
	assert.Positive(t, found, "the patch uses last_ino")
}

// debianIndex is the index of Debian's gen kernel image for amd64 (the
// test skips without it).
func debianIndex(t *testing.T, gen string) *kallsyms.Index {
	t.Helper()
	_, image := testutil.DebianKernel(t, gen, "amd64")
	ix, err := kallsyms.Open(image, kallsyms.Options{})
	require.NoError(t, err)
	return ix
}

// buildToolModule opens a module of testdata/buildtools/tool.
func buildToolModule(t *testing.T, tool, name string) *Module {
	t.Helper()
	m, err := Open("../testdata/buildtools/" + tool + "/" + name)
	require.NoError(t, err)
	return m
}
