// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/klpresolve/klpresolve/diag"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/modname"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Errors of the kernel's checks, in the order klp_resolve_symbols() makes
// them. A failed lookup wraps the kallsyms sentinels instead
// (kallsyms.ErrNotFound, ErrAmbiguous, ErrNoSuchPosition, ErrObjectNotInPatch).
var (
	// ErrNotLivepatchSymbol: the symbol's st_shndx is not SHN_LIVEPATCH.
	ErrNotLivepatchSymbol = errors.New("not a livepatch symbol")
	// ErrDynrelaType: a legacy kpatch dynrela of a relocation type the
	// kpatch core module does not apply (kpatch_write_relocations():
	// x86_64's NONE, PC32, PLT32, 32S and 64 only).
	ErrDynrelaType = errors.New("relocation type the kpatch core does not apply")
	// ErrBadSymbolName: the name does not parse as .klp.sym.<obj>.<name>,<pos>.
	ErrBadSymbolName = errors.New("incorrectly formatted livepatch symbol name")
	// ErrBadSectionName: the section does not parse as .klp.rela.<obj>.<sec>,
	// or its object name is longer than the kernel reads.
	ErrBadSectionName = errors.New("incorrectly formatted livepatch section name")
	// ErrVmlinuxFromModule: a module-specific section references vmlinux.
	ErrVmlinuxFromModule = errors.New("vmlinux symbol from module-specific section")
	// ErrNeverLoads: a section's object is a name no module has: module
	// names are KBUILD_MODNAME, in which kbuild turns dashes into
	// underscores. The kernel defers the section until a module of that
	// name loads (klp_module_coming() compares names exactly), which never
	// happens, and says nothing.
	ErrNeverLoads = errors.New("no module can have the section's object name")
	// ErrNoLivepatch: the kernel was built without CONFIG_LIVEPATCH, and
	// its module loader refuses every module marked livepatch
	// (check_modinfo_livepatch(): -ENOEXEC).
	ErrNoLivepatch = errors.New("the kernel has no livepatch support")
	// ErrLoadTimeSection: a module's .klp.rela section patches a section
	// the module loader reads while it loads the patch module (a jump
	// table, static call sites, alternatives...), long before livepatch
	// applies the section, when that module loads.
	ErrLoadTimeSection = errors.New("module-specific relocations of a section read at load")
	// ErrObjectNotInPatch: a .klp.rela section for a module the patch declares no
	// klp_object for: livepatch never applies it, and says nothing.
	ErrObjectNotInPatch = errors.New("no klp_object for the section's module")
	// ErrInitFunction: a patched function is vmlinux init code, freed
	// after boot along with its ftrace record: klp_patch_func() finds no
	// ftrace location for it and fails the patch.
	ErrInitFunction = errors.New("patched function is init code")
	// ErrNotTraceable: a patched function is code built without an
	// ftrace call site (vmlinux's noinstr, cpuidle or entry code; notrace
	// code, which the kernel's call-site table or a module's file shows):
	// klp_patch_func() finds no ftrace location for it and fails the
	// patch.
	ErrNotTraceable = errors.New("patched function cannot be traced")
	// ErrNotMarked: a built livepatch module without a livepatch key in
	// its .modinfo: klp_enable_patch() refuses it ("module %s is not
	// marked as a livepatch module").
	ErrNotMarked = errors.New("the module is not marked as a livepatch module")
	// ErrNoModuleStruct: a module file without .gnu.linkonce.this_module,
	// the struct module that modpost's NAME.mod.c defines and kbuild links
	// in: setup_load_info() refuses it ("No module found in object").
	ErrNoModuleStruct = errors.New("no struct module in the file (.gnu.linkonce.this_module)")
	// ErrBadModuleStruct: a module whose .gnu.linkonce.this_module a
	// 6.12 or later loader refuses (elf_validity_cache_index_mod()): more
	// than one, one without contents (SHT_NOBITS), or one not allocated.
	ErrBadModuleStruct = errors.New("struct module section (.gnu.linkonce.this_module) the loader refuses")
	// ErrBadModinfo: a module with more than one .modinfo section, which
	// a 6.12 or later loader refuses ("Only one .modinfo section must
	// exist.", elf_validity_cache_index_info()).
	ErrBadModinfo = errors.New("more than one .modinfo section")
	// ErrNoExportFlags: a module that exports symbols (__ksymtab) without
	// the flags a 7.2 kernel reads beside them (__kflagstab): built for an
	// older kernel, it is refused ("no flags for exported symbols",
	// check_export_symbol_sections()).
	ErrNoExportFlags = errors.New("exported symbols without __kflagstab")
	// ErrNotLivepatch: a module marked livepatch with nothing for
	// livepatch in it: no livepatch relocations, no patched functions, no
	// call to klp_enable_patch() (an object never converted, most often).
	// The kernel loads it and says nothing; klpresolve fails it.
	ErrNotLivepatch = errors.New("nothing for livepatch in the module")
	// ErrNoPLTSection: a module without the sections its architecture's
	// module_frob_arch_sections() sizes for the calls out of it, which
	// kbuild's module linker script makes (powerpc's .stubs; arm's and
	// arm64's .plt and .init.plt, with CONFIG_ARM_MODULE_PLTS or
	// CONFIG_ARM64_MODULE_PLTS): the loader refuses it ("doesn't contain
	// .stubs.", "module PLT section(s) missing").
	ErrNoPLTSection = errors.New("no PLT section the loader needs")
	// ErrNoSymbols: a module file without a symbol table (strip
	// --strip-all): setup_load_info() refuses it ("module has no symbols
	// (stripped?)").
	ErrNoSymbols = errors.New("no symbol table in the file")
	// ErrKpatchIntermediate: kpatch-build's intermediate object
	// (output.o), whose relocations to resolve are in .kpatch.relocations,
	// which no kernel reads: create-klp-module (or klpresolve's
	// ConvertKpatch) turns them into .klp.rela sections.
	ErrKpatchIntermediate = errors.New("kpatch-build's intermediate object, not a livepatch module")
	// ErrWriteExec: a module with a section both writable and executable:
	// module_enforce_rwx_sections() refuses it on a CONFIG_STRICT_MODULE_RWX
	// kernel ("has invalid WRITE|EXEC flags").
	ErrWriteExec = errors.New("a section both writable and executable")
	// ErrDuplicateExport: the module exports a symbol that vmlinux or a
	// loaded module exports already: verify_exported_symbols() refuses it
	// ("exports duplicate symbol").
	ErrDuplicateExport = errors.New("exports a symbol the kernel exports already")
	// ErrNameTooLong: a patched function's name is KSYM_NAME_LEN bytes or
	// longer, or its object's MODULE_NAME_LEN or longer: klp_init_func()
	// or klp_init_object() fails with -EINVAL, and says nothing.
	ErrNameTooLong = errors.New("name longer than the kernel takes")
	// ErrDuplicate: a patch declares a function twice in one object, or
	// two objects of one name: their sysfs directories collide and
	// kobject_add() fails with -EEXIST.
	ErrDuplicate = errors.New("declared twice in one patch")
	// ErrLoadOrder: a deferred relocation or patched function resolves
	// when its module loads after the patch and not when the patch loads
	// after the module, or the other way round, or resolves to another
	// symbol: the kernel counts a module's whole symbol table while it
	// loads and only its core symbols after (see Target).
	ErrLoadOrder = errors.New("resolves differently with the module loaded before or after the patch")
	// ErrMalformed is wrapped by every error about a malformed module file:
	// an offset, size, count or index that the file does not hold, naming
	// the file and, where there is one, the section.
	// errors.As finds a *diag.FormatError with the file and section.
	ErrMalformed = diag.ErrMalformed
	// ErrTooLarge: the module, decompressed, is larger than 1 GiB.
	ErrTooLarge = diag.ErrTooLarge
	// ErrCorrupt: a compressed module whose data does not decode: cut short
	// (the decoder's io.ErrUnexpectedEOF is wrapped too) or damaged.
	ErrCorrupt = diag.ErrCorrupt
	// ErrNotRelocatable: the file is not an ELF relocatable object.
	ErrNotRelocatable = errors.New("not a relocatable ELF object")
	// ErrRELRelocations: Convert was asked to move SHT_REL relocations
	// (32-bit arm's). Livepatch sections are applied by
	// apply_relocate_add(), which reads SHT_RELA entries only; on an
	// architecture without CONFIG_MODULES_USE_ELF_RELA it is the stub
	// that says "REL relocation unsupported", and Linux 6.1 has no
	// livepatch for one (HAVE_LIVEPATCH: x86, powerpc, s390).
	ErrRELRelocations = errors.New("livepatch relocations must be RELA; this object's are REL")
	// ErrNothingToConvert: Convert was given a symbol that no relocation
	// of the object refers to, so it would not become a livepatch symbol.
	ErrNothingToConvert = errors.New("no relocation refers to the symbol")
	// ErrBadConvertSymbol: a ConvertSymbol given to Convert is not one it
	// can make: a name given twice with different objects or positions,
	// an object or symbol name the kernel's sscanf would not read back, or
	// a name that is not an undefined symbol of the object.
	ErrBadConvertSymbol = errors.New("bad symbol to convert")
)

