// SPDX-License-Identifier: GPL-2.0
/*
 * percpu_demo: a module with per-cpu variables, for klpresolve's kernel
 * oracle (see Makefile). The loader does not load its .data..percpu
 * section with the module: percpu_modalloc() gives it an area in the
 * kernel's reserved per-cpu chunk, and its symbols are addressed there,
 * by this_cpu operations (%gs-relative on x86_64), by a pointer in .data,
 * and by the modules that use the one it exports.
 */
#include <linux/module.h>
#include <linux/percpu.h>

static DEFINE_PER_CPU(unsigned long, percpu_demo_hits);
DEFINE_PER_CPU(int, percpu_demo_shared) = 7;
EXPORT_PER_CPU_SYMBOL(percpu_demo_shared);

/* The area's address as data: an R_X86_64_64 against the per-cpu section. */
unsigned long __percpu *percpu_demo_ptr = &percpu_demo_hits;
EXPORT_SYMBOL(percpu_demo_ptr);

int percpu_demo_hit(void)
{
	this_cpu_inc(percpu_demo_hits);
	return this_cpu_read(percpu_demo_shared) + (int)*this_cpu_ptr(percpu_demo_ptr);
}
EXPORT_SYMBOL(percpu_demo_hit);

static int __init percpu_demo_init(void)
{
	return percpu_demo_hit() > 0 ? 0 : -EINVAL;
}

static void __exit percpu_demo_exit(void)
{
}

module_init(percpu_demo_init);
module_exit(percpu_demo_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("per-cpu variables, for klpresolve's kernel oracle");
