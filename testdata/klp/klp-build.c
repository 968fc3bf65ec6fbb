/*
 * klp-build.c: the patched functions of a livepatch module as objtool's
 * klp-build (Linux 6.19 and later) declares them, for klpresolve's tests:
 * struct klp_object_ext entries in .init.klp_objects, each pointing to its
 * struct klp_func_ext entries in .init.klp_funcs
 * (include/linux/livepatch_external.h). No kernel headers.
 *
 * Patched functions, against the Debian 6.1.0-57-amd64 kallsyms of the
 * corpus: vfs_read and type_show,3 (vmlinux), ext4_read_inode_bitmap
 * (ext4, loaded), xfs_iget (xfs, not loaded: deferred).
 */
struct klp_object;
struct klp_callbacks {
	int (*pre_patch)(struct klp_object *obj);
	void (*post_patch)(struct klp_object *obj);
	void (*pre_unpatch)(struct klp_object *obj);
	void (*post_unpatch)(struct klp_object *obj);
	_Bool post_unpatch_enabled;
};
struct klp_func_ext {
	const char *old_name;
	void *new_func;
	unsigned long sympos;
};
struct klp_object_ext {
	const char *name;
	struct klp_func_ext *funcs;
	struct klp_callbacks callbacks;
	unsigned int nr_funcs;
};

extern long vfs_read(void *file, char *buf, unsigned long count, long long *pos);

long livepatch_vfs_read(void *file, char *buf, unsigned long count, long long *pos)
{
	return vfs_read(file, buf, count ? count : 1, pos);
}
int livepatch_type_show(void) { return 0; }
void *livepatch_bitmap(void *sb, unsigned int group) { return sb; }
int livepatch_xfs(void *mp) { return 0; }
static int pre_patch(struct klp_object *obj) { return 0; }

#define KLP_FUNCS __attribute__((section(".init.klp_funcs"), used, aligned(8)))
static struct klp_func_ext vmlinux_funcs[] KLP_FUNCS = {
	{ "vfs_read", livepatch_vfs_read, 0 },
	{ "type_show", livepatch_type_show, 3 },
};
static struct klp_func_ext ext4_funcs[] KLP_FUNCS = {
	{ "ext4_read_inode_bitmap", livepatch_bitmap, 0 },
};
static struct klp_func_ext xfs_funcs[] KLP_FUNCS = {
	{ "xfs_iget", livepatch_xfs, 0 },
};
static struct klp_object_ext objs[] __attribute__((section(".init.klp_objects"), used, aligned(8))) = {
	{ 0, vmlinux_funcs, { pre_patch }, 2 },
	{ "ext4", ext4_funcs, { 0 }, 1 },
	{ "xfs", xfs_funcs, { 0 }, 1 },
};

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=klp_build";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";

/* What modpost's NAME.mod.c adds (kbuild links it in): the module loader
 * finds the module's struct module in this section, and refuses a module
 * without it ("No module found in object"). Its layout is the kernel
 * build's; nothing here reads it. */
struct this_module { char opaque[64]; };
struct this_module __this_module __attribute__((section(".gnu.linkonce.this_module"), used)) = { { 0 } };