// convertSymbolError is a ConvertSymbol that Convert refuses: it matches
// ErrBadConvertSymbol, and err (when set) as well.
type convertSymbolError struct {
	msg string
	err error
}

func badConvertSymbol(err error, format string, args ...any) error {
	return &convertSymbolError{fmt.Sprintf(format, args...), err}
}

func (e *convertSymbolError) Error() string { return e.msg }
func (e *convertSymbolError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrBadConvertSymbol}
	}
	return []error{ErrBadConvertSymbol, e.err}
}

// CheckError is a failure found from the module alone, before any lookup:
// Kind is one of the sentinels above, Kernel the line the kernel prints for
// it (empty where the kernel fails silently), Hint what would fix it.
type CheckError struct {
	Kind   error
	Kernel string
	Hint   string
}

func (e *CheckError) Error() string {
	if e.Kernel == "" {
		return e.Hint
	}
	return e.Kernel
}

// Unwrap returns the sentinel kind.
func (e *CheckError) Unwrap() error { return e.Kind }

// RelocError locates a relocation that does not resolve. KernelMessage is
// what the kernel prints (after "livepatch: "); Help adds what it does not
// say.
type RelocError struct {
	File    string
	Section string
	Index   int    // relocation index in its section
	Offset  uint64 // r_offset
	Symbol  string // the symbol's name as written in the module
	Err     error
	Kernel  string // the kernel's message
	Hint    string // the explanation or fix
}

