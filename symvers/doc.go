// SPDX-License-Identifier: GPL-2.0-only

// Package symvers checks a module's symbol versions as a kernel built
// with CONFIG_MODVERSIONS checks them when it loads the module.
//
// A kernel build's Module.symvers is modpost's dump of every symbol the
// kernel and its in-tree modules export: one line each, "CRC<TAB>name
// <TAB>module<TAB>EXPORT_SYMBOL[_GPL]<TAB>namespace", which
// scripts/mod/modpost.c's write_dump() writes and read_dump() reads
// (Debian ships it in linux-headers-VERSION). A module built against a
// kernel's headers records, in its __versions section, the CRC of each
// symbol it imports (struct modversion_info: an unsigned long CRC, then
// the name in the rest of 64 bytes), module_layout's first.
//
// Check applies the module loader's rules of the kernel's generation
// (kernel/module/version.c and main.c; the same from 6.1 to 6.12, and 7.2
// reads a module's extended versions instead of __versions where it has
// them):
//   - check_modstruct_version(): module_layout's CRC must be the kernel's,
//     before anything else, or the load fails with -ENOEXEC;
//   - check_version(), for every undefined symbol the loader resolves
//     (resolve_symbol()): the module's __versions must list it ("no
//     symbol version for %s") with the kernel's CRC ("disagrees about
//     version of symbol %s"), or the symbol, and so the load, fails;
//     a module without __versions loads only by try_to_force_load()
//     (CONFIG_MODULE_FORCE_LOAD, which taints the kernel), and a kernel
//     whose exports carry no CRC (no CONFIG_MODVERSIONS) checks nothing;
//   - verify_namespace_is_imported(): a symbol exported into a namespace
//     needs the module's .modinfo import_ns=<namespace>, or the symbol
//     fails (unless CONFIG_MODULE_ALLOW_MISSING_NAMESPACE_IMPORTS).
//
// CheckVermagic applies check_modinfo()'s comparison of the module's
// .modinfo vermagic with the kernel's VERMAGIC_STRING (same_magic(): from
// the first space on when the kernel has CONFIG_MODVERSIONS and the
// module __versions, else whole), which the loader makes after
// module_layout's version and before any other symbol's. Module.symvers
// does not hold the kernel's vermagic: every module of the kernel's build
// does (`modinfo -F vermagic`).
package symvers
