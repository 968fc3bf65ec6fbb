// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/modname"
	"github.com/klpresolve/klpresolve/internal/objbridge"
	"github.com/klpresolve/klpresolve/kgen"
)

// maxModuleSize caps a decompressed module; a compressed file's size does
// not justify its decompressed size.
const maxModuleSize = 1 << 30

// Module is a relocatable kernel module, parsed and checked, ready to be
// counted (and, later, linked). It is read-only once made: several
// goroutines may count one Module at once.
type Module struct {
	Path string // as given to Open or Parse
	Name string // .modinfo name=, or the file name without .ko
	Arch string // the kernel's name: "arm64", "arm", "x86_64"
	// ByteOrder is the module's; a big-endian arm64 or arm module is
	// linked with its data in that order (instructions stay
	// little-endian on arm64 and BE8 arm).
	ByteOrder binary.ByteOrder
	// License is .modinfo's license= ("" when there is none).
	License string

	f     *elfobj.File
	arch  *arch
	shndx []uint16 // each symbol's st_shndx, dense for the counting loop
}

// Open reads a module from path (plain, or gzip/zstd/xz compressed).
func Open(path string) (*Module, error) {
	// A pipe or a device is refused at its first bytes if they are not
	// a module's (elfobj.CheckHead), not read up to the limit.
	data, err := input.ReadFileChecked(path, maxModuleSize, elfobj.CheckHead)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// NewFile reads a module of size bytes from r. name is used in errors.
func NewFile(name string, r io.ReaderAt, size int64) (*Module, error) {
	data, err := input.ReadAt(name, r, size, maxModuleSize)
	if err != nil {
		return nil, err
	}
	return Parse(name, data)
}

// Parse describes the module in data, decompressing it if its magic says
// so. The Module keeps data.
func Parse(name string, data []byte) (*Module, error) {
	data, _, err := input.Decompress(name, data, maxModuleSize)
	if err != nil {
		return nil, err
	}
	f, err := elfobj.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return fromELF(f)
}

// init lends fromELF to package klp (klp.Module.LinkModule), through the
// internal bridge: the object klp parsed is not parsed again.
func init() {
	objbridge.LinkModule = func(f *elfobj.File) (any, error) { return fromELF(f) }
}

// fromELF makes a Module of an object already parsed by the project's ELF
// reader.
func fromELF(f *elfobj.File) (*Module, error) {
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: %w (type %v)", f.Name, ErrNotRelocatable, f.Type)
	}
	a := archFor(f.Machine)
	if a == nil || a.is64 != f.Is64() {
		return nil, fmt.Errorf("%s: %w: %s %v (%v): modplt links %s modules", f.Name, ErrUnsupportedArch, elfobj.ArchName(f.Machine), f.Class, f.Machine, linkedArches())
	}
	if f.Machine == elf.EM_PPC64 && !ppc64ELFv2(f) {
		// ELFv1 calls through function descriptors, which the stubs
		// read from the kernel's memory.
		return nil, fmt.Errorf("%s: %w: ppc64 ELFv1 (function descriptors, big-endian): modplt links ELFv2 (ppc64le) modules", f.Name, ErrUnsupportedArch)
	}
	if f.Symtab == 0 {
		// setup_load_info(): "module has no symbols (stripped?)".
		return nil, &elfobj.FormatError{File: f.Name, Msg: "no symbol table (the module loader says \"module has no symbols (stripped?)\")"}
	}
	name := f.ModInfo("name")
	if name == "" {
		name = modname.FromObject(f.Name)
	}
	shndx := make([]uint16, len(f.Symbols))
	for i := range f.Symbols {
		shndx[i] = f.Symbols[i].Shndx
	}
	return &Module{Path: f.Name, Name: name, Arch: a.name, ByteOrder: f.Order, License: f.ModInfo("license"), f: f, arch: a, shndx: shndx}, nil
}

// GPLCompatible reports whether the module's license lets it use the
// kernel's GPL-only exports (EXPORT_SYMBOL_GPL): the licenses of
// license_is_gpl_compatible() (include/linux/license.h). Any other, or
// none, taints the kernel as proprietary, and find_symbol() then skips
// GPL-only exports.
func (m *Module) GPLCompatible() bool { return GPLCompatible(m.License) }

// GPLCompatible is license_is_gpl_compatible() (include/linux/license.h):
// the license strings that let a module use GPL-only exports.
func GPLCompatible(license string) bool {
	switch license {
	case "GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL":
		return true
	}
	return false
}

// ModInfo is the value of the module's first .modinfo entry key=value
// (get_modinfo()), or "".
func (m *Module) ModInfo(key string) string { return m.f.ModInfo(key) }

