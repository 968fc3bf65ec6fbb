// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"cmp"
	"debug/elf"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/symvers"
)

// The section where modpost puts a module's struct module.
const thisModuleSection = ".gnu.linkonce.this_module"

// builtModule reports whether the file is a module to load, not an
// object kbuild has still to link: it has a .modinfo, and livepatch
// sections or a livepatch mark. Only such a file is told of the struct
// module the loader wants (kbuild links one into every module).
func (m *Module) builtModule() bool {
	return m.elf.SectionByName(".modinfo") != nil && (m.Format != FormatNone || m.marked)
}

// elfRefusal is the first refusal of the loader's checks of the file's
// sections for generation g, the first steps of load_module(), or nil.
// 6.1's setup_load_info() wants a symbol table (the first one serves),
// then a struct module section. From 6.12, elf_validity_cache_copy()
// checks, in its order: one .modinfo at most
// (elf_validity_cache_index_info()); exactly one struct module section,
// with contents, allocated (elf_validity_cache_index_mod()); exactly one
// symbol table (elf_validity_cache_index_sym()).
//
// The size of struct module, which a 6.12 kernel checks too, is the
// kernel's own build's and is not in its symbols: it is checked where
// ResolveOptions.ModuleStructSize gives it.
func (m *Module) elfRefusal(g kgen.Generation, opts *ResolveOptions) *RelocError {
	if m.intermediate != nil {
		return m.intermediate
	}
	if g <= kgen.Linux6_1 {
		return cmp.Or(m.noSymbols, m.noModuleStruct)
	}
	if m.builtModule() {
		if e := m.checkIndexInfo(); e != nil {
			return e
		}
		if e := m.checkIndexMod(opts); e != nil {
			return e
		}
	}
	if m.elf.SymtabCount == 1 {
		if e := cmp.Or(m.checkExtVersions(g), m.checkStrtab(g)); e != nil {
			return e
		}
	}
	if m.elf.SymtabCount > 1 {
		return &RelocError{File: m.Path, Section: ".symtab", Err: ErrNoSymbols,
			Kernel: m.loaderName() + ": module has no symbols (stripped?)",
			Hint:   fmt.Sprintf("the file has %d symbol tables (SHT_SYMTAB) and the loader takes exactly one from Linux 6.12 on (6.1 took the first): link the module with kbuild, which makes one", m.elf.SymtabCount)}
	}
	return m.noSymbols
}

// checkStrtab: elf_validity_cache_strtab() (7.2 and later) wants the
// symbol string table to begin and end with a NUL. (A name outside the
// table is malformed on every generation: elfobj refuses it.)
func (m *Module) checkStrtab(g kgen.Generation) *RelocError {
	if g < kgen.Linux7_2 {
		return nil
	}
	st := &m.elf.Sections[m.elf.Sections[m.elf.Symtab].Link]
	tab := m.elf.SectionData(st)
	says := ""
	switch {
	case len(tab) == 0:
		says = "empty symbol string table"
	case tab[0] != 0:
		says = "symbol string table missing leading NUL"
	case tab[len(tab)-1] != 0:
		says = "symbol string table isn't NUL terminated"
	default:
		return nil
	}
	return &RelocError{File: m.Path, Section: st.Name, Err: ErrMalformed, Kernel: says,
		Hint: "the symbol names' table (" + st.Name + ") must begin and end with a NUL byte, as every linker writes it: the file was written or changed by hand"}
}

// checkExtVersions: elf_validity_cache_index_versions() (7.2 and later)
// wants both extended version sections or neither, and a name for each
// CRC. (modprobe --force-modversion skips the check; klpresolve does not
// assume it.)
func (m *Module) checkExtVersions(g kgen.Generation) *RelocError {
	if g < kgen.Linux7_2 {
		return nil
	}
	crcs, names := m.allocSection("__version_ext_crcs"), m.allocSection("__version_ext_names")
	says, sec := "", "__version_ext_crcs"
	switch {
	case (crcs == nil) != (names == nil):
		says = "extended version crc+name presence does not match"
		if crcs == nil {
			sec = "__version_ext_names"
		}
	case crcs != nil:
		if _, err := symvers.ParseExtVersions(m.elf.SectionData(crcs), m.elf.SectionData(names), m.elf.Order); err != nil {
			says = "more extended version crcs than names"
		}
	}
	if says == "" {
		return nil
	}
	return &RelocError{File: m.Path, Section: sec, Err: ErrMalformed, Kernel: says,
		Hint: "a module's extended symbol versions are a section of CRCs and one of their names, one name for each CRC, which modpost writes together (CONFIG_EXTENDED_MODVERSIONS): rebuild the module with kbuild"}
}

