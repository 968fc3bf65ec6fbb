// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/modname"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/modplt"
)

// Target is an ordinary module's symbols as the kernel will hold them
// once the module loads, read from its .ko file. A patch's relocations
// and patched functions in a module that a kernel's symbol list lacks
// (not loaded, or a System.map, which lists no module) are deferred:
// livepatch resolves them when the module loads. Resolving them against
// the module's Target says now whether they will resolve then.
//
// Which of the module's symbols the kernel counts depends on the order
// of the two loads (kernel/module/kallsyms.c):
//
//   - the module loads after the patch: klp_module_coming() resolves
//     while the module is COMING, when mod->kallsyms is the whole symbol
//     table (add_kallsyms() points it there): Coming;
//   - the module was loaded first: do_init_module() has switched
//     mod->kallsyms to the core symbols (add_kallsyms() copies those
//     is_core_symbol() keeps: no init code, no non-allocated section, and
//     code only without CONFIG_KALLSYMS_ALL), which klp_init_object_loaded()
//     counts in and /proc/kallsyms lists: Loaded.
//
// A name can be unique in one and not in the other (a static function in
// init code and one of the same name in core code), or be in one only
// (init code; data without CONFIG_KALLSYMS_ALL, though a kernel without it
// has no livepatch either, CONFIG_LIVEPATCH depending on it): then the
// patch resolves in one order and not in the other (ErrLoadOrder).
//
// Addresses in the indexes are not the kernel's (the module is not
// loaded): each section is placed after the previous one, from
// targetBase; Where turns one into section+offset. A target is
// immutable, and safe for concurrent use.
type Target struct {
	Name string // the module's name: .modinfo name=, else the file's with dashes as underscores
	Path string
	Arch string
	// ByteOrder is the module's (Module.ByteOrder).
	ByteOrder binary.ByteOrder
	// KallsymsAll is the kernel's CONFIG_KALLSYMS_ALL as NewTarget was
	// told it: without it, Loaded lists code only.
	KallsymsAll bool
	Coming      *kallsyms.Index // nil when the module has no symbol
	Loaded      *kallsyms.Index // nil when it keeps none
	secs        []targetSection // in address order
	// sites are the module's ftrace call sites, sorted, when it lists
	// them (hasSites); sizes are its functions' sizes, by address.
	sites    []uint64
	hasSites bool
	sizes    map[uint64]uint64
}

type targetSection struct {
	start, size uint64
	name        string
}

// targetBase is where a target's first section is placed: low, and not
// 0, which the kernel's lookup takes for "not found".
const targetBase = 0x1000

