package modplt

import (
	"debug/elf"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// FuzzCount: no input makes Parse, Count or Link panic, and a module
// that parses counts in both modes with optimal never above kernel.
func FuzzCount(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "*.o"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range []elf.Machine{elf.EM_AARCH64, elf.EM_ARM, elf.EM_X86_64} {
		f.Add(genModule(r, m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("module %v with error %v", m, err)
		}
		if err != nil {
			_ = err.Error()
			return
		}
		k, kerr := m.Count(Options{Erratum843419: true})
		o, oerr := m.Count(Options{Mode: ModeOptimal, Erratum843419: true})
		if (kerr == nil) != (oerr == nil) {
			t.Fatalf("kernel mode error %v, optimal mode error %v", kerr, oerr)
		}
		if kerr == nil && (o.PLTCore > k.PLTCore || o.PLTInit > k.PLTInit || o.GOT > k.GOT) {
			t.Fatalf("optimal %d/%d/%d above kernel %d/%d/%d", o.PLTCore, o.PLTInit, o.GOT, k.PLTCore, k.PLTInit, k.GOT)
		}
		// Linking never panics either, with branches forced through the
		// PLT and symbols far away.
		img, err := m.Link(LinkOptions{ForcePLT: true, Erratum843419: true, Resolve: func(string) (uint64, bool) { return 0x100000, true }})
		if err == nil {
			_ = img.ELF()
		}
	})
}