func (e *RelocError) Error() string {
	s := fmt.Sprintf("%s: %s+%#x: %s", e.File, e.Section, e.Offset, e.Kernel)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *RelocError) Unwrap() error { return e.Err }

// neverLoads reports whether no module can be named object: kbuild's
// module names (KBUILD_MODNAME) have underscores where files have dashes.
func neverLoads(object string) bool { return strings.Contains(object, "-") }

// neverLoadsError is ErrNeverLoads for object, with the name it means.
func neverLoadsError(object string) *CheckError {
	return &CheckError{Kind: ErrNeverLoads, // the kernel says nothing
		Hint: fmt.Sprintf("no module is named %q: module names have underscores where their files have dashes (KBUILD_MODNAME), so the object is %q; the kernel would wait for %q to load, which never happens, and silently never apply the section", object, modname.Of(object), object)}
}

// relocKinds name klp's own causes for Kind (a lookup's are named by
// kallsyms.LookupError.KindName).
var relocKinds = []struct {
	err  error
	name string
}{
	{ErrNotLivepatchSymbol, "not_livepatch_symbol"},
	{ErrDynrelaType, "unsupported_dynrela_type"},
	{ErrBadSymbolName, "bad_symbol_name"},
	{ErrBadSectionName, "bad_section_name"},
	{ErrVmlinuxFromModule, "vmlinux_from_module"},
	{ErrNeverLoads, "never_loads"},
	{ErrNoLivepatch, "no_livepatch"},
	{ErrNotMarked, "not_marked_livepatch"},
	{ErrNotLivepatch, "not_livepatch"},
	{ErrNoModuleStruct, "no_module_struct"},
	{ErrNoSymbols, "no_symbols"},
	{ErrBadModuleStruct, "bad_module_struct"},
	{ErrBadModinfo, "bad_modinfo"},
	{ErrNoExportFlags, "no_export_flags"},
	{ErrKpatchIntermediate, "kpatch_intermediate"},
	{ErrNoPLTSection, "no_plt_section"},
	{ErrWriteExec, "write_exec"},
	{ErrDuplicateExport, "duplicate_export"},
	{ErrObjectNotInPatch, "no_klp_object"},
	{ErrLoadTimeSection, "load_time_section"},
	{ErrInitFunction, "init_function"},
	{ErrNotTraceable, "not_traceable"},
	{ErrNameTooLong, "name_too_long"},
	{ErrDuplicate, "duplicate"},
	{ErrLoadOrder, "load_order"},
}

