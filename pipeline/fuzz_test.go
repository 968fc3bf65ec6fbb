// SPDX-License-Identifier: GPL-2.0-only

package pipeline_test

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
	"github.com/klpresolve/klpresolve/symvers"
)

// FuzzRun runs the main job with --link on arbitrary modules: parse,
// resolve against a small kernel, link, record in a CFI shadow. The
// parsers' own targets stop where parsing does; this one reaches
// resolution and the linker with what a parsed module can hold. Seeds:
// the project's livepatch, kpatch and relocatable fixtures of all three
// architectures.
func FuzzRun(f *testing.F) {
	var seeds []string
	for _, g := range []string{"klp/*.ko", "klp/*.o", "modplt/*.o", "modplt/link/*.o", "kbuild/*.ko", "kbuild/deps/*.ko"} {
		m, _ := filepath.Glob(filepath.Join("..", "testdata", g))
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	// And what the loader refuses whole: a module without a symbol table,
	// one with a writable and executable section exporting vfs_read.
	for _, stripped := range []bool{true, false} {
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64, NoSymtab: stripped}
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("name=fix\x00livepatch=Y\x00"), Addralign: 1})
		b.AddSection(elfobj.BuildSection{Name: ".gnu.linkonce.this_module", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 64})
		wx := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_EXECINSTR, Data: []byte{0xc3}, Addralign: 16})
		b.AddSymbol(elfobj.BuildSymbol{Name: "__ksymtab_vfs_read", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT), Shndx: uint16(wx)})
		f.Add(b.Bytes())
	}
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	if err != nil {
		f.Fatal(err)
	}
	// Module files a fuzzed module's depends= may name (Link with module files).
	deps, err := pipeline.FindModules(f.Context(), []string{"../testdata/kbuild/deps"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := klp.Parse("fuzz.ko", data)
		if err != nil {
			return
		}
		// A kernel's vermagic: the module's .modinfo and __versions are
		// read and checked too; its dependencies are laid out from deps.
		// One input in four is not linked: the loader's note instead.
		link := len(data)%4 != 0
		// The CFI shadow asked for on half the inputs (no 6.1 kernel keeps
		// one otherwise).
		cfiShadow := len(data)%2 == 0
		rep, err := pipeline.Run(m, ix, pipeline.Options{Link: link, Vermagic: vermagic, Modules: deps, CFIShadow: cfiShadow})
		// Nothing allocates more than the input justifies: the fixtures
		// take 5-14 bytes a byte of module, a claimed size nothing.
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > allocBound(len(data)) {
			t.Fatalf("%d bytes allocated for a %d-byte module", n, len(data))
		}
		if err != nil {
			// Only these stop a run: another architecture's kernel, a
			// __versions section that is no modversion_info array, or
			// a module the linker cannot take (it fails relocations
			// one by one, in the Image).
			if !isAny(err, pipeline.ErrArchMismatch, symvers.ErrBadVersions, modplt.ErrMalformed, modplt.ErrUnsupportedArch, modplt.ErrNotRelocatable, modplt.ErrBadBase) {
				t.Fatalf("unexpected error kind %T: %v", err, err)
			}
			if !strings.Contains(err.Error(), "fuzz.ko") && !strings.Contains(err.Error(), "example.txt") {
				t.Fatalf("error names neither the module nor the kernel: %v", err)
			}
			return
		}
		res := rep.Resolution
		if got := res.Resolved + res.Deferred + res.Errors; got != len(res.Results) {
			t.Fatalf("counts %d+%d+%d for %d results", res.Resolved, res.Deferred, res.Errors, len(res.Results))
		}
		for _, r := range res.Results {
			if (r.Status == klp.Failed) != (r.Err != nil) {
				t.Fatalf("result %+v: status %v with error %v", r, r.Status, r.Err)
			}
		}
		if got := res.FuncResolved + res.FuncDeferred + res.FuncErrors; got != len(res.Funcs) {
			t.Fatalf("function counts %d+%d+%d for %d functions", res.FuncResolved, res.FuncDeferred, res.FuncErrors, len(res.Funcs))
		}
		for _, f := range res.Funcs {
			if (f.Status == klp.Failed) != (f.Err != nil) {
				t.Fatalf("function %+v: status %v with error %v", f.Func, f.Status, f.Err)
			}
		}
		for _, b := range res.BuiltIn {
			if !slices.Contains(res.DeferredObjects, b.Object) || len(b.Names) == 0 {
				t.Fatalf("built-in %+v: not a deferred object of %v, or no evidence", b, res.DeferredObjects)
			}
		}
		if !link {
			notLinked(t, m, ix, rep)
			return
		}
		if m.Refusal(klp.ErrNoSymbols) != nil || m.Machine == elf.EM_PPC64 && m.Refusal(klp.ErrNoPLTSection) != nil {
			// Refused before its layout: nothing is linked.
			if rep.Image != nil || res.LoadErr == nil || rep.OK(false) ||
				!errors.Is(res.LoadErr, klp.ErrNoSymbols) && !errors.Is(res.LoadErr, klp.ErrNoModuleStruct) && !errors.Is(res.LoadErr, klp.ErrNoPLTSection) {
				t.Fatalf("module refused before its layout: image %v, load error %v, OK %v", rep.Image, res.LoadErr, rep.OK(false))
			}
			return
		}
		// Recorded in a CFI shadow, or not with a reason (the kernel
		// keeps none: 6.1 and later).
		if rep.Image == nil || (rep.CFI != nil) != cfiShadow || (rep.CFI == nil) == (rep.CFINote == "") {
			t.Fatalf("linked report without image (%v), or with a CFI record (%v, asked for: %v) and a note (%q) both or neither", rep.Image, rep.CFI, cfiShadow, rep.CFINote)
		}
		for _, d := range rep.Dependencies {
			// A file exactly for the names deps has ("klpdep_b@se" has none).
			if (d.Image == nil) != (d.Path == "") || slices.Contains(depNames, d.Name) != (d.Path != "") {
				t.Fatalf("dependency %+v", d)
			}
		}
		g := rep.Vermagic
		if g == nil || g.Kernel != vermagic || g.Forced != (len(m.ModInfoAll("vermagic")) == 0) || g.Forced && !g.OK() {
			t.Fatalf("vermagic %+v", g)
		}
		if rep.OK(false) != (res.OK(false) && rep.Image.Linked() && g.OK()) {
			t.Fatalf("OK %v disagrees with its parts", rep.OK(false))
		}
		if rep.CFI != nil && rep.CFI.TextStart > rep.CFI.TextEnd {
			t.Fatalf("CFI text %#x-%#x", rep.CFI.TextStart, rep.CFI.TextEnd)
		}
	})
}

