// SPDX-License-Identifier: GPL-2.0
/*
 * klp_demo: klpresolve's livepatch module built by the kernel's own build
 * system (Kbuild, modpost) against Debian's real headers for the corpus's
 * kernel, linux-headers-6.1.0-57-amd64 6.1.192-3, so that its struct
 * layouts, sections and relocations are the ones a real patch has (see
 * Makefile). It replaces a function in vmlinux, one in ext4 (loaded in
 * the corpus's kallsyms) and one in xfs (not loaded there; its .ko is in
 * the corpus), and each replacement calls code its object does not
 * export, which `klpresolve convert` turns into livepatch relocations as
 * kpatch-build or klp-convert would.
 */
#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/livepatch.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/statfs.h>

/* Not exported by their objects: ext4's is static, xfs's is global. */
extern int ext4_has_free_clusters(void *sbi, s64 nclusters, unsigned int flags);
extern bool xfs_icount_range(void *mp, unsigned long long *min, unsigned long long *max);
/* Static in vmlinux, and one of many of that name: its position is in klp-demo.syms. */
extern ssize_t type_show(struct device *dev, struct device_attribute *attr, char *buf);

static int klp_demo_cmdline_proc_show(struct seq_file *m, void *v)
{
	char buf[64];

	type_show(NULL, NULL, buf);
	seq_printf(m, "klp_demo %lx %s\n", kallsyms_lookup_name("vfs_read"), buf);
	return 0;
}

static int klp_demo_ext4_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	buf->f_bfree = ext4_has_free_clusters(dentry->d_sb->s_fs_info, 1, 0);
	return 0;
}

static int klp_demo_xfs_fs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	unsigned long long lo, hi;

	buf->f_files = xfs_icount_range(dentry->d_sb->s_fs_info, &lo, &hi) ? hi : lo;
	return 0;
}

static struct klp_func vmlinux_funcs[] = {
	{ .old_name = "cmdline_proc_show", .new_func = klp_demo_cmdline_proc_show, },
	{ }
};

static struct klp_func ext4_funcs[] = {
	{ .old_name = "ext4_statfs", .new_func = klp_demo_ext4_statfs, },
	{ }
};

/* old_sympos 1 on a unique name: the first (and only) one. */
static struct klp_func xfs_funcs[] = {
	{ .old_name = "xfs_fs_statfs", .new_func = klp_demo_xfs_fs_statfs, .old_sympos = 1, },
	{ }
};

static struct klp_object objs[] = {
	{ .funcs = vmlinux_funcs, },
	{ .name = "ext4", .funcs = ext4_funcs, },
	{ .name = "xfs", .funcs = xfs_funcs, },
	{ }
};

static struct klp_patch patch = {
	.mod = THIS_MODULE,
	.objs = objs,
};

static int klp_demo_init(void)
{
	return klp_enable_patch(&patch);
}

static void klp_demo_exit(void)
{
}

module_init(klp_demo_init);
module_exit(klp_demo_exit);
MODULE_LICENSE("GPL");
MODULE_INFO(livepatch, "Y");
