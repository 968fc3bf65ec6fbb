/*
 * patch.c: a livepatch module for the miniature kernel of vmlinux.c,
 * declared as a static struct klp_patch (the structs: ../klp/klp-types.h).
 * It patches vfs_read, which has an ftrace call site; ring_buffer_lock_reserve
 * and the second type_show, which are notrace: klp_patch_func() would fail
 * them ("failed to find location for function").
 */
#include "../klp/klp-types.h"

extern int vfs_read(int fd);
extern int klp_enable_patch(struct klp_patch *patch);

int livepatch_vfs_read(int fd) { return vfs_read(fd) + 1; }
int livepatch_reserve(int len) { return len * 2; }
int livepatch_type_show(int x) { return x; }

static struct klp_func funcs[] = {
	{ .old_name = "vfs_read", .new_func = livepatch_vfs_read, },
	{ .old_name = "ring_buffer_lock_reserve", .new_func = livepatch_reserve, },
	{ .old_name = "type_show", .new_func = livepatch_type_show, .old_sympos = 2, },
	{ }
};
static struct klp_object objs[] = {
	{ /* name being NULL means vmlinux */ .funcs = funcs, },
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

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=livepatch_trace";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";
