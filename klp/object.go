// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/internal/objbridge"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/symvers"
)

// ModInfo is the value of the module's first .modinfo entry key=value
// (get_modinfo()), or "".
func (m *Module) ModInfo(key string) string { return m.elf.ModInfo(key) }

// ModInfoAll is the value of every .modinfo entry for key, in order.
func (m *Module) ModInfoAll(key string) []string { return m.elf.ModInfoAll(key) }

// HasSection reports whether the module has a section named name.
func (m *Module) HasSection(name string) bool { return m.elf.HasSection(name) }

// LinkModule is the module as package modplt links it, made from the
// object Open already parsed (it is not read again).
func (m *Module) LinkModule() (*modplt.Module, error) {
	v, err := objbridge.LinkModule(m.elf)
	if err != nil {
		return nil, err
	}
	return v.(*modplt.Module), nil
}

// Undefined lists the names the module loader looks up for the module's
// undefined symbols (simplify_symbols()), sorted, each once: every
// SHN_UNDEF symbol but the weak ones and livepatch's own (SymPrefix),
// under the name the architecture's loader looks for
// (modplt.LookupName).
func (m *Module) Undefined() []string {
	f := m.elf
	seen := map[string]bool{}
	var out []string
	for i := range f.Symbols {
		s := &f.Symbols[i]
		if s.Shndx != uint16(elf.SHN_UNDEF) || s.Name == "" || s.Bind() == elf.STB_WEAK || strings.HasPrefix(s.Name, SymPrefix) {
			continue
		}
		name, ok := modplt.LookupName(f.Machine, s.Name)
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Versions reads what symvers.Table.Check and symvers.CheckVermagic need
// of the module: its name, its vermagic, its __versions section (if the
// loader sees it), 7.2's extended versions, its .modinfo import_ns values
// and the undefined symbols the module loader resolves (simplify_symbols():
// every SHN_UNDEF one; livepatch symbols are SHN_LIVEPATCH).
func (m *Module) Versions() (symvers.Module, error) {
	f := m.elf
	sm := symvers.Module{Name: m.KernelName(), Imports: f.ModInfoAll("import_ns")}
	if vs := f.ModInfoAll("vermagic"); len(vs) > 0 {
		sm.Vermagic, sm.HasVermagic = vs[0], true // get_modinfo(): the first
	}
	// find_sec(): a section without SHF_ALLOC is not there for the loader.
	if s := f.SectionByName("__versions"); s != nil && s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 {
		vs, err := symvers.ParseVersions(f.SectionData(s), f.Order, f.Is64())
		if err != nil {
			return symvers.Module{}, fmt.Errorf("%s: %w", m.Path, err)
		}
		sm.Versions, sm.HasVersions = vs, true
	}
	// elf_validity_cache_index_versions() (7.2): both sections, or
	// neither (the loader's checks refuse one without the other).
	crcs, names := f.SectionByName("__version_ext_crcs"), f.SectionByName("__version_ext_names")
	if crcs != nil && names != nil && crcs.Flags&names.Flags&elf.SHF_ALLOC != 0 {
		vs, err := symvers.ParseExtVersions(f.SectionData(crcs), f.SectionData(names), f.Order)
		if err != nil {
			return symvers.Module{}, fmt.Errorf("%s: %w", m.Path, err)
		}
		sm.ExtVersions, sm.HasExtVersions = vs, true
	}
	for i := 1; i < len(f.Symbols); i++ {
		if s := &f.Symbols[i]; s.Shndx == uint16(elf.SHN_UNDEF) && s.Name != "" {
			sm.Undefined = append(sm.Undefined, s.Name)
		}
	}
	return sm, nil
}
