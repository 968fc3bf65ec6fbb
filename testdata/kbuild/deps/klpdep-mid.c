// SPDX-License-Identifier: GPL-2.0
/* klpdep_mid: depends on klpdep_base, and exports a function of its own. */
#include <linux/module.h>

int klpdep_base_add(int a, int b);

int klpdep_mid_twice(int a)
{
	return klpdep_base_add(a, a);
}
EXPORT_SYMBOL(klpdep_mid_twice);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("klpresolve test module: a dependency with a dependency");
