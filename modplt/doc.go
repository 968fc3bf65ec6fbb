// SPDX-License-Identifier: GPL-2.0-only

// Package modplt is klpresolve's module linker. It counts the PLT
// and GOT entries a relocatable kernel module needs, before anything is
// placed, the way the kernel sizes its module PLT sections.
//
// It mirrors Linux 6.1, and follows a later kernel generation
// (Options.Generation, LinkOptions.Generation) where its rules are known
// to differ: arm64 counts every branch from 6.12, KASLR or not, and fills
// one ftrace trampoline entry in each of two sections
// (docs/kernel-rules.md). The layout is 6.1's for every generation.
//
//   - arch/arm64/kernel/module-plts.c: module_frob_arch_sections(),
//     partition_branch_plt_relas(), cmp_rela(), duplicate_rel(),
//     count_plts() (with the Cortex-A53 erratum 843419 veneers and slack);
//   - arch/arm/kernel/module-plts.c: the same functions for REL sections,
//     with is_zero_addend_relocation() reading the addend out of the
//     instruction, and the two fixed ftrace slots;
//   - kernel/module/main.c: module_init_layout_section(), which decides
//     whether a section's PLT entries go to the core or the init PLT
//     (arch/arm/kernel/module.c adds the .ARM.extab/.ARM.exidx names);
//   - lib/sort.c: the heapsort those loaders sort with (mirrored in klpresolve).
//
// Two modes:
//
//   - ModeKernel gives exactly the figures module_frob_arch_sections()
//     gives, quirks included: on arm64 a section made only of branches
//     that need a PLT leaves its last one out of the sorted prefix, so a
//     duplicate of it is counted twice; on arm the order of equal
//     relocations after the kernel's heapsort decides what is a duplicate.
//   - ModeOptimal gives the smallest count that would still be safe for
//     an emitter that shared one entry per target across a whole region
//     (core or init): one entry per distinct (entry kind, symbol, addend).
//     It runs on all cores; the per-section figures are those of the
//     sequential count.
//
// x86_64 modules use no PLT; for PIE-built ones the package counts the
// GOT entries their GOTPCREL relocations need.
//
// s390x modules get one GOT and one PLT for the whole module, at the start
// of core (arch/s390/kernel/module.c: module_frob_arch_sections() and
// check_rela() give each symbol a GOT slot and a PLT entry the first time
// a relocation of that kind names it, over every RELA section; the
// expoline thunk is the PLT's last entry): both modes give that count,
// already one entry per target.
//
// ppc64le (ELFv2) modules call everything outside them through stubs in
// their .stubs section (arch/powerpc/kernel/module_64.c:
// get_stubs_size() sorts each RELA section in place and counts one stub
// per distinct symbol and addend of its REL24 relocations, plus the
// search's terminator and the two ftrace stubs). ModeOptimal counts one
// per distinct external target in the whole module, which is all
// stub_for_addr() can use.
//
// Counting is O(n) in both modes: the kernel's sort is needed only to
// decide between equal arm relocations, and is run (by the ported
// heapsort) only for a section where the order can change the count.
//
// # Linking
//
// Module.Link then does what load_module() does with the module's bytes:
//
//   - kernel/module/main.c: layout_and_allocate() (.modinfo, __versions
//     and the per-cpu section not loaded; .data..ro_after_init and
//     __jump_table made ro-after-init), layout_sections() (core then init;
//     text, read-only, ro-after-init, data, each group page aligned),
//     kernel/module/kallsyms.c: layout_symtab() (the symbols kallsyms
//     keeps end core, code only without CONFIG_KALLSYMS_ALL,
//     LinkOptions.NoKallsymsAll: Image.CoreSize, where init follows) and
//     simplify_symbols() (every undefined symbol resolved first, through
//     LinkOptions.Resolve; per-cpu symbols in the module's per-cpu area,
//     LinkOptions.PercpuBase);
//   - apply_relocate_add() of arch/arm64/kernel/module.c,
//     arch/x86/kernel/module.c, arch/s390/kernel/module.c (apply_rela(),
//     apply_rela_bits()) and arch/powerpc/kernel/module_64.c,
//     apply_relocate() of arch/arm/kernel/module.c: one file per
//     architecture (arm64.go, amd64.go, arm.go, s390.go, ppc64.go), each case
//     computing, range-checking against a named limit and encoding, with
//     PLT entries emitted only for branches out of range, as the kernel
//     hands them out (get_module_plt(), module_emit_plt_entry()): in the
//     order it applies the relocations in, reusing only the entry made
//     last, arm's two fixed ftrace slots first; a section whose branches
//     need none is applied in the file's order, at no cost;
//   - the load address, when none is given: where the architecture's
//     module_alloc() starts (MODULES_VADDR on x86_64 and arm, _etext - 128
//     MiB on arm64 as kaslr_init() sets module_alloc_base; on s390, whose
//     boot code computes MODULES_VADDR from the machine, a typical one).
//     s390's GOT and PLT are laid out first, as the pseudo-sections
//     ".got" and ".plt", and its module_finalize() writes the thunk;
//     powerpc's modules go at VMALLOC_START, and every call out of them
//     through a stub (stub_for_addr(), create_stub(); _mcount's relative
//     to the kernel's TOC, LinkOptions.Kernel), the nop after it made
//     ld r2,24(r1) (restore_r2());
//   - the kernel's order: relocation sections by index, livepatch's
//     (SHF_RELA_LIVEPATCH) after module_finalize(), each section sorted
//     as module_frob_arch_sections() leaves it (powerpc's by
//     get_stubs_size(); an executable section's on arm by type and
//     symbol, on arm64 its branches that need a PLT moved to the front by
//     partition_branch_plt_relas() and sorted by type, symbol and addend,
//     both with lib/sort.c's heapsort); PLT entries and stubs are handed
//     out in that order, and arm64's module_finalize() fills the two
//     ftrace trampolines (module_init_ftrace_plt()).
//
// LinkOptions.PageSize lays a module out for a kernel whose pages are not
// 4 KiB (arm64's 16 and 64 KiB: CONFIG_ARM64_64K_PAGES; ppc64's 64 KiB,
// its default here, as Debian and RHEL build ppc64le): strict_align()'s
// groups, module_alloc()'s guard page and the page vmalloc starts on
// follow PAGE_SIZE.
//
// Big-endian modules link too: on arm64 (CONFIG_CPU_BIG_ENDIAN)
// instructions stay little-endian (the kernel reads them through
// le32_to_cpu()) and data is written big-endian; on arm, a BE8 module
// (EF_ARM_BE8, linked by Kbuild with --be8) has little-endian
// instructions and big-endian data, a BE32 one big-endian both. Each is
// checked against GNU ld (testdata/modplt/link).
package modplt
