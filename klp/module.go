// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/modplt"
)

// Livepatch ELF constants (include/uapi/linux/elf.h).
const (
	SHNLivepatch      = 0xff20     // SHN_LIVEPATCH
	SHFRelaLivepatch  = 0x00100000 // SHF_RELA_LIVEPATCH
	maxModuleFileSize = 1 << 30    // a decompressed .ko larger than this is refused
)

// Format names how a module carries its livepatch relocations.
type Format string

const (
	FormatKLP    Format = "klp"    // .klp.rela.* sections (kernel livepatch)
	FormatKpatch Format = "kpatch" // legacy kpatch .kpatch.dynrelas
	FormatNone   Format = "none"   // neither
)

// Module describes a livepatch module, independently of any kernel.
type Module struct {
	Path      string
	Name      string // .modinfo name=
	Livepatch bool   // .modinfo livepatch=Y
	Machine   elf.Machine
	Arch      string
	Class     elf.Class
	// ByteOrder is the module's: a big-endian arm64 or arm kernel
	// (CONFIG_CPU_BIG_ENDIAN) has the same Arch and loads only modules of
	// its own byte order (elf_check_arch()).
	ByteOrder binary.ByteOrder
	Format    Format
	// Compression is how the file was compressed: "gzip", "zstd", "xz",
	// "bzip2", or "" for none.
	Compression string
	// Signature is the signature appended to the module (sign-file), nil
	// when it is unsigned: a kernel that enforces module signatures
	// (CONFIG_MODULE_SIG_FORCE, or lockdown under UEFI Secure Boot)
	// refuses an unsigned module.
	Signature *Signature
	Sections  []*RelaSection
	// Kpatch holds what a kpatch-build module's .kpatch.* sections hold.
	Kpatch *Kpatch
	// Funcs are the functions the patch replaces, as the module declares
	// them (FuncSource says where), in its order.
	Funcs      []Func
	FuncSource FuncSource
	// Objects are the klp_objects the patch declares ("vmlinux" for the
	// one without a name), in its order, when known: a static klp_patch's
	// and klp-build's, and for a livepatch module that kpatch-build made
	// the ones its hook builds from .kpatch.funcs; nil otherwise.
	Objects []string
	// Callbacks are the patch's callbacks, as klp-build's klp_object_ext
	// or kpatch-build's .kpatch.callbacks.* sections declare them, in
	// the module's order.
	Callbacks []Callback
	// Warnings are things a patch author wants to know that are not a
	// relocation's failure: what the kernel would silently do (a .klp.rela
	// section without SHF_RELA_LIVEPATCH, one whose target is not
	// allocated) or refuse when the patch is enabled (no livepatch=Y).
	Warnings []string

	// The refusals the file alone decides (Refusals lists them, in the
	// loader's order).
	notMarked, noModuleStruct, intermediate, noSymbols *RelocError
	noPLTSection, noFtracePLT, notLivepatch, writeExec *RelocError

	elf *elfobj.File
	// exports are the module's exports, in the kernel's order (read once:
	// every Resolve checks them against its kernel).
	exports []elfobj.Export
	// marked: .modinfo has a livepatch key, whatever its value, which is
	// what the kernel tests (is_livepatch_module()).
	marked bool
}

// RelaSection is one .klp.rela.<obj>.<sec> section.
type RelaSection struct {
	Index  int
	Name   string
	Object string // parsed like the kernel; "" when the name is malformed
	Target string // name of the section the relocations patch
	// Err is set when the kernel would refuse or never apply the section.
	Err    error
	Relocs []Relocation
}

// Relocation is one livepatch relocation and the symbol it references.
// The symbol's fields (Symbol, Sym) are its RelocSymbol's, which every
// relocation of that symbol shares: a module's relocations take 56 bytes
// each, whatever their symbols' names. A Module's relocations always have
// one; a Relocation made otherwise needs one for those fields.
type Relocation struct {
	Index    int // in its section
	Offset   uint64
	Addend   int64
	Type     uint32
	SymIndex uint32
	*RelocSymbol
	// Err is a static failure, known without any kernel: not a livepatch
	// symbol, a malformed name, or a vmlinux symbol from a module section.
	Err error
}

