/*
 * The core half of a made-up module named xfs, a target for livepatch
 * relocations (testdata/klp/order-patch.c, klp.TestTargetResolve): its
 * symbols as the kernel counts them when the module loads after the
 * patch (the whole symbol table) and when it was loaded first (core
 * symbols only). xfs-init.c is the other half; the Makefile links them
 * into xfs.ko with ld -r, this file's symbols first.
 */
#define __used __attribute__((used))
#define __noinline __attribute__((noinline))

static const char modinfo_name[] __used __attribute__((section(".modinfo"), aligned(1))) = "name=xfs";

/* Data: in the core symbols only with CONFIG_KALLSYMS_ALL. */
static int xfs_stats __used;

/* Also a static of xfs-init.c, there in init code. */
static __noinline __used int xfs_setup(void) { return xfs_stats + 1; }

/* Also a static of xfs-init.c, there in core code too. */
static __noinline __used int xfs_lookup(int x) { return x * 3; }

/* Init code, and a core static of xfs-init.c: position 1 is this one
 * while xfs loads, that one after. */
static __attribute__((section(".init.text"))) __noinline __used int xfs_mount(void) { return 7; }

int xfs_iget(void *mp, void *tp, unsigned long ino, unsigned int flags, unsigned int lock, void **ipp)
{
	return xfs_setup() + xfs_lookup((int)ino);
}