// Region is where a section is loaded: the core of the module, which
// stays, or its init part, which is freed once the module's init has run.
// Each region has its own PLT (.plt and .init.plt).
type Region uint8

const (
	Core Region = iota
	Init
)

func (r Region) String() string {
	if r == Init {
		return "init"
	}
	return "core"
}

// MarshalText writes "core" or "init".
func (r Region) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// region classifies a section as module_init_layout_section() does:
// .init* (and, on arm, .ARM.extab.init*/.ARM.exidx.init*) go to init, and
// so do .exit* when the kernel is built without CONFIG_MODULE_UNLOAD (the
// rule James Morse's 2023 fix made the PLT code share with the layout
// code).
func (a *arch) region(name string, moduleUnload bool) Region {
	if hasAnyPrefix(name, a.initPrefixes) || (!moduleUnload && hasAnyPrefix(name, a.exitPrefixes)) {
		return Init
	}
	return Core
}

// LookupName is the name under which simplify_symbols() looks up an
// undefined (SHN_UNDEF) symbol of a module for machine, or false when it
// looks up none (the architecture table's noLookup and dedot: x86_64's
// and s390's _GLOBAL_OFFSET_TABLE_, powerpc64's .TOC. and dedotify()).
// For a machine this package does not link, the name as it is.
func LookupName(machine elf.Machine, name string) (string, bool) {
	if a := archFor(machine); a != nil {
		return a.lookupName(name)
	}
	return name, true
}

// lookupName is LookupName for the architecture.
func (a *arch) lookupName(name string) (string, bool) {
	switch {
	case a.noLookup != "" && name == a.noLookup:
		return "", false
	case a.dedot && len(name) > 1 && name[0] == '.':
		return name[1:], true
	}
	return name, true
}

// InitSection reports whether the module loader of a kernel built with
// CONFIG_MODULE_UNLOAD lays the section called name out in init memory,
// freed once the module's init has run (module_init_layout_section(),
// with the architecture's module_init_section(); the generic rule, .init*,
// for a machine this package does not link).
func InitSection(m elf.Machine, name string) bool {
	a := archFor(m)
	if a == nil {
		return strings.HasPrefix(name, ".init")
	}
	return a.region(name, true) == Init
}

// MissingPLTSection names the section a module of machine lacks (has
// says which sections it has) that its architecture's
// module_frob_arch_sections() refuses a module without, and what the
// loader then says after the module's name: powerpc's .stubs ("doesn't
// contain .stubs.", on every kernel), arm's and arm64's .plt or .init.plt
// ("module PLT section(s) missing", on a kernel with module PLTs:
// CONFIG_ARM_MODULE_PLTS, CONFIG_ARM64_MODULE_PLTS). Kbuild's module
// linker script makes them, so only an object linked otherwise lacks
// them. "" where nothing is missing.
func MissingPLTSection(machine elf.Machine, has func(section string) bool) (section, says string) {
	if a := archFor(machine); a != nil {
		return a.missingPLTSection(has)
	}
	return "", ""
}

// missingPLTSection is MissingPLTSection for the architecture.
func (a *arch) missingPLTSection(has func(section string) bool) (section, says string) {
	for _, s := range a.pltSections {
		if !has(s) {
			return s, a.pltMissing
		}
	}
	return "", ""
}

// arm64FtraceSection and arm64InitFtraceSection hold an arm64 module's
// ftrace PLT entries (arm64FtraceTrampolines).
const (
	arm64FtraceSection     = ".text.ftrace_trampoline"
	arm64InitFtraceSection = ".init.text.ftrace_trampoline"
)

// MissingFtracePLT names the ftrace trampoline section (see
// arm64FtraceTrampolines) that a module of machine, an arm64 one with its
// module PLT sections (MissingPLTSection finds nothing; has says which
// sections it has), lacks for a kernel of
// generation g; kbuild's module linker script makes them beside the PLT
// sections. arm64's module_finalize() (module_init_ftrace_plt()), once
// the relocations are applied, refuses such a module with -ENOEXEC and
// no message, where the kernel has dynamic ftrace. "" when there is
// none, or the module is no arm64 one.
func MissingFtracePLT(machine elf.Machine, has func(section string) bool, g kgen.Generation) string {
	if a := archFor(machine); a != nil {
		return a.missingFtracePLT(has, g)
	}
	return ""
}

// missingFtracePLT is MissingFtracePLT for the architecture.
func (a *arch) missingFtracePLT(has func(section string) bool, g kgen.Generation) string {
	if a.ftracePLT == nil {
		return ""
	}
	if missing, _ := a.missingPLTSection(has); missing != "" {
		return ""
	}
	secs, _ := a.ftracePLT(g)
	for _, name := range secs {
		if !has(name) {
			return name
		}
	}
	return ""
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