// RelocSymbol is the symbol a relocation references.
type RelocSymbol struct {
	Symbol  string      // the symbol's name as written
	Sym     SymbolName  // parsed (when the relocation's Err is nil)
	machine elf.Machine // the module's, for TypeName
}

// TypeName is the name of the relocation's type (R_X86_64_PC32), built
// when asked for (RelocTypeName).
func (r *Relocation) TypeName() string {
	var m elf.Machine // none known: R_EM_NONE_<number>
	if r.RelocSymbol != nil {
		m = r.machine
	}
	return RelocTypeName(m, r.Type)
}

// Open reads a module from path (plain, or gzip/zstd/xz compressed).
func Open(path string) (*Module, error) {
	// A pipe or a device is refused at its first bytes if they are not
	// a module's (elfobj.CheckHead), not read up to the limit.
	data, err := input.ReadFileChecked(path, maxModuleFileSize, elfobj.CheckHead)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// NewFile reads a module of size bytes from r. name is used in errors.
func NewFile(name string, r io.ReaderAt, size int64) (*Module, error) {
	data, err := input.ReadAt(name, r, size, maxModuleFileSize)
	if err != nil {
		return nil, err
	}
	return Parse(name, data)
}

// Parse describes the module in data (decompressing it if its magic says
// so). The module keeps data.
func Parse(name string, data []byte) (*Module, error) {
	data, comp, err := input.Decompress(name, data, maxModuleFileSize)
	if err != nil {
		return nil, err
	}
	f, err := elfobj.Parse(name, data)
	if err != nil {
		return nil, err
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("%s: %w (type %v)", name, ErrNotRelocatable, f.Type)
	}
	m := &Module{
		Path: name, Name: f.ModInfo("name"), Livepatch: f.ModInfo("livepatch") == "Y", marked: f.ModInfo("livepatch") != "",
		Machine: f.Machine, Arch: ArchName(f.Machine), Class: f.Class, ByteOrder: f.Order, Compression: string(comp), elf: f,
	}
	m.Signature = readSignature(f.Data)
	if w := m.Signature.warning(); w != "" {
		m.Warnings = append(m.Warnings, w)
	}
	if err := m.readKLP(); err != nil {
		return nil, err
	}
	d := m.newDataRelocs()
	if err := m.readKpatch(d); err != nil {
		return nil, err
	}
	if err := m.readFuncs(d); err != nil {
		return nil, err
	}
	switch {
	case len(m.Sections) > 0:
		m.Format = FormatKLP

	case m.Kpatch != nil && (len(m.Kpatch.Dynrelas) > 0 || !m.Livepatch):
		// A livepatch module that kpatch-build made carries
		// .kpatch.funcs too, and is no legacy one.
		m.Format = FormatKpatch
	default:
		m.Format = FormatNone
		// A livepatch module may need no livepatch relocations (it
		// calls only exported functions); anything else has nothing
		// for livepatch to resolve.
		if !m.Livepatch {
			m.Warnings = append(m.Warnings, "not a livepatch module: no livepatch relocations (.klp.rela sections or kpatch dynrelas) and no livepatch=Y; nothing here for livepatch to resolve (klpresolve convert makes a livepatch module of an object)")
		}
	}
	checkFuncs(m.Funcs, m.FuncSource == FuncsStatic)
	m.checkIntermediate()
	m.checkObjects(d)
	m.checkMarked()
	m.checkNotLivepatch()
	m.checkThisModule()
	m.checkSymtab()
	m.checkPLTSection()
	m.checkFtracePLT()
	m.findWriteExec()
	m.exports = f.Exports()
	return m, nil
}

// Refusals lists what the module loader or livepatch refuses in the
// module whatever the kernel, in the order load_module() meets them
// (setup_load_info(), layout_and_allocate(), post_relocation(), then
// klp_enable_patch() from the module's init). Each is a *RelocError whose
// Err says its kind (errors.Is):
//
//	kind                   what the file lacks or has
//	ErrKpatchIntermediate  kpatch-build's output.o: .kpatch.relocations, which no kernel reads
//	ErrNoSymbols           no symbol table (strip --strip-all)
//	ErrNoModuleStruct      no .gnu.linkonce.this_module
//	ErrNoPLTSection        powerpc's .stubs, arm's and arm64's .plt or .init.plt (on a
//	                       kernel with module PLTs); arm64's .text.ftrace_trampoline
//	                       (module_finalize(), with module PLTs and dynamic ftrace)
//	ErrWriteExec           a section writable and executable (CONFIG_STRICT_MODULE_RWX)
//	ErrNotMarked           no livepatch key in .modinfo
//	ErrNotLivepatch        nothing for livepatch to do (an object never converted)
//
// Resolution.LoadErr is the first that applies to a given kernel, with
// what depends on the kernel.
func (m *Module) Refusals() []*RelocError {
	var out []*RelocError
	for _, e := range m.refusalOrder() {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Refusal is the first of Refusals whose kind is kind (errors.Is), or nil.
func (m *Module) Refusal(kind error) *RelocError {
	for _, e := range m.Refusals() {
		if errors.Is(e, kind) {
			return e
		}
	}
	return nil
}

func (m *Module) refusalOrder() []*RelocError {
	return []*RelocError{m.intermediate, m.noSymbols, m.noModuleStruct, m.noPLTSection, m.writeExec, m.noFtracePLT, m.notMarked, m.notLivepatch}
}

// Refused is the first of Refusals, or nil.
func (m *Module) Refused() *RelocError {
	if r := m.Refusals(); len(r) > 0 {
		return r[0]
	}
	return nil
}

// loaderName is the name the loader gives the module in its first
// refusals: .modinfo's name, before it has read struct module
// (setup_load_info()).
func (m *Module) loaderName() string {
	return cmp.Or(m.Name, "(missing .modinfo section or name field)")
}

// checkIntermediate: kpatch-build's output.o is the input of its last
// steps, not a module: kbuild links it with the livepatch hook, and
// create-klp-module moves .kpatch.relocations into .klp.rela sections.
// Loaded as it is, setup_load_info() finds no struct module in it.
func (m *Module) checkIntermediate() {
	if m.Kpatch == nil || !m.Kpatch.Intermediate {
		return
	}
	what := "1 relocation is"
	if n := len(m.Kpatch.Relocations); n != 1 {
		what = fmt.Sprintf("%d relocations are", n)
	}
	m.intermediate = &RelocError{File: m.Path, Section: kpatchRelocations, Err: ErrKpatchIntermediate,
		Kernel: m.loaderName() + ": No module found in object",
		Hint: fmt.Sprintf("this is kpatch-build's intermediate object (output.o): its %s in %s, which no kernel reads; kpatch-build links it with its livepatch hook and create-klp-module moves them into .klp.rela sections: `klpresolve convert %s -o OUT.o` does that step, and OUT.o can be checked",
			what, kpatchRelocations, m.Path)}
}

// checkSymtab: setup_load_info() refuses a module without a SHT_SYMTAB
// section ("module has no symbols (stripped?)"), before it looks for
// struct module. strip --strip-all does it (strip --strip-debug, which
// kbuild's INSTALL_MOD_STRIP=1 runs, keeps the table).
func (m *Module) checkSymtab() {
	if m.elf.Symtab != 0 {
		return
	}
	m.noSymbols = &RelocError{File: m.Path, Section: ".symtab", Err: ErrNoSymbols,
		Kernel: m.loaderName() + ": module has no symbols (stripped?)",
		Hint:   "the file has no symbol table: the loader needs it to resolve and relocate anything; strip modules with --strip-debug (what INSTALL_MOD_STRIP=1 runs), never --strip-all"}
}

// checkPLTSection: module_frob_arch_sections(), from
// layout_and_allocate() before module_enforce_rwx_sections(), refuses a
// module without the sections it sizes for the calls out of it
// (modplt.MissingPLTSection; arm's and arm64's only where the kernel has
// module PLTs: refusesPLTSection).
func (m *Module) checkPLTSection() {
	missing, says := modplt.MissingPLTSection(m.elf.Machine, m.elf.HasSection)
	if missing == "" {
		return
	}
	m.noPLTSection = &RelocError{File: m.Path, Section: missing, Err: ErrNoPLTSection, Kernel: m.KernelName() + ": " + says,
		Hint: "the loader puts the entries for the calls out of the module in sections kbuild's module linker script (module.lds) makes; the file has no " + missing + ": link the module with kbuild (ld -r -T scripts/module.lds)"}
}

// checkFtracePLT: arm64's module_finalize(), from post_relocation() once
// the relocations are applied, fills the module's two ftrace PLT entries
// (module_init_ftrace_plt()) in .text.ftrace_trampoline, and refuses a
// module without that section with -ENOEXEC and no message, where the
// kernel has CONFIG_ARM64_MODULE_PLTS and CONFIG_DYNAMIC_FTRACE
// (modplt.MissingFtracePLT). A module without .plt is refused before
// (NoPLTSection).
func (m *Module) checkFtracePLT() {
	tramp := modplt.MissingFtracePLT(m.elf.Machine, m.elf.HasSection, kgen.Linux6_1) // every generation's
	if tramp == "" {
		return
	}
	m.noFtracePLT = m.ftracePLTError(tramp)
}

func (m *Module) ftracePLTError(tramp string) *RelocError {
	return &RelocError{File: m.Path, Section: tramp, Err: ErrNoPLTSection,
		Kernel: m.KernelName() + ": module_finalize(): no " + tramp + ": -ENOEXEC, with no message (insmod: Exec format error)",
		Hint:   "the loader writes the module's ftrace trampolines in " + tramp + ", which kbuild's module linker script (arch/arm64/include/asm/module.lds.h) of the kernel's own generation makes beside .plt and .init.plt; the file was linked with another script, or another kernel's: link it with this kernel's kbuild (ld -r -T scripts/module.lds)"}
}

// refusesFtracePLT is NoFtracePLT where the kernel refuses it: with
// module PLTs (always from 6.12: modulePLTs) and dynamic ftrace, assumed
// unless cfg says otherwise; and from 6.12, the init trampoline's
// section missing too (modplt.MissingFtracePLT).
func (m *Module) refusesFtracePLT(cfg *KernelConfig, g kgen.Generation) *RelocError {
	refused := m.noFtracePLT
	if refused == nil && g > kgen.Linux6_1 {
		if tramp := modplt.MissingFtracePLT(m.elf.Machine, m.elf.HasSection, g); tramp != "" {
			refused = m.ftracePLTError(tramp)
		}
	}
	if refused == nil || cfg == nil || modulePLTs(m, cfg, g) && cfg.DynamicFtrace {
		return refused
	}
	return nil
}

// modulePLTs: the kernel has module PLTs: arm64 always from 6.12 (6.5
// made them unconditional and removed CONFIG_ARM64_MODULE_PLTS), else
// where its configuration says so.
func modulePLTs(m *Module, cfg *KernelConfig, g kgen.Generation) bool {
	return cfg.ModulePLTs || m.Machine == elf.EM_AARCH64 && g > kgen.Linux6_1
}

// refusesPLTSection is NoPLTSection where the kernel refuses it: powerpc
// always; arm and arm64 with module PLTs, assumed unless cfg says
// otherwise (a kernel without them never looks for the sections).
func (m *Module) refusesPLTSection(cfg *KernelConfig, g kgen.Generation) *RelocError {
	if m.noPLTSection == nil || m.Machine == elf.EM_PPC64 || cfg == nil || modulePLTs(m, cfg, g) {
		return m.noPLTSection
	}
	return nil
}

// findWriteExec: module_enforce_rwx_sections() (kernel/module/
// strict_rwx.c), from layout_and_allocate(), refuses the first section
// with both SHF_WRITE and SHF_EXECINSTR, allocated or not, when the kernel
// has CONFIG_STRICT_MODULE_RWX: always on x86_64 and arm64, and on arm
// the default for ARMv7 (ARCH_OPTIONAL_KERNEL_RWX_DEFAULT). The section
// is found once, when the file is read; checkWriteExec asks the kernel.
func (m *Module) findWriteExec() {
	const wx = elf.SHF_WRITE | elf.SHF_EXECINSTR
	for i, s := range m.elf.Sections {
		if s.Flags&wx != wx {
			continue
		}
		m.writeExec = &RelocError{File: m.Path, Section: s.Name, Err: ErrWriteExec,
			Kernel: fmt.Sprintf("%s: section %s (index %d) has invalid WRITE|EXEC flags", m.KernelName(), s.Name, i),
			Hint:   "a section both writable and executable (an assembler .section with \"awx\" flags, or code and data given one section name) is refused by every kernel with CONFIG_STRICT_MODULE_RWX (x86_64, arm64, and ARMv7 by default): give code and data sections of their own"}
		return
	}
}

// checkWriteExec is WriteExec where the kernel refuses it: every kernel
// with CONFIG_STRICT_MODULE_RWX, assumed unless cfg says otherwise.
func (m *Module) checkWriteExec(cfg *KernelConfig) *RelocError {
	if m.writeExec == nil || cfg == nil {
		return m.writeExec
	}
	if !cfg.StrictModuleRWX {
		return nil
	}
	e := *m.writeExec
	e.Hint += " (its configuration " + cfg.File + " sets CONFIG_STRICT_MODULE_RWX)"
	return &e
}

// checkMarked: klp_enable_patch() refuses a module that the loader did
// not mark a livepatch module (is_livepatch_module(): a livepatch key in
// its .modinfo, whatever its value; MODULE_INFO(livepatch, "Y")), and
// load_module() keeps no copy of its ELF (copy_module_elf()) for the
// sections of modules that load later. Only for a built module that is a
// patch (livepatch sections, or a klp_patch found): an object without
// .modinfo gets one from kbuild.
func (m *Module) checkMarked() {
	if m.elf.SectionByName(".modinfo") == nil || m.marked ||
		(m.Format != FormatKLP && m.FuncSource != FuncsStatic && m.FuncSource != FuncsKlpBuild) {
		return
	}
	m.notMarked = &RelocError{File: m.Path, Section: ".modinfo", Symbol: "livepatch", Err: ErrNotMarked,
		Kernel: fmt.Sprintf("module %s is not marked as a livepatch module", m.KernelName()),
		Hint:   `its .modinfo has no livepatch=Y (MODULE_INFO(livepatch, "Y")), so klp_enable_patch() refuses it on every kernel`}
}

// checkNotLivepatch: a module marked livepatch (it means to be a patch)
// with nothing for livepatch in it. A patch enables itself with
// klp_enable_patch() (kpatch-build's hook included); a legacy kpatch
// module has dynrelas, and its patched functions are found. Without any
// of these the kernel loads the module and livepatch does nothing, which
// must not pass for a checked patch.
func (m *Module) checkNotLivepatch() {
	if !m.marked || m.Format != FormatNone || m.Kpatch != nil || len(m.Funcs) > 0 || m.callsEnablePatch() {
		return
	}
	m.notLivepatch = &RelocError{File: m.Path, Err: ErrNotLivepatch,
		Kernel: "(no message: the kernel loads the module, and livepatch does nothing with it)",
		Hint:   fmt.Sprintf("the module is marked livepatch but has no livepatch relocations (.klp.rela sections), no patched functions (a static klp_patch, .init.klp_funcs, .kpatch.funcs) and no call to klp_enable_patch(): an object never converted, most often. `klpresolve convert %s -o OUT.ko --symbol NAME ...` makes livepatch relocations of the symbols it needs from the kernel (docs/commands.md)", m.Path)}
}

// callsEnablePatch reports whether the module calls klp_enable_patch(),
// which every livepatch module's init does.
func (m *Module) callsEnablePatch() bool {
	for i := range m.elf.Symbols {
		if s := &m.elf.Symbols[i]; s.Name == "klp_enable_patch" && s.Shndx == uint16(elf.SHN_UNDEF) {
			return true
		}
	}
	return false
}

// checkThisModule: setup_load_info() refuses a module without
// .gnu.linkonce.this_module, where modpost's NAME.mod.c puts its struct
// module ("No module found in object"). Kbuild links every module with
// its NAME.mod.o; an object compiled alone (and converted) lacks it. Only
// for a patch that is marked or has livepatch sections and a .modinfo:
// not for an object kbuild has still to link.
func (m *Module) checkThisModule() {
	if !m.builtModule() || m.elf.SectionByName(thisModuleSection) != nil {
		return
	}
	m.noModuleStruct = &RelocError{File: m.Path, Section: ".gnu.linkonce.this_module", Err: ErrNoModuleStruct,
		Kernel: m.loaderName() + ": No module found in object",
		Hint:   fmt.Sprintf("the file has no .gnu.linkonce.this_module section, where the loader finds the module's struct module; modpost writes it in %s.mod.c and kbuild links %s.mod.o into every module: build the patch as a kbuild module (an object converted alone lacks it)", m.KernelName(), m.KernelName())}
}

// KernelName is the module's name as the kernel gives it: .modinfo's
// name, else the one kbuild gives its file (ModuleNameFromFile), else the
// file's base name up to its first dot.
func (m *Module) KernelName() string {
	if m.Name != "" {
		return m.Name
	}
	if n := ModuleNameFromFile(m.Path); n != "" {
		return n
	}
	base := filepath.Base(m.Path)
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// readKLP finds and parses the livepatch relocation sections. Each
// symbol's name is checked once, however many relocations use it, and its
// record is shared by them.
func (m *Module) readKLP() error {
	f := m.elf
	// Each symbol is checked once, when a relocation first uses it
	// (checked: 0 not yet, 1 passed, 2 failed). The errors, which a built
	// module seldom has, are kept aside: checkSymbolName's, and
	// checkSymbolObject's for a vmlinux symbol in a module's section.
	var checked []uint8
	var syms []RelocSymbol // by symbol index, made at the first section
	nameErr, objectErr := map[uint32]error{}, map[uint32]error{}
	// The sections and their relocations in one allocation each.
	nsec, nrel := 0, 0
	for i := range f.Sections {
		if s := &f.Sections[i]; s.Flags&SHFRelaLivepatch != 0 {
			nsec++
			if s.Type == elf.SHT_RELA && s.Entsize > 0 {
				nrel += int(s.Size / s.Entsize)
			}
		}
	}
	secs := make([]RelaSection, 0, nsec)
	if nsec > 0 {
		m.Sections = make([]*RelaSection, 0, nsec)
	}
	rels := make([]Relocation, 0, nrel)
	for i := range f.Sections {
		s := &f.Sections[i]
		named := strings.HasPrefix(s.Name, RelaPrefix)
		flagged := s.Flags&SHFRelaLivepatch != 0
		if named && !flagged {
			m.Warnings = append(m.Warnings, fmt.Sprintf("section %s is named like a livepatch relocation section but lacks SHF_RELA_LIVEPATCH: the kernel applies it as an ordinary relocation section", s.Name))
			continue
		}
		if !flagged {
			continue
		}
		secs = append(secs, RelaSection{Index: i, Name: s.Name})
		rs := &secs[len(secs)-1]
		m.Sections = append(m.Sections, rs)
		// apply_relocations(): a target that is not SHF_ALLOC is skipped.
		if s.Info > 0 && int(s.Info) < len(f.Sections) {
			t := &f.Sections[s.Info]
			rs.Target = t.Name
			if t.Flags&elf.SHF_ALLOC == 0 {
				m.Warnings = append(m.Warnings, fmt.Sprintf("section %s patches %s, which is not SHF_ALLOC: the kernel skips it", s.Name, t.Name))
			}
		}
		obj, ok, truncated := ParseSectionName(s.Name)
		switch {
		case !ok:
			rs.Err = &CheckError{Kind: ErrBadSectionName,
				Kernel: fmt.Sprintf("section %s has an incorrectly formatted name", s.Name),
				Hint:   "the section must be named .klp.rela.<object>.<section>, the object without dots"}
		case truncated:
			rs.Err = &CheckError{Kind: ErrBadSectionName, // the kernel says nothing
				Hint: fmt.Sprintf("object name longer than %d bytes: the kernel reads only %q, which matches no object, and silently never applies the section", ModuleNameMax, obj)}
		case neverLoads(obj):
			rs.Err = neverLoadsError(obj)
		default:
			rs.Object = obj
			if obj != kallsyms.Vmlinux && readAtLoad(rs.Target) {
				rs.Err = &CheckError{Kind: ErrLoadTimeSection, // the kernel says nothing
					Hint: fmt.Sprintf("the module loader reads %s when the patch module loads (module_finalize(), jump labels, static calls), but livepatch applies this section only when %s loads (klp_module_coming()): the loader would use the unrelocated entries. vmlinux's such sections are applied first, at load; a module's symbol cannot be used there (kpatch-build and klp-build refuse it too): use static_key_enabled() instead of a static branch, a plain call instead of a static call", rs.Target, obj)}
			}
		}
		if s.Type != elf.SHT_RELA {
			if rs.Err == nil {
				rs.Err = &elfobj.FormatError{File: m.Path, Section: s.Name, Msg: fmt.Sprintf("livepatch relocation section of type %v, not SHT_RELA", s.Type)}
			}
			continue
		}
		t, err := f.RelocTable(s)
		if err != nil {
			return err
		}
		if syms == nil {
			syms = make([]RelocSymbol, len(f.Symbols))
			checked = make([]uint8, len(f.Symbols))
		}
		fromModule := rs.Object != "" && rs.Object != kallsyms.Vmlinux
		if n := t.Len(); len(rels)+n <= cap(rels) {
			rs.Relocs = rels[len(rels) : len(rels)+n : len(rels)+n]
			rels = rels[:len(rels)+n]
		} else { // (an entry size that is not the table's: RelocTable said so)
			rs.Relocs = make([]Relocation, n)
		}
		for j := range rs.Relocs {
			r, err := t.Reloc(j)
			if err != nil {
				return err
			}
			sym := &syms[r.Sym]
			rs.Relocs[j] = Relocation{Index: j, Offset: r.Offset, Addend: r.Addend, Type: r.Type, SymIndex: r.Sym, RelocSymbol: sym}
			if checked[r.Sym] == 0 {
				var err error
				sym.Symbol, sym.machine = f.Symbols[r.Sym].Name, f.Machine
				sym.Sym, err = m.checkSymbolName(&f.Symbols[r.Sym])
				checked[r.Sym] = 1
				if err != nil {
					checked[r.Sym], nameErr[r.Sym] = 2, err
				}
			}
			switch {
			case checked[r.Sym] == 2:
				rs.Relocs[j].Err = nameErr[r.Sym]
			case fromModule && sym.Sym.Object == kallsyms.Vmlinux:
				e, ok := objectErr[r.Sym]
				if !ok {
					e = checkSymbolObject(sym.Sym, rs.Object)
					objectErr[r.Sym] = e
				}
				rs.Relocs[j].Err = e
			}
		}
	}
	return nil
}

// loadTimeSections are the sections the module loader reads while it
// loads a module, after applying its relocations (module_finalize():
// alternatives, paravirt, SMP locks, retpoline, return and ENDBR sites,
// ORC, bug table; the jump label and static call notifiers at
// MODULE_STATE_COMING; the exception table and mcount locations). A
// patch module's .klp.rela sections for vmlinux are applied before that
// (apply_relocations()); one for a module later, when it loads.
var loadTimeSections = map[string]bool{
	"__jump_table": true, ".static_call_sites": true, ".altinstructions": true,
	".parainstructions": true, ".smp_locks": true, ".retpoline_sites": true,
	".return_sites": true, ".ibt_endbr_seal": true, ".orc_unwind_ip": true,
	"__bug_table": true, "__ex_table": true, "__mcount_loc": true,
	// powerpc's module_finalize(): the CPU, MMU and firmware feature
	// fixups, the nospec barriers and lwsync sites it patches.
	"__ftr_fixup": true, "__mmu_ftr_fixup": true, "__fw_ftr_fixup": true,
	"__spec_barrier_fixup": true, "__lwsync_fixup": true,
}

// readAtLoad reports whether the loader reads section name while it loads
// the module: loadTimeSections, and s390's expoline sites, which its
// module_finalize() rewrites (nospec_revert() on .s390_indirect* and
// .s390_return*).
func readAtLoad(name string) bool {
	return loadTimeSections[name] || strings.HasPrefix(name, ".s390_indirect") || strings.HasPrefix(name, ".s390_return")
}

// checkSymbolName: klp_resolve_symbols()'s checks of the symbol alone
// (SHN_LIVEPATCH, the name's format).
func (m *Module) checkSymbolName(sym *elfobj.Symbol) (SymbolName, error) {
	if sym.Shndx != SHNLivepatch {
		return SymbolName{}, &CheckError{Kind: ErrNotLivepatchSymbol,
			Kernel: fmt.Sprintf("symbol %s is not marked as a livepatch symbol", sym.Name),
			Hint:   "its st_shndx must be SHN_LIVEPATCH (0xff20); convert it with 'klpresolve convert' or fix the build tool"}
	}
	sn, n := ParseSymbolName(sym.Name)
	if n != 3 {
		return sn, &CheckError{Kind: ErrBadSymbolName,
			Kernel: fmt.Sprintf("symbol %s has an incorrectly formatted name", sym.Name),
			Hint:   "the name must be .klp.sym.<object>.<symbol>,<sympos>: object without dots (at most 55 bytes, e.g. 'zfs', not 'zfs.ko'), symbol without commas (at most 511 bytes), a decimal sympos"}
	}
	if m.Class == elf.ELFCLASS32 {
		sn.Pos = uint64(uint32(sn.Pos)) // unsigned long is 32 bits there
	}
	return sn, nil
}

// checkSymbolObject: klp_resolve_symbols() refuses a vmlinux symbol in a
// module's livepatch relocation section (secObj: the section's object).
func checkSymbolObject(sn SymbolName, secObj string) error {
	if secObj != "" && secObj != "vmlinux" && sn.Object == "vmlinux" {
		return &CheckError{Kind: ErrVmlinuxFromModule,
			Kernel: fmt.Sprintf("invalid access to vmlinux symbol '%s' from module-specific livepatch relocation section", sn.Name),
			Hint:   "move the relocation to a .klp.rela.vmlinux.* section, or use an ordinary relocation if the symbol is exported"}
	}
	return nil
}

// NumRelocs counts the livepatch relocations (klp sections and dynrelas).
func (m *Module) NumRelocs() int {
	n := 0
	for _, s := range m.Sections {
		n += len(s.Relocs)
	}
	if m.Kpatch != nil {
		n += len(m.Kpatch.Dynrelas)
	}
	return n
}