// NewTarget reads m, an ordinary module, as a target (see Target).
// kallsymsAll is the kernel's CONFIG_KALLSYMS_ALL
// (kallsyms.Index.KernelKallsyms tells it from a kallsyms file or a
// System.map; a kernel with livepatch always has it).
func NewTarget(m *Module, kallsymsAll bool) (*Target, error) {
	f := m.elf
	t := &Target{Name: m.Name, Path: m.Path, Arch: m.Arch, ByteOrder: m.ByteOrder, KallsymsAll: kallsymsAll, sizes: map[uint64]uint64{}}
	if t.Name == "" {
		t.Name = ModuleNameFromFile(m.Path)
	}
	if t.Name == "" || strings.ContainsAny(t.Name, " \t\n\r[]") {
		return nil, fmt.Errorf("%s: %w: module name %q", m.Path, ErrMalformed, t.Name)
	}
	// Sections the loader takes out of the module's memory before it lays
	// it out: .modinfo and __versions (rewrite_section_headers()), and
	// the per-cpu section, allocated apart (layout_and_allocate()).
	pcpu, unalloc := 0, map[int]bool{}
	for i, s := range f.Sections {
		switch {
		case s.Name == ".modinfo" || s.Name == "__versions":
			unalloc[i] = true
		case s.Name == ".data..percpu" && s.Flags&elf.SHF_ALLOC != 0 && pcpu == 0:
			pcpu = i // find_sec(): the first allocated one
			unalloc[i] = true
		}
	}
	base := make([]uint64, len(f.Sections))
	next := uint64(targetBase)
	for i, s := range f.Sections {
		if i == 0 {
			continue
		}
		base[i] = next
		t.secs = append(t.secs, targetSection{start: next, size: s.Size, name: s.Name})
		// A gap after each, so that an address at a section's end is
		// still that section's; sizes are the file's, bounded by it
		// for all but NOBITS, which elfobj bounds too.
		next = (next + min(s.Size, 1<<40) + 16) &^ 15
	}
	exported := map[string]bool{}
	for _, e := range f.Exports() {
		exported[e.Name] = true
	}
	flags := func(i int) elf.SectionFlag {
		fl := f.Sections[i].Flags
		if unalloc[i] {
			fl &^= elf.SHF_ALLOC
		}
		return fl
	}
	// isCore is elfobj.File.CoreSymbol: a section is
	// core when allocated and not init.
	isCore := func(s int) bool {
		return f.CoreSymbol(s, m.marked, kallsymsAll, pcpu, func(sh int) (bool, bool) {
			fl := flags(sh)
			return fl&elf.SHF_ALLOC != 0 && !modplt.InitSection(m.Machine, f.Sections[sh].Name), fl&elf.SHF_EXECINSTR != 0
		})
	}
	if err := t.readSites(m, base); err != nil {
		return nil, err
	}
	var coming, loaded []byte
	for i := range f.Symbols {
		sym := &f.Symbols[i]
		// module_kallsyms_on_each_symbol() skips undefined symbols; an
		// empty name never matches, and s_show() lists none. A name
		// kallsyms could not list (a blank in it, or longer than the
		// kernel's KSYM_NAME_LEN) no relocation can name either.
		if sym.Shndx == uint16(elf.SHN_UNDEF) || sym.Name == "" || len(sym.Name) >= kallsyms.KSYMNameLen ||
			strings.ContainsFunc(sym.Name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			continue
		}
		addr := sym.Value // SHN_ABS and other reserved indexes: as is
		if sh := int(sym.Shndx); sh < len(f.Sections) {
			addr += base[sh]
			if sym.Type() == elf.STT_FUNC {
				t.sizes[addr] = sym.Size
			}
		}
		start := len(coming)
		coming = strconv.AppendUint(coming, addr, 16)
		coming = append(coming, ' ', elfType(f.Sections, sym.Info, sym.Shndx, pcpu, flags, exported[sym.Name]), ' ')
		coming = append(coming, sym.Name...)
		coming = append(coming, "\t["...)
		coming = append(coming, t.Name...)
		coming = append(coming, "]\n"...)
		if isCore(i) {
			loaded = append(loaded, coming[start:]...)
		}
	}
	var err error
	if t.Coming, err = targetIndex(m.Path+" (whole symbol table)", coming); err != nil {
		return nil, err
	}
	if t.Loaded, err = targetIndex(m.Path+" (core symbols)", loaded); err != nil {
		return nil, err
	}
	return t, nil
}

// readSites reads the module's ftrace call sites: the relocations of
// __mcount_loc, or of __patchable_function_entries where the compiler
// makes them (find_module_sections()'s FTRACE_CALLSITE_SECTION), each
// against a function or its section. A module with neither (built
// without ftrace, or REL relocations) is not checked.
func (t *Target) readSites(m *Module, base []uint64) error {
	f := m.elf
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA || int(s.Info) <= 0 || int(s.Info) >= len(f.Sections) {
			continue
		}
		if n := f.Sections[s.Info].Name; n != "__mcount_loc" && n != "__patchable_function_entries" {
			continue
		}
		rels, err := f.Relocs(s)
		if err != nil {
			return err
		}
		t.hasSites = true
		for _, r := range rels {
			sym := &f.Symbols[r.Sym]
			if sh := int(sym.Shndx); sh > 0 && sh < len(base) {
				t.sites = append(t.sites, base[sh]+sym.Value+uint64(r.Addend))
			}
		}
	}
	slices.Sort(t.sites)
	return nil
}

// traceable reports whether the function at addr has an ftrace call
// site, as klp_patch_func() requires (ftrace_location(): a record within
// the function); true for a module that lists no call sites.
func (t *Target) traceable(addr uint64) bool {
	if !t.hasSites {
		return true
	}
	i, _ := slices.BinarySearch(t.sites, addr)
	return i < len(t.sites) && t.sites[i] < addr+max(t.sizes[addr], 1)
}

// checkFunc is checkTarget for a patched function, which must also be
// traceable: klp_patch_func() fails the patch for one without an ftrace
// call site, when the module loads ("failed to find location").
func (m *Module) checkFunc(t *Target, fn Func) *RelocError {
	s, r := fn.where()
	sym, e := m.checkTarget(t, s, r)
	if e != nil || t.traceable(sym.Address) {
		return e
	}
	return m.notTraceable(t, fn, sym.Address)
}

