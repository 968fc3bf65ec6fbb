/*
 * klp-patch.c: a livepatch module declared the way samples/livepatch and
 * hand-written patches declare one: a static struct klp_patch, its
 * klp_object array and their klp_func arrays, for klpresolve's tests of
 * patched functions (the structs: klp-types.h).
 *
 * Patched functions, against the Debian 6.1.0-57-amd64 kallsyms of the
 * corpus:
 *   vfs_read                 vmlinux, unique
 *   type_show,3              vmlinux, 17 copies
 *   ext4_read_inode_bitmap   module ext4 (loaded)
 *   xfs_iget                 module xfs (not loaded): deferred
 * Built with -DBROKEN (klp-patch-broken.ko): vmlinux also patches
 * no_such_function (not found), type_show with old_sympos 0 (ambiguous)
 * and vfs_read with old_sympos 1, which sysfs names like the first
 * (vfs_read,1: -EEXIST); and a fourth object, nfs, patches nothing (an
 * empty klp_func array, which klp_enable_patch() takes).
 */
#include "klp-types.h"

extern long vfs_read(void *file, char *buf, unsigned long count, long long *pos);
extern int klp_enable_patch(struct klp_patch *patch);

long livepatch_vfs_read(void *file, char *buf, unsigned long count, long long *pos)
{
	return vfs_read(file, buf, count ? count : 1, pos);
}
int livepatch_type_show(void) { return 0; }
void *livepatch_bitmap(void *sb, unsigned int group) { return sb; }
int livepatch_xfs(void *mp) { return 0; }

/* Like a struct file_operations: THIS_MODULE, then a function pointer. */
struct ops { struct module *owner; int (*show)(void); };
const struct ops decoy_ops = { &__this_module, livepatch_type_show };

static struct klp_func vmlinux_funcs[] = {
	{ .old_name = "vfs_read", .new_func = livepatch_vfs_read, },
	{ .old_name = "type_show", .new_func = livepatch_type_show, .old_sympos = 3, },
#ifdef BROKEN
	{ .old_name = "no_such_function", .new_func = livepatch_type_show, },
	{ .old_name = "type_show", .new_func = livepatch_type_show, },
	{ .old_name = "vfs_read", .new_func = livepatch_vfs_read, .old_sympos = 1, },
#endif
	{ }
};
static struct klp_func ext4_funcs[] = {
	{ .old_name = "ext4_read_inode_bitmap", .new_func = livepatch_bitmap, },
	{ }
};
static struct klp_func xfs_funcs[] = {
	{ .old_name = "xfs_iget", .new_func = livepatch_xfs, },
	{ }
};
#ifdef BROKEN
static struct klp_func nfs_funcs[] = {
	{ }
};
#endif
static struct klp_object objs[] = {
	{ /* name being NULL means vmlinux */ .funcs = vmlinux_funcs, },
	{ .name = "ext4", .funcs = ext4_funcs, },
	{ .name = "xfs", .funcs = xfs_funcs, },
#ifdef BROKEN
	{ .name = "nfs", .funcs = nfs_funcs, },
#endif
	{ }
};
static struct klp_patch patch = {
	.mod = &__this_module,
	.objs = objs,
};

int init_module(void)
{
	return klp_enable_patch(&patch);
}

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=klp_patch";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";