// notLinked checks a report made without a link: no image, and the
// ordinary symbols the loader would not find sorted, each once, none of
// them one the kernel exports to the module.
func notLinked(t *testing.T, m *klp.Module, ix *kallsyms.Index, rep *pipeline.Report) {
	t.Helper()
	if rep.Image != nil || rep.CFI != nil {
		t.Fatalf("report not linked with an image (%v) or CFI (%v)", rep.Image, rep.CFI)
	}
	if !slices.IsSorted(rep.LoaderMissing) || len(slices.Compact(slices.Clone(rep.LoaderMissing))) != len(rep.LoaderMissing) {
		t.Fatalf("loader's missing symbols not sorted or repeated: %v", rep.LoaderMissing)
	}
	find := pipeline.Resolver(ix, modplt.GPLCompatible(m.ModInfo("license")))
	for _, name := range rep.LoaderMissing {
		if _, ok := find(name); ok {
			t.Fatalf("%s: the kernel exports it, yet it is missing", name)
		}
	}
	if rep.OK(false) != (rep.Resolution.OK(false) && rep.Vermagic.OK()) {
		t.Fatalf("OK %v disagrees with its parts", rep.OK(false))
	}
}

// depNames are the modules of testdata/kbuild/deps, the files FuzzRun's
// dependencies are laid out from.
var depNames = []string{"klpdep_base", "klpdep_mid", "klpdep_top"}

// vermagic is Debian 6.1.0-57's, the kernel FuzzRun's modules are
// checked against (testdata/kbuild's module has it).
const vermagic = "6.1.0-57-amd64 SMP preempt mod_unload modversions "

// allocBound is what a run may allocate for a module of n bytes.
func allocBound(n int) uint64 { return 64*uint64(n) + 1<<20 }

func isAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
