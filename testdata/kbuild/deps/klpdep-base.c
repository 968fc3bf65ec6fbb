// SPDX-License-Identifier: GPL-2.0
/*
 * klpdep_base: the bottom of a chain of modules that depend on each other,
 * for klpresolve's link --modules tests: it exports one function to every
 * module and one to GPL-compatible modules only.
 */
#include <linux/module.h>

int klpdep_base_add(int a, int b)
{
	return a + b;
}
EXPORT_SYMBOL(klpdep_base_add);

int klpdep_base_secret(void)
{
	return 42;
}
EXPORT_SYMBOL_GPL(klpdep_base_secret);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("klpresolve test module: exports for other modules");
