/* The init half of the made-up module xfs: see xfs-core.c. */
#define __used __attribute__((used))
#define __noinline __attribute__((noinline))
#define __init __attribute__((section(".init.text")))

/* Freed after the module's init: counted only while the module loads. */
static __init __noinline __used int xfs_setup(void) { return 2; }

static __noinline __used int xfs_lookup(int x) { return x * 5; }

static __noinline __used int xfs_mount(void) { return 9; }

int __init init_module(void) { return xfs_setup() + xfs_lookup(1) + xfs_mount(); }
