/*
 * kpatch.c: a legacy kpatch-format patch module for x86_64, written for
 * klpresolve's tests (the sympos layout of kpatch-patch.h, kpatch 0.4+).
 * Its string pointers are relocations into .kpatch.strings, as kpatch's
 * create-diff-object emits them.
 */
struct kpatch_patch_func {
	unsigned long new_addr, new_size, old_addr, old_size, sympos;
	const char *name, *objname;
};
struct kpatch_patch_dynrela {
	unsigned long dest, src, type, sympos;
	const char *name, *objname;
	int external;
	long addend;
};

#define STR(s) ({ static const char __s[] __attribute__((section(".kpatch.strings"), used)) = s; __s; })
static const char n_vfs_read[] __attribute__((section(".kpatch.strings"))) = "vfs_read";
static const char n_type_show[] __attribute__((section(".kpatch.strings"))) = "type_show";
static const char n_bitmap[] __attribute__((section(".kpatch.strings"))) = "ext4_read_inode_bitmap";
static const char n_xfs[] __attribute__((section(".kpatch.strings"))) = "xfs_iget";
static const char o_vmlinux[] __attribute__((section(".kpatch.strings"))) = "vmlinux";
static const char o_ext4[] __attribute__((section(".kpatch.strings"))) = "ext4";
static const char o_xfs[] __attribute__((section(".kpatch.strings"))) = "xfs";

void patched_code(void) { }

struct kpatch_patch_dynrela dynrelas[] __attribute__((section(".kpatch.dynrelas"))) = {
	{ (unsigned long)patched_code + 1, 0, 4 /* R_X86_64_PLT32 */, 0, n_vfs_read, o_vmlinux, 0, -4 },
	{ (unsigned long)patched_code + 8, 0, 1 /* R_X86_64_64 */, 5, n_type_show, o_vmlinux, 0, 0 },
	{ (unsigned long)patched_code + 16, 0, 4, 0, n_bitmap, o_ext4, 0, -4 },
	{ (unsigned long)patched_code + 24, 0, 4, 0, n_xfs, o_xfs, 0, -4 },
	{ (unsigned long)patched_code + 32, 0, 4, 0, n_vfs_read, o_vmlinux, 1 /* exported */, -4 },
};

struct kpatch_patch_func funcs[] __attribute__((section(".kpatch.funcs"))) = {
	{ (unsigned long)patched_code, 16, 0, 0, 0, n_vfs_read, o_vmlinux },
	{ (unsigned long)patched_code, 16, 0, 0, 2, n_type_show, o_vmlinux },
};