// Matches reports whether t is the build of the module ix lists under
// t.Name: the names of its core symbols are ix's lines for the module, in
// order (a loaded module's kallsyms lines are its core symbols). A module
// ix does not list matches nothing.
func (t *Target) Matches(ix *kallsyms.Index) bool {
	if !ix.HasObject(t.Name) {
		return false
	}
	var names []string
	if t.Loaded != nil {
		t.Loaded.Symbols(t.Name, func(s kallsyms.Symbol) bool { names = append(names, s.Name); return true })
	}
	i, same := 0, true
	ix.Symbols(t.Name, func(s kallsyms.Symbol) bool {
		same = i < len(names) && names[i] == s.Name
		i++
		return same
	})
	return same && i == len(names)
}

// checkLoadedFunc checks that a patched function of a loaded module,
// resolved against the kernel's symbols, has an ftrace call site in the
// module's file: it is the same function in the file's core symbols,
// which are what the kernel's kallsyms lists of the module. A file whose
// symbols do not answer alike is not this module's build, and says
// nothing.
func (m *Module) checkLoadedFunc(t *Target, fn Func) *RelocError {
	sym, err := t.lookup(t.Loaded, fn.Name, fn.Pos)
	if err != nil || t.traceable(sym.Address) {
		return nil
	}
	return m.notTraceable(t, fn, sym.Address)
}

// notTraceable is klp_patch_func()'s failure for fn, at addr in t.
func (m *Module) notTraceable(t *Target, fn Func, addr uint64) *RelocError {
	s, r := fn.where()
	return m.relocErr(s, r, &CheckError{Kind: ErrNotTraceable,
		Kernel: fmt.Sprintf("failed to find location for function '%s'", fn.Name),
		Hint: fmt.Sprintf("%s is %s in %s, and the module lists no ftrace call site in it (notrace, or code built without ftrace), so livepatch cannot patch it; patch what calls it instead; checked against %s",
			fn.Name, t.Where(addr), t.Name, t.Path)})
}

// targetIndex indexes a target's kallsyms lines; nil when there are none
// (a module may have no symbol the kernel keeps), which lookup takes for
// an object without symbols. The lines are made from the module's own
// symbols, so an error is the module's: ErrMalformed.
func targetIndex(name string, lines []byte) (*kallsyms.Index, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	ix, err := kallsyms.ParseBytes(name, lines, kallsyms.Options{})
	if err != nil {
		return nil, &targetError{name: name, err: err}
	}
	return ix, nil
}

// targetError is a module's symbols that make no index: ErrMalformed, and
// kallsyms' reason, said of the module.
type targetError struct {
	name string
	err  error
}

func (e *targetError) Error() string {
	why := strings.TrimPrefix(e.err.Error(), e.name+": ")
	if errors.Is(e.err, kallsyms.ErrRestricted) {
		// kallsyms' words are about /proc/kallsyms; here every symbol
		// is absolute at 0, in no section.
		why = "every symbol's address is 0: each is absolute (SHN_ABS), in no section"
	}
	return fmt.Sprintf("%s: %v: %s", e.name, ErrMalformed, why)
}

func (e *targetError) Unwrap() []error { return []error{ErrMalformed, e.err} }

// lookup is ix.Lookup, for a target's index, nil when it has no symbol.
func (t *Target) lookup(ix *kallsyms.Index, name string, pos uint64) (kallsyms.Symbol, error) {
	if ix == nil {
		return kallsyms.Symbol{}, &kallsyms.LookupError{Object: t.Name, Name: name, Pos: pos, Kind: kallsyms.ErrNotFound}
	}
	return ix.Lookup(t.Name, name, pos)
}

// elfType is the kernel's type letter for a module symbol (elf_type(),
// kernel/module/kallsyms.c), upper case when the module exports it
// (is_exported(), which this takes from the module's __ksymtab_<name>
// symbols). ARCH_SHF_SMALL is 0 on the architectures here.
func elfType(secs []elfobj.Section, info uint8, shndx uint16, pcpu int, flags func(int) elf.SectionFlag, exported bool) byte {
	var c byte
	bind, typ := elf.ST_BIND(info), elf.ST_TYPE(info)
	switch sh := int(shndx); {
	case bind == elf.STB_WEAK && typ == elf.STT_OBJECT:
		c = 'v'
	case bind == elf.STB_WEAK:
		c = 'w'
	case shndx == uint16(elf.SHN_ABS) || (sh == pcpu && pcpu != 0):
		c = 'a'
	case shndx >= uint16(elf.SHN_LORESERVE) || sh >= len(secs):
		c = '?'
	case flags(sh)&elf.SHF_EXECINSTR != 0:
		c = 't'
	case flags(sh)&elf.SHF_ALLOC != 0 && secs[sh].Type != elf.SHT_NOBITS:
		c = 'd'
		if flags(sh)&elf.SHF_WRITE == 0 {
			c = 'r'
		}
	case secs[sh].Type == elf.SHT_NOBITS:
		c = 'b'
	case strings.HasPrefix(secs[sh].Name, ".debug"):
		c = 'n'
	default:
		c = '?'
	}
	// s_show() (kernel/kallsyms.c): "global" if exported, "local" if not.
	if exported && c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c
}

