// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/internal/par"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// KallsymsLoaded is Kallsyms on the kallsyms of a kernel with every
// module under dir loaded (WriteLoaded of path and dir, in a temporary
// file): the same figures and targets at the largest size a kernel's
// kallsyms reaches, reported as benchmark "kallsyms-loaded".
func KallsymsLoaded(path, dir string, self []string) (*Report, error) {
	f, err := os.CreateTemp("", "klpresolve-loaded-*.txt")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	n, err := WriteLoaded(f, path, dir)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no module to load", dir)
	}
	rep, err := Kallsyms(f.Name(), self)
	if err != nil {
		return nil, err
	}
	rep.Benchmark = "kallsyms-loaded"
	rep.Input = fmt.Sprintf("%s, every module under %s loaded", path, dir)
	added := Figure{Name: "modules_loaded", Value: float64(n), Unit: "modules", Comment: "added to the input's, each as /proc/kallsyms lists a loaded module"}
	rep.Figures = slices.Insert(rep.Figures, 0, added)
	return rep, nil
}

// loadedBase is where WriteLoaded places the first module it adds: where
// x86_64 loads modules (MODULES_VADDR); the others follow it, each
// rounded up to a page, as module_alloc() hands them out.
const (
	loadedBase = 0xffffffffc0000000
	loadedPage = 4096
)

// WriteLoaded writes to w the kallsyms of a kernel with every module under
// dir loaded: the lines of the kallsyms file path, then each module's
// symbols that path does not list yet, as /proc/kallsyms lists a loaded
// module's (its core symbols, klp.Target.Loaded, with the kernel's type
// letters), each module at its own addresses. It is how the benchmarks
// meet a kernel's kallsyms at its largest: a distribution kernel with
// all its modules loaded lists several times the lines it lists with
// the modules a machine loads. It returns the number of modules added.
// A file under dir that is no module is skipped; modules may be
// compressed.
func WriteLoaded(w io.Writer, path, dir string) (int, error) {
	ix, err := kallsyms.Open(path, kallsyms.Options{})
	if err != nil {
		return 0, err
	}
	listed := map[string]bool{}
	for _, o := range ix.Objects() {
		listed[o.Name] = true
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(filepath.Base(p), ".ko") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(files)
	all := ix.KernelKallsyms().All
	mods := make([]loadedModule, len(files))
	par.For(runtime.GOMAXPROCS(0), len(files), func(i int) {
		mods[i] = loadedSymbols(files[i], all, listed)
	})
	out := bufio.NewWriterSize(w, 1<<20)
	in, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if _, err := io.Copy(out, in); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	added, base := 0, uint64(loadedBase)
	for _, m := range mods {
		if len(m.syms) == 0 || listed[m.name] {
			continue // (the kernel loads one module of a name)
		}
		listed[m.name] = true
		next, err := m.write(out, base)
		if err != nil {
			return 0, err
		}
		added, base = added+1, next
	}
	return added, out.Flush()
}

// loadedModule is one module's symbols as the kernel lists it loaded
// (loadedSymbols), at the Target's addresses.
type loadedModule struct {
	name string
	syms []kallsyms.Symbol
}

// loadedSymbols is the module in file as a loaded module, or nothing
// where the file is no module, or one path lists already.
func loadedSymbols(file string, kallsymsAll bool, listed map[string]bool) loadedModule {
	m, err := klp.Open(file)
	if err != nil {
		return loadedModule{}
	}
	t, err := klp.NewTarget(m, kallsymsAll)
	if err != nil || t.Loaded == nil || listed[t.Name] {
		return loadedModule{}
	}
	lm := loadedModule{name: t.Name}
	t.Loaded.Symbols(t.Name, func(s kallsyms.Symbol) bool {
		lm.syms = append(lm.syms, s)
		return true
	})
	return lm
}

// write writes m's lines in the kernel's format (s_show()), its lowest
// symbol at base and the others as far from it as in the module, and
// returns where the next module goes: the page after m's last symbol.
func (m loadedModule) write(w *bufio.Writer, base uint64) (uint64, error) {
	lo, hi := m.syms[0].Address, m.syms[0].Address
	for _, s := range m.syms {
		lo, hi = min(lo, s.Address), max(hi, s.Address)
	}
	var b []byte
	for _, s := range m.syms {
		b = fmt.Appendf(b[:0], "%016x %c %s\t[%s]\n", base+s.Address-lo, s.Type, s.Name, m.name)
		if _, err := w.Write(b); err != nil {
			return 0, err
		}
	}
	return (base + hi - lo + loadedPage) &^ (loadedPage - 1), nil
}
