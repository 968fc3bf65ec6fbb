/*
 * patch.c: the body of a livepatch module for x86_64, written for
 * klpresolve's tests. It is compiled like kernel code (see Makefile) so the
 * relocations are real compiler output, then converted into a livepatch
 * module by klp.Convert (go test ./klp -run TestGenerateFixtures -update).
 * No kernel headers: only the symbol references matter.
 *
 * References, against the Debian 6.1.0-57-amd64 kallsyms in the corpus:
 *   vfs_read                 vmlinux, unique        call    -> R_X86_64_PLT32
 *   jiffies                  vmlinux, unique        load    -> R_X86_64_32S / PC32
 *   type_show                vmlinux, 17 copies     pointer -> R_X86_64_64 (sympos 3)
 *   ext4_read_inode_bitmap   module ext4 (loaded)   call    -> R_X86_64_PLT32
 *   xfs_iget                 module xfs (not loaded): deferred
 *   no_such_function         nowhere                (the "not found" variant)
 */
extern long vfs_read(void *file, char *buf, unsigned long count, long long *pos);
extern unsigned long volatile jiffies;
extern int type_show(void);
extern void *ext4_read_inode_bitmap(void *sb, unsigned int group);
extern int xfs_iget(void *mp, void *tp, unsigned long ino, unsigned int flags, unsigned int lock, void **ipp);
extern int no_such_function(void);

int (*const klp_show_table[])(void) = { type_show };

long livepatch_vfs_read(void *file, char *buf, unsigned long count, long long *pos)
{
	if (jiffies == 0)
		return -1;
	return vfs_read(file, buf, count, pos);
}

void *livepatch_bitmap(void *sb, unsigned int group)
{
	return ext4_read_inode_bitmap(sb, group + (unsigned int)jiffies);
}

int livepatch_xfs(void *mp)
{
	return xfs_iget(mp, 0, 1, 0, 0, 0);
}

unsigned long livepatch_jiffies_addr(void)
{
	return (unsigned long)&jiffies + 8;	/* movq $jiffies+8 -> R_X86_64_32S */
}

int livepatch_missing(void)
{
	return no_such_function();
}

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=livepatch_sample";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";

/* What modpost's NAME.mod.c adds (kbuild links it in): the module loader
 * finds the module's struct module in this section, and refuses a module
 * without it ("No module found in object"). Its layout is the kernel
 * build's; nothing here reads it. */
struct this_module { char opaque[64]; };
struct this_module __this_module __attribute__((section(".gnu.linkonce.this_module"), used)) = { { 0 } };
