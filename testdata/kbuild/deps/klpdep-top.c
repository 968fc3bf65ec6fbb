// SPDX-License-Identifier: GPL-2.0
/*
 * klpdep_top: depends on klpdep_mid (and through it on klpdep_base) and on
 * klpdep_base's GPL-only export: modprobe loads klpdep_base, then
 * klpdep_mid, then this.
 */
#include <linux/module.h>
#include <linux/printk.h>

int klpdep_mid_twice(int a);
int klpdep_base_secret(void);

static int __init klpdep_top_init(void)
{
	pr_info("klpdep_top: %d\n", klpdep_mid_twice(klpdep_base_secret()));
	return 0;
}
module_init(klpdep_top_init);

static void __exit klpdep_top_exit(void)
{
}
module_exit(klpdep_top_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("klpresolve test module: depends on two others");
