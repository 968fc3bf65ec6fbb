// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// FuzzCount: no input makes Parse, Count or Link panic, and a module
// that parses counts in both modes with optimal never above kernel.
func FuzzCount(f *testing.F) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "modplt")
	files, _ := filepath.Glob(filepath.Join(dir, "*.o"))
	oracle, _ := filepath.Glob(filepath.Join(dir, "link", "*.o")) // big-endian ones too
	for _, p := range append(files, oracle...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range []elf.Machine{elf.EM_AARCH64, elf.EM_ARM, elf.EM_X86_64, elf.EM_S390, elf.EM_PPC64} {
		f.Add(genModule(r, m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("module %v with error %v", m, err)
		}
		if err != nil {
			documentedKind(t, err, ErrMalformed, ErrNotRelocatable, ErrUnsupportedArch, ErrCorrupt, ErrTooLarge)
			return
		}
		k, kerr := m.Count(Options{Erratum843419: true})
		o, oerr := m.Count(Options{Mode: ModeOptimal, Erratum843419: true})
		if (kerr == nil) != (oerr == nil) {
			t.Fatalf("kernel mode error %v, optimal mode error %v", kerr, oerr)
		}
		if kerr != nil {
			documentedKind(t, kerr, ErrMalformed, ErrNoPLT) // (powerpc: no .stubs)
		}
		// (powerpc's count_relocs() leaves a first call against symbol 0
		// with addend 0 uncounted, which optimal mode counts: one more;
		// and it keeps the previous addend in an unsigned int, so a call
		// whose addend does not fit one can hide the next call's target,
		// the same symbol at its truncated addend: one more for each.)
		slack := 0
		if m.Arch == "ppc64" {
			slack = 1 + ppc64WideAddends(m)
		}
		if kerr == nil && (o.PLTCore > k.PLTCore+slack || o.PLTInit > k.PLTInit || o.GOT > k.GOT) {
			t.Fatalf("optimal %d/%d/%d above kernel %d/%d/%d", o.PLTCore, o.PLTInit, o.GOT, k.PLTCore, k.PLTInit, k.GOT)
		}
		// Linking never panics either, with branches forced through the
		// PLT and symbols far away.
		img, err := m.Link(LinkOptions{ForcePLT: true, Erratum843419: true, Resolve: func(string) (uint64, bool) { return 0x100000, true }})
		if err == nil {
			_ = img.ELF()
		} else {
			documentedKind(t, err, ErrMalformed, ErrBadBase, ErrNoPLT)
		}
	})
}

// documentedKind fails t unless err names the input and is one of kinds.
func documentedKind(t *testing.T, err error, kinds ...error) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), "fuzz") {
		t.Fatalf("error does not name the input: %v", err)
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("error of no documented kind (%T): %v", err, err)
}

// ppc64WideAddends counts m's REL24 relocations whose addend does not
// fit count_relocs()'s unsigned int.
func ppc64WideAddends(m *Module) int {
	n := 0
	for i := range m.f.Sections {
		s := &m.f.Sections[i]
		if s.Type != elf.SHT_RELA {
			continue
		}
		rs, err := m.f.Relocs(s)
		if err != nil {
			continue
		}
		for _, r := range rs {
			if elf.R_PPC64(r.Type) == elf.R_PPC64_REL24 && uint64(r.Addend) > 1<<32-1 {
				n++
			}
		}
	}
	return n
}