// Kind names the failure for programs (the CLI's JSON "kind"): a
// lookup's "not_found", "ambiguous", "no_such_position",
// "object_not_loaded" or "index_closed"; a section's or symbol's
// "not_livepatch_symbol", "bad_symbol_name", "bad_section_name",
// "vmlinux_from_module", "never_loads", "no_klp_object" or
// "load_time_section"; a patched function's "name_too_long",
// "duplicate", "init_function" or "not_traceable"; a deferred one checked
// against its module's file, "load_order" (or a lookup's); the module's as a
// whole, "no_module_struct", "bad_module_struct", "bad_modinfo",
// "no_export_flags", "no_symbols", "no_plt_section", "write_exec",
// "duplicate_export", "no_livepatch", "not_marked_livepatch" or
// "not_livepatch";
// "malformed" (the module's bytes), or "other". The names do not change
// between releases; errors.Is on the sentinels is the library's way.
func (e *RelocError) Kind() string {
	var le *kallsyms.LookupError
	if errors.As(e.Err, &le) {
		return le.KindName()
	}
	for _, k := range relocKinds {
		if errors.Is(e.Err, k.err) {
			return k.name
		}
	}
	var fe *elfobj.FormatError
	if errors.As(e.Err, &fe) {
		return "malformed"
	}
	return "other"
}

// Diagnostic is the failure as a diag.Diagnostic: an error of its Kind,
// at its section and offset, in the kernel's words.
func (e *RelocError) Diagnostic() diag.Diagnostic {
	return diag.Diagnostic{Kind: diag.Kind(e.Kind()), Severity: diag.Error, Message: e.Kernel, Kernel: e.Kernel, Help: e.Hint, Err: e,
		Location: diag.Location{File: e.File, Section: e.Section, Offset: e.Offset, Symbol: e.Symbol}}
}

// Diagnostic is the patched function's failure (nil Err: none) as a
// diag.Diagnostic, naming the function.
func (f *FuncResult) Diagnostic() (diag.Diagnostic, bool) {
	if f.Err == nil {
		return diag.Diagnostic{}, false
	}
	d := f.Err.Diagnostic()
	d.Message = "patched function " + f.Object + ":" + f.Name + ": " + f.Err.Kernel
	d.Location.Object, d.Location.Function = f.Object, f.Name
	return d, true
}
