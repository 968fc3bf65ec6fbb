/*
 * A small C module body for the GNU ld comparison, compiled by each
 * architecture's gcc (x86_64 -mcmodel=kernel; arm64; arm in ARM and in
 * Thumb-2 state): whatever relocations the compiler chooses, at the
 * addresses in cfix-<arch>.syms, must come out as ld makes them.
 */
extern int ext_counter;
extern long ext_table[16];
extern void ext_notify(int);
extern int ext_compute(int, int);

static int calls;
int module_state = 3;
long *table_ptr = &ext_table[4];
void (*notify_hook)(int) = ext_notify;

static __attribute__((noinline)) int helper(int x)
{
	return x * module_state + ext_counter;
}

int entry(int a, int b)
{
	calls++;
	ext_notify(a);
	if (a > b)
		return helper(a) + ext_compute(a, b);
	return (int)ext_table[b & 15] + calls;
}
