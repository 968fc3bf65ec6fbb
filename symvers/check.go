// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"errors"
	"fmt"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/kgen"
)

// What the module loader refuses of a module's symbols (Problem.Err).
var (
	// ErrVersionMismatch: the module's CRC for a symbol is not the
	// kernel's: check_version()'s "disagrees about version of symbol".
	ErrVersionMismatch = errors.New("symbol version disagrees with the kernel's")
	// ErrNoSymbolVersion: the module's __versions does not list a symbol
	// it imports: check_version()'s "no symbol version for".
	ErrNoSymbolVersion = errors.New("no symbol version")
	// ErrNamespaceNotImported: the symbol is exported into a namespace
	// the module does not import (verify_namespace_is_imported()).
	ErrNamespaceNotImported = errors.New("symbol namespace not imported")
)

// Module is what Check needs to know of a module.
type Module struct {
	// Name is the module's name, which the kernel's messages begin with.
	Name string
	// Versions are its __versions section's entries (ParseVersions);
	// HasVersions, whether it has the section at all.
	Versions    []Version
	HasVersions bool
	// ExtVersions are its extended versions (ParseExtVersions), which a
	// 7.2 kernel reads instead of __versions where the module has them
	// (CONFIG_EXTENDED_MODVERSIONS); HasExtVersions, whether it has.
	ExtVersions    []Version
	HasExtVersions bool
	// Vermagic is its .modinfo vermagic (the first, as get_modinfo()
	// takes it); HasVermagic, whether it has one (CheckVermagic).
	Vermagic    string
	HasVermagic bool
	// Imports are its .modinfo import_ns values.
	Imports []string
	// Undefined are the names the module loader resolves for it: its
	// symbol table's undefined symbols, in table order.
	Undefined []string
}

// Problem is a symbol the module loader refuses. Its Error is the
// kernel's message; errors.Is finds its kind.
type Problem struct {
	Symbol string
	Err    error
	// ModuleCRC is the module's CRC for the symbol, and KernelCRC the
	// kernel's, when both are known (ErrVersionMismatch).
	ModuleCRC uint64
	KernelCRC uint32
	// Namespace is the symbol's namespace (ErrNamespaceNotImported).
	Namespace string
	// Message is the kernel's message for it.
	Message string
}

func (p *Problem) Error() string { return p.Message }
func (p *Problem) Unwrap() error { return p.Err }

// Diagnostic is the problem as a diag.Diagnostic: check_version()'s
// refusal (kind "symbol_version"), or check_modinfo()'s of the vermagic
// (kind "vermagic"), in the kernel's words.
func (p *Problem) Diagnostic() diag.Diagnostic {
	d := diag.Diagnostic{Kind: diag.KindSymbolVersion, Severity: diag.Error, Message: p.Message, Kernel: p.Message, Err: p,
		Location: diag.Location{Symbol: p.Symbol}}
	if errors.Is(p.Err, ErrVermagic) {
		d.Kind, d.Location = diag.KindVermagic, diag.Location{}
	}
	return d
}

// Report is a module checked against a Module.symvers.
type Report struct {
	// Source is the Module.symvers the module was checked against.
	Source string
	// Checked counts the symbols whose version or namespace was checked,
	// module_layout included.
	Checked int
	// Problems are the symbols the loader refuses, in the order it
	// checks them: module_layout first (which fails the whole load,
	// -ENOEXEC: the kernel says nothing of the rest), then the symbol
	// table's (simplify_symbols() reports each, "Unknown symbol %s (err
	// -22)" after the reason, and fails the load).
	Problems []Problem
	// Forced: the module has no __versions section, and the kernel's
	// exports carry CRCs: check_version() lets each symbol through only
	// by try_to_force_load(), which with CONFIG_MODULE_FORCE_LOAD taints
	// the kernel and without it fails the load (-ENOEXEC) at
	// module_layout. Not a Problem: it depends on that option.
	Forced bool
	// NoCRCs: the kernel's exports carry no CRC (no CONFIG_MODVERSIONS),
	// so no version is checked, only namespaces.
	NoCRCs bool
	// Unlisted are the symbols a module's extended versions do not list
	// (7.2): the kernel lets them through, and warns once ("no extended
	// symbol version for").
	Unlisted []string
}

// OK reports whether the loader refuses none of the module's symbols.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check checks m's symbol versions and namespace imports against t, as
// the module loader of generation g does when it loads m. A symbol t
// does not export is left alone: the loader's find_symbol() finds it
// nowhere ("Unknown symbol"), or in a module outside the build.
func (t *Table) Check(m Module, g kgen.Generation) *Report {
	// check_version() (7.2): where the module has extended versions, they
	// alone are read, and a symbol they do not list passes.
	ext := m.HasExtVersions && g >= kgen.Linux7_2
	list, has := m.Versions, m.HasVersions
	if ext {
		list, has = m.ExtVersions, true
	}
	r := &Report{Source: t.Source, NoCRCs: !t.crcs, Forced: t.crcs && !has}
	versions := make(map[string]uint64, len(list))
	for _, v := range list {
		if _, dup := versions[v.Name]; !dup { // check_version() takes the first
			versions[v.Name] = v.CRC
		}
	}
	// check_version(): a kernel symbol without a CRC passes; a module
	// without __versions passes only by force (Forced); else the module
	// must list the symbol, with the kernel's CRC.
	version := func(name string, crc uint32) *Problem {
		if !t.crcs || !has {
			return nil
		}
		mc, ok := versions[name]
		switch {
		case !ok && ext:
			r.Unlisted = append(r.Unlisted, name) // "no extended symbol version for", a warning
			return nil
		case !ok:
			return &Problem{Symbol: name, Err: ErrNoSymbolVersion, KernelCRC: crc,
				Message: fmt.Sprintf("%s: no symbol version for %s", m.Name, name)}
		case mc != uint64(crc):
			return &Problem{Symbol: name, Err: ErrVersionMismatch, ModuleCRC: mc, KernelCRC: crc,
				Message: fmt.Sprintf("%s: disagrees about version of symbol %s", m.Name, name)}
		}
		return nil
	}
	// check_modstruct_version(): module_layout, before anything else.
	if e, ok := t.exports["module_layout"]; ok && t.crcs {
		r.Checked++
		if p := version(e.Name, e.CRC); p != nil {
			r.Problems = append(r.Problems, *p)
		}
	}
	imported := map[string]bool{}
	for _, ns := range m.Imports {
		imported[ns] = true
	}
	seen := map[string]bool{}
	for _, name := range m.Undefined {
		e, ok := t.exports[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		r.Checked++
		// resolve_symbol(): the version first, then the namespace.
		if p := version(name, e.CRC); p != nil {
			r.Problems = append(r.Problems, *p)
			continue
		}
		if e.Namespace != "" && !imported[e.Namespace] {
			r.Problems = append(r.Problems, Problem{Symbol: name, Err: ErrNamespaceNotImported, Namespace: e.Namespace,
				Message: fmt.Sprintf("%s: module uses symbol (%s) from namespace %s, but does not import it.", m.Name, name, e.Namespace)})
		}
	}
	return r
}
