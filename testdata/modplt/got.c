/*
 * An x86_64 module fragment built position-independent (-fpic -fno-plt: as
 * a PIE kernel would build modules, no symbol assumed local), for modplt's
 * GOT counting: external functions are called through the GOT
 * (R_X86_64_GOTPCRELX) and external data is loaded through it
 * (R_X86_64_REX_GOTPCRELX).
 */
extern int ext_a, ext_b;
extern void ext_f(void);
extern void ext_g(int);

int core_use(void)
{
	ext_f();
	ext_f();
	ext_g(ext_a);
	return ext_a + ext_b;
}

__attribute__((section(".init.text"))) int init_use(void)
{
	ext_f();
	ext_g(ext_b);
	return 0;
}
