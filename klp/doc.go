// SPDX-License-Identifier: GPL-2.0-only

// Package klp reads livepatch modules and resolves their livepatch
// relocations against a kernel's symbols exactly as the kernel does when it
// loads them; it also writes livepatch modules (Convert), the job of
// klp-convert / kpatch's create-klp-module.
//
// Parse first, resolve second: Open (or Parse/NewFile) describes a module —
// its .klp.rela.<obj>.<sec> sections, the .klp.sym.<obj>.<name>,<pos>
// symbols their relocations use, or a legacy kpatch module's dynrelas, and
// the functions it patches — independently of any kernel. Module.Resolve
// then answers each relocation and each patched function against a
// kallsyms.Index.
//
// # Kernel code mirrored
//
//   - kernel/livepatch/core.c: klp_apply_section_relocs() parses a section
//     name with sscanf(".klp.rela.%55[^.]"); klp_resolve_symbols() checks,
//     in order, that each symbol is SHN_LIVEPATCH, that its name parses
//     with sscanf(".klp.sym.%55[^.].%511[^,],%lu"), that a module-specific
//     section does not reference a vmlinux symbol, and then calls
//     klp_find_object_symbol() (see package kallsyms).
//   - lib/vsprintf.c: vsscanf(), whose %[ and %lu edge cases ParseSymbolName
//     reproduces.
//   - kernel/module/main.c: apply_relocations() skips relocation sections
//     whose target is not SHF_ALLOC and hands SHF_RELA_LIVEPATCH sections
//     to livepatch; module-specific sections are applied when their module
//     loads (klp_module_coming()), so they are "deferred" here when the
//     module is not in the kallsyms input. klp_module_coming() compares
//     module names exactly, and kbuild's names (KBUILD_MODNAME) have no
//     dashes: a section for a dashed object never applies (ErrNeverLoads).
//     Nor does one for a module built into the kernel: find_module() and
//     klp_module_coming() only know loaded modules (Resolution.BuiltIn).
//   - klp_init_object_loaded() looks each klp_func's old_name and
//     old_sympos up with klp_find_object_symbol() too (Module.Funcs), and
//     klp_init_func()/klp_init_object() refuse a name too long or two
//     sysfs entries of one name (checkFuncs).
//   - kernel/livepatch/patch.c: klp_patch_func() fails a function in which
//     ftrace_location() finds no call site: vmlinux's init, noinstr and
//     entry code, which its symbols bound; any function, with the kernel's
//     call-site table (ResolveOptions.Ftrace: package ftrace); a loaded or
//     deferred module's, from its file's __mcount_loc (Target).
//   - kernel/module/kallsyms.c: what a deferred relocation or patched
//     function will be resolved against when its module loads, read from
//     the module's file (Target, Module.Resolve): while the module is
//     COMING, klp_module_coming() counts in its whole symbol table
//     (add_kallsyms() points mod->kallsyms at it); once its init is done,
//     do_init_module() switches to the core symbols add_kallsyms() kept
//     (is_core_symbol(); every symbol for a livepatch module), which a
//     patch loaded later counts in and /proc/kallsyms lists, with
//     elf_type()'s letters. A sympos can mean different symbols in the two
//     (ErrLoadOrder).
//   - klp_enable_patch() refuses a module without livepatch=Y in its
//     .modinfo (ErrNotMarked), setup_load_info() one without
//     .gnu.linkonce.this_module, its struct module (ErrNoModuleStruct:
//     "No module found in object") or a symbol table (ErrNoSymbols:
//     "module has no symbols (stripped?)"), module_frob_arch_sections()
//     one without the sections kbuild's module.lds adds for its calls out
//     (ErrNoPLTSection: powerpc's .stubs; arm's and arm64's .plt and
//     .init.plt on a kernel with module PLTs), module_enforce_rwx_sections()
//     a section both writable and executable (ErrWriteExec; a kernel with
//     CONFIG_STRICT_MODULE_RWX), arm64's module_finalize() one without
//     .text.ftrace_trampoline (ErrNoPLTSection, silently, with module
//     PLTs and CONFIG_DYNAMIC_FTRACE), check_modinfo_livepatch() every
//     livepatch module on a kernel without CONFIG_LIVEPATCH
//     (ErrNoLivepatch; ResolveOptions.Config tells both, else the
//     symbols and the default), verify_exported_symbols() an export the
//     kernel has already (ErrDuplicateExport), and apply_relocate_add(), which
//     applies every livepatch section, reads RELA only (Convert refuses
//     REL).
//
// # Input
//
// A module is untrusted input: klpresolve's ELF reader checks
// every offset, size, count and index against the file, gzip/zstd/xz(/bzip2)
// compressed modules are detected by magic bytes, and errors name the
// file, the section and what is wrong.
package klp