// Where names addr, an address in t's indexes, as section+offset.
func (t *Target) Where(addr uint64) string {
	i, _ := slices.BinarySearchFunc(t.secs, addr, func(s targetSection, a uint64) int {
		if s.start > a {
			return 1
		}
		return -1
	})
	if i == 0 {
		return fmt.Sprintf("*ABS*+%#x", addr)
	}
	s := t.secs[i-1]
	return fmt.Sprintf("%s+%#x", s.name, addr-s.start)
}

// ModuleNameFromFile is the module name kbuild gives a file
// (KBUILD_MODNAME): its base name without .ko and a compression suffix,
// dashes as underscores. "" when the name has no .ko.
func ModuleNameFromFile(path string) string { return modname.FromFile(path) }

// checkTarget looks r's symbol up in t as livepatch will when t's module
// loads, in both orders (see Target): the symbol when both find the same
// one, else the error, located at r.
func (m *Module) checkTarget(t *Target, s *RelaSection, r *Relocation) (kallsyms.Symbol, *RelocError) {
	o, name, pos := r.Sym.Object, r.Sym.Name, r.Sym.Pos
	cs, cerr := t.lookup(t.Coming, name, pos)
	ls, lerr := t.lookup(t.Loaded, name, pos)
	if cerr == nil && lerr == nil && cs.Address == ls.Address {
		return cs, nil
	}
	e := &RelocError{File: m.Path, Section: s.Name, Index: r.Index, Offset: r.Offset, Symbol: r.Symbol, Err: ErrLoadOrder}
	checked := "checked against " + t.Path
	var ce, le *kallsyms.LookupError
	errors.As(cerr, &ce)
	errors.As(lerr, &le)
	switch {
	case ce != nil && le != nil && ce.Kind == le.Kind && ce.Count == le.Count:
		// Either order fails alike: the kernel's own error.
		e.Err, e.Kernel = cerr, ce.KernelMessage()
		e.Hint = fmt.Sprintf("%s; %s, as the kernel will resolve it when %s loads", t.help(ce), checked, o)
	case ce != nil && le != nil:
		e.Kernel = ce.KernelMessage()
		e.Hint = fmt.Sprintf("fails whichever loads first, differently: if %s loads after the patch, %s; if it was loaded first, %s (%s); %s",
			o, t.help(ce), t.help(le), le.KernelMessage(), checked)
	case le != nil:
		e.Kernel = le.KernelMessage()
		e.Hint = fmt.Sprintf("if %s loads after the patch, this resolves (to %s: the kernel counts a loading module's whole symbol table); if %s was loaded first, it fails: the kernel then counts only its core symbols (is_core_symbol(): no init code, %s): %s; %s",
			o, t.Where(cs.Address), o, t.coreNote(), t.help(le), checked)
	case ce != nil:
		e.Kernel = ce.KernelMessage()
		e.Hint = fmt.Sprintf("if %s was loaded before the patch, this resolves (to %s, among its core symbols); if %s loads after the patch, it fails: while a module loads, the kernel counts its whole symbol table, init code included: %s; %s",
			o, t.Where(ls.Address), o, t.help(ce), checked)
	default:
		e.Kernel = "(no message: the kernel resolves another symbol)"
		e.Hint = fmt.Sprintf("%s,%d is %s if %s loads after the patch, but %s if it was loaded first (the kernel counts init code while a module loads, core symbols after): give the sympos of one symbol in both, or patch another; %s",
			name, pos, t.Where(cs.Address), o, t.Where(ls.Address), checked)
	}
	return kallsyms.Symbol{}, e
}

// help is a target lookup's help, with the candidates as sections and
// offsets (the target's addresses are not the kernel's).
func (t *Target) help(le *kallsyms.LookupError) string {
	if h := le.HelpAt(t.Where); h != "" {
		return h
	}
	return fmt.Sprintf("%s has no symbol named %q", le.Object, le.Name)
}

// coreNote is what else the core symbols leave out.
func (t *Target) coreNote() string {
	if t.KallsymsAll {
		return "no section the module's memory does not hold"
	}
	return "and code only: the kernel has no CONFIG_KALLSYMS_ALL"
}
