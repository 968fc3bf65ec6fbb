// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"errors"
	"slices"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// Dependency is a module that the linked module depends on (.modinfo
// depends=, and theirs) and the kernel's symbols lack. modprobe loads it
// first; Link lays it out from its file (Options.Modules) below the
// module, links it, and resolves the module's symbols among its exports
// as the loader's find_symbol() does among a loaded module's.
type Dependency struct {
	Name string // module name
	Path string // its file
	// Image is it laid out and linked (its own dependencies first);
	// nil when no file of it was found (Path "").
	Image *modplt.Image
	// Exports counts the symbols it exports (__ksymtab and
	// __ksymtab_gpl entries).
	Exports int
}

// Base is where the dependency was laid out: its first section's address
// (0 without an image, or for a module with no section to load).
func (d *Dependency) Base() uint64 {
	if d.Image == nil || len(d.Image.Sections) == 0 {
		return 0
	}
	return d.Image.Sections[0].Addr
}

// LaidOut drops from e.UnloadedDepends the dependencies that deps laid
// out from their files (Link with module files): their exports were there to resolve
// against, so they do not explain what is still unresolved.
func (e *Explanation) LaidOut(deps []Dependency) {
	e.UnloadedDepends = slices.DeleteFunc(e.UnloadedDepends, func(name string) bool {
		return slices.ContainsFunc(deps, func(d Dependency) bool { return d.Name == name && d.Image != nil })
	})
	if len(e.UnloadedDepends) == 0 {
		e.UnloadedDepends = nil
	}
}

// export is a dependency's exported symbol.
type export struct {
	addr uint64
	gpl  bool // EXPORT_SYMBOL_GPL: for GPL-compatible modules only
}

// loaderResolver is how the module loader will resolve m's ordinary
// symbols (find_symbol()): what ix exports to m (Resolver), then, with
// mf, what the modules m depends on and ix lacks export, laid out first
// from the module area's start (loadDependencies); next is where the
// module goes after the last of them (zero fields when none was laid out). A module modplt does
// not lay out (x86_64, arm64 and arm only) gets no dependencies: its link
// fails before this, and without one the kernel's symbols are all there is.
func loaderResolver(m *klp.Module, ix *kallsyms.Index, lo modplt.LinkOptions, mf *ModuleFiles) (find modplt.Resolver, deps []Dependency, next placement, err error) {
	gplOK := modplt.GPLCompatible(m.ModInfo("license"))
	find = Resolver(ix, gplOK)
	depends := m.ModInfo("depends")
	if mf == nil || depends == "" {
		return find, nil, placement{}, nil
	}
	mod, err := m.LinkModule()
	if errors.Is(err, modplt.ErrUnsupportedArch) {
		return find, nil, placement{}, nil
	} else if err != nil {
		return nil, nil, placement{}, err
	}
	lo = kernelLinkOptions(m.Machine, ix, lo)
	area := mod.DefaultBase(lo)
	deps, exports, next, err := loadDependencies(depends, ix, mf, lo, area)
	if err != nil {
		return nil, nil, placement{}, err
	}
	if next.base == area {
		next.base = 0
	}
	return withExports(find, exports, gplOK), deps, next, nil
}

// loadDependencies lays out, in the order modprobe loads them (each
// module's own dependencies first: depmod's order), the modules that
// depends (a .modinfo depends= value) names and ix does not list, from
// their files in mf, from area (the module area's start) up, each where
// module_alloc() would put it after the last (modplt.Image.Next). It
// returns them, their exports by name, and where the next module goes.
// Their per-cpu areas follow one another from the reserved chunk's start,
// as percpu_modalloc() allocates them first fit.
func loadDependencies(depends string, ix *kallsyms.Index, mf *ModuleFiles, lo modplt.LinkOptions, area uint64) ([]Dependency, map[string]export, placement, error) {
	exports := map[string]export{}
	next := placement{base: area}
	var deps []Dependency
	seen := map[string]bool{} // a cycle is cut where it closes
	var visit func(name string) error
	visit = func(name string) error {
		if name == "" || seen[name] || ix.HasObject(name) {
			return nil
		}
		seen[name] = true
		path, err := mf.Path(name)
		if err != nil {
			return err
		}
		if path == "" {
			deps = append(deps, Dependency{Name: name})
			return nil
		}
		// The linker's reading is all a dependency needs (not klp's).
		mod, err := modplt.Open(path)
		if err != nil {
			return err
		}
		if err := visitAll(mod.ModInfo("depends"), visit); err != nil {
			return err
		}
		dlo := lo
		dlo.Base, dlo.InitBase, dlo.SkipSections, dlo.At = next.base, 0, nil, nil
		dlo.PercpuBase = next.percpu
		dlo.Resolve = withExports(Resolver(ix, mod.GPLCompatible()), exports, mod.GPLCompatible())
		img, err := mod.Link(dlo) // its errors name the file
		if err != nil {
			return err
		}
		n := addExports(img, exports)
		deps = append(deps, Dependency{Name: name, Path: path, Image: img, Exports: n})
		next.base = img.Next()
		if img.PercpuSize > 0 {
			next.percpu = img.Percpu + img.PercpuSize
		}
		return nil
	}
	if err := visitAll(depends, visit); err != nil {
		return nil, nil, placement{}, err
	}
	return deps, exports, next, nil
}

// placement is where module_alloc() and percpu_modalloc() put the next
// module: its core (0: the module area's start) and its per-cpu area (0:
// the reserved chunk's start, modplt.LinkOptions.PercpuBase).
type placement struct{ base, percpu uint64 }

// visitAll calls visit with each module a .modinfo depends= value names,
// as the kernel names it (dependsNames).
func visitAll(depends string, visit func(string) error) error {
	for _, d := range dependsNames(depends) {
		if err := visit(d); err != nil {
			return err
		}
	}
	return nil
}

// withExports is r, then the dependencies' exports: find_symbol() looks
// in vmlinux first, then in the loaded modules.
func withExports(r modplt.Resolver, exports map[string]export, gplOK bool) modplt.Resolver {
	if len(exports) == 0 {
		return r
	}
	return func(name string) (uint64, bool) {
		if a, ok := r(name); ok {
			return a, ok
		}
		if e, ok := exports[name]; ok && (gplOK || !e.gpl) {
			return e.addr, true
		}
		return 0, false
	}
}

// addExports adds what img's module exports (Image.Exports), at its
// laid-out addresses, to exports (a name exported twice keeps its first:
// the loader refuses the second module, "exports duplicate symbol"); it
// returns how many it exports.
func addExports(img *modplt.Image, exports map[string]export) int {
	es := img.Exports()
	for _, e := range es {
		if _, dup := exports[e.Name]; !dup {
			exports[e.Name] = export{e.Addr, e.GPL}
		}
	}
	return len(es)
}
