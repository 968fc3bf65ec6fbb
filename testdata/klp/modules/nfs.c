/*
 * A made-up module named nfs, built with ftrace call sites as kbuild
 * builds modules on x86_64 (-pg -mfentry -mrecord-mcount: a __mcount_loc
 * entry for each traceable function). nfs_fast is notrace: livepatch
 * cannot patch it (klp.TestTargetNotTraceable).
 */
#define __used __attribute__((used))
#define __noinline __attribute__((noinline))
#define notrace __attribute__((no_instrument_function))

static const char modinfo_name[] __used __attribute__((section(".modinfo"), aligned(1))) = "name=nfs";

static int nfs_calls;

__noinline notrace int nfs_fast(int x) { return x + nfs_calls; }

__noinline int nfs_open(void *inode, void *file)
{
	nfs_calls++;
	return nfs_fast(1);
}
