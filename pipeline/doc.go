// SPDX-License-Identifier: GPL-2.0-only

// Package pipeline joins klpresolve's parts into the flow a livepatch
// team runs before shipping a patch: resolve the livepatch relocations
// (klp), link the whole module (modplt), record it in a CFI shadow (cfi),
// for one kernel, or for every kernel build the patch targets, in
// parallel.
//
// It mirrors what the kernel does from load_module() to klp_enable_patch():
// simplify_symbols() and apply_relocations() for the module's ordinary
// relocations, klp_apply_section_relocs() for its .klp.rela sections
// (those of modules that are not loaded wait for klp_module_coming()),
// and cfi_module_add().
//
// A module the kernel's symbols lack (not loaded, or a System.map, which
// lists none) can be given as its file (FindModules, Options.Modules):
// what the patch defers to it is then checked against the file as
// klp_module_coming() will resolve it (klp.Target), rather than left
// unchecked. The kernel build's Module.symvers (Options.Symvers) adds
// what load_module() checks as well: check_modstruct_version() and
// check_version() of the module's symbol versions, and its namespace
// imports (package symvers; klp.Module.Versions reads a module for it), and the
// kernel's vermagic (Options.Vermagic) check_modinfo()'s comparison.
// Link, given module files, first lays out the modules a module depends
// on that the kernel's symbols lack, as modprobe loads them (Run does
// with Options.Modules, linked or not). Fleet gives each kernel of
// a fleet its own such files, KernelsUnder finds them where distributions
// install them, and KernelUnder picks one kernel there. A kernel's
// configuration (Kernel.Config, its .config; OpenConfig) decides what its
// loader's layout depends on (Config.LinkOptions: CONFIG_MODULE_UNLOAD,
// arm64's CONFIG_RANDOMIZE_BASE and page size, ppc64's page size, s390's
// CONFIG_EXPOLINE) where the options leave the default, and its checks of
// a whole module (Config.Loader: CONFIG_LIVEPATCH,
// CONFIG_STRICT_MODULE_RWX).
package pipeline