// checkIndexInfo: elf_validity_cache_index_info() (6.12 and later).
func (m *Module) checkIndexInfo() *RelocError {
	if n := m.countSections(".modinfo"); n > 1 {
		return &RelocError{File: m.Path, Section: ".modinfo", Err: ErrBadModinfo,
			Kernel: "Only one .modinfo section must exist.",
			Hint:   fmt.Sprintf("the file has %d .modinfo sections and the loader takes one from Linux 6.12 on: a module is linked from objects whose .modinfo sections the linker merges (ld -r), so two mean one was renamed or added by hand", n)}
	}
	return nil
}

// checkIndexMod: elf_validity_cache_index_mod() (6.12 and later).
func (m *Module) checkIndexMod(opts *ResolveOptions) *RelocError {
	name := m.loaderName()
	n := m.countSections(thisModuleSection)
	if n == 0 {
		e := *m.noModuleStruct
		e.Kernel = fmt.Sprintf("module %s: Exactly one %s section must exist.", name, thisModuleSection)
		return &e
	}
	bad := func(says, hint string) *RelocError {
		return &RelocError{File: m.Path, Section: thisModuleSection, Err: ErrBadModuleStruct,
			Kernel: fmt.Sprintf("module %s: %s", name, says), Hint: hint}
	}
	if n > 1 {
		return bad(fmt.Sprintf("Exactly one %s section must exist.", thisModuleSection),
			fmt.Sprintf("the file has %d %s sections, where the loader finds struct module: kbuild links one (from %s.mod.o); link the patch with kbuild once, not a module into another", n, thisModuleSection, m.KernelName()))
	}
	s := m.elf.SectionByName(thisModuleSection)
	switch {
	case s.Type == elf.SHT_NOBITS:
		return bad(thisModuleSection+" section must have a size set",
			"the struct module section has no contents in the file (SHT_NOBITS): modpost's "+m.KernelName()+".mod.c initialises it, and kbuild links it as data")
	case s.Flags&elf.SHF_ALLOC == 0:
		return bad(thisModuleSection+" must occupy memory during process execution",
			"the struct module section is not allocated (no SHF_ALLOC), so the loader would not copy it: it is data modpost's "+m.KernelName()+".mod.c defines, allocated and writable")
	case opts.ModuleStructSize != 0 && s.Size != opts.ModuleStructSize:
		return bad(thisModuleSection+" section size must match the kernel's built struct module size at run time",
			fmt.Sprintf("the module's struct module is %d bytes and the kernel's %d%s: the module was built against another kernel's headers (another release, or another configuration); build it against this kernel's", s.Size, opts.ModuleStructSize, structFrom(opts.ModuleStructFrom)))
	}
	return nil
}

// countSections is how many sections are named name
// (find_any_unique_sec()).
func (m *Module) countSections(name string) int {
	n := 0
	for i := range m.elf.Sections {
		if m.elf.Sections[i].Name == name {
			n++
		}
	}
	return n
}

// checkExportSections: check_export_symbol_sections() (7.2 and later)
// refuses a module that exports symbols (__ksymtab has entries) without
// __kflagstab, where 7.2 keeps each export's flags (GPL-only among them);
// a module built for an older kernel has none. It runs after
// layout_and_allocate(), from load_module() once the module's sections
// are found (find_module_sections()).
func (m *Module) checkExportSections(g kgen.Generation) *RelocError {
	if g < kgen.Linux7_2 {
		return nil
	}
	tab := m.allocSection("__ksymtab")
	if tab == nil || tab.Size == 0 || m.allocSection("__kflagstab") != nil {
		return nil
	}
	return &RelocError{File: m.Path, Section: "__ksymtab", Err: ErrNoExportFlags,
		Kernel: m.KernelName() + ": no flags for exported symbols",
		Hint:   "the module exports symbols (__ksymtab) without __kflagstab, which Linux 7.x kernels read beside them: it was built for an older kernel; build it against this kernel's headers"}
}

// allocSection is the first allocated section named name, or nil
// (find_sec(), which section_addr() uses).
func (m *Module) allocSection(name string) *elfobj.Section {
	for i := range m.elf.Sections {
		s := &m.elf.Sections[i]
		if s.Name == name && s.Flags&elf.SHF_ALLOC != 0 {
			return s
		}
	}
	return nil
}

// ModuleStructSize is the size of the module's
// .gnu.linkonce.this_module, its struct module as modpost's NAME.mod.c
// defines it from the kernel's headers: sizeof(struct module) of the
// kernel it was built for. 0 where the module has none, or one without
// contents.
func (m *Module) ModuleStructSize() uint64 {
	s := m.elf.SectionByName(thisModuleSection)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return 0
	}
	return s.Size
}

// structFrom says where the kernel's struct module size was read.
func structFrom(path string) string {
	if path == "" {
		return ""
	}
	return " (as its module " + path + " has it)"
}
