/*
 * A livepatch whose relocations name symbols of the made-up module xfs
 * (modules/xfs-core.c, modules/xfs-init.c), one case each; klp's
 * TestGenerateFixtures converts it into order-patch.ko, giving each
 * extern below the .klp.sym name in its comment.
 */
extern int p_iget(void);     /* xfs_iget,0: unique in either order */
extern int p_setup0(void);   /* xfs_setup,0: two while xfs loads, one after */
extern int p_setup1(void);   /* xfs_setup,1: the core one in either order */
extern int p_setup2(void);   /* xfs_setup,2: the init one, only while xfs loads */
extern int p_lookup0(void);  /* xfs_lookup,0: two in either order */
extern int p_missing(void);  /* xfs_igett,0: no such symbol */
extern int p_mount1(void);   /* xfs_mount,1: the init one while xfs loads, the core one after */
extern int p_stats;          /* xfs_stats,0: data */

int livepatch_order(void)
{
	return p_iget() + p_setup0() + p_setup1() + p_setup2() + p_lookup0() + p_missing() + p_mount1() + p_stats;
}

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=livepatch_order";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";

/* What modpost's NAME.mod.c adds (kbuild links it in): the module loader
 * finds the module's struct module in this section, and refuses a module
 * without it ("No module found in object"). Its layout is the kernel
 * build's; nothing here reads it. */
struct this_module { char opaque[64]; };
struct this_module __this_module __attribute__((section(".gnu.linkonce.this_module"), used)) = { { 0 } };
