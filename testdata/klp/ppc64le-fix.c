/*
 * ppc64le-fix.c: a livepatch module for a ppc64le (ELFv2) kernel, built as
 * Kbuild builds one (-mcmodel=medium, -mprofile-kernel: an _mcount call
 * in every function) and converted against ppc64le-kallsyms.txt: its call
 * to vfs_read becomes a .klp.rela.vmlinux relocation, the one to ext4's
 * local ext4_bitmap_helper a .klp.rela.ext4 one. Both calls go through
 * stubs the loader writes into .stubs (ppc64-stubs.h declares it, as
 * asm/module.h does), the ftrace stubs before them.
 */
extern long vfs_read(void *file, char *buf, unsigned long count, long long *pos);
extern unsigned long volatile jiffies;
extern int ext4_bitmap_helper(int);

struct module { char pad[64]; };
struct module __this_module __attribute__((section(".gnu.linkonce.this_module"))) = { { 0 } };

long livepatch_vfs_read(void *file, char *buf, unsigned long count, long long *pos)
{
	if (jiffies == 0)
		return -1;
	return vfs_read(file, buf, count, pos) + ext4_bitmap_helper(3);
}

static const char modinfo_name[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=livepatch_ppc";
static const char modinfo_lp[] __attribute__((section(".modinfo"), used, aligned(1))) = "livepatch=Y";
static const char modinfo_lic[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL";
