/*
 * A kernel in miniature for the ftrace tests: functions with an ftrace call
 * site (compiled with -pg -mfentry -mrecord-mcount, as an x86_64 kernel with
 * CONFIG_DYNAMIC_FTRACE is; arm64's with -fpatchable-function-entry=2) and
 * without one (notrace, as kernel/trace/ and noinstr code are), linked by
 * vmlinux.lds (arm64.lds) as MCOUNT_REC() lays out the call-site table
 * (__start_mcount_loc..__stop_mcount_loc in .init.data).
 */
#ifndef notrace /* arm64's: patchable_function_entry(0, 0) (the Makefile) */
#define notrace __attribute__((__no_instrument_function__))
#endif
#define noinline __attribute__((__noipa__))

int jiffies;

noinline int vfs_read(int fd) { return fd + jiffies; }
noinline notrace int ring_buffer_lock_reserve(int len) { return len * 2 + jiffies; }
noinline int cmdline_proc_show(int m) { return m ^ jiffies; }
/* A static function of a name twin.c has too: this one is traced. */
static noinline int type_show(int x) { return x - jiffies; }
noinline notrace int tracing_on(void) { jiffies = 1; return 0; }
/* Livepatch's entry point: a kernel with CONFIG_LIVEPATCH has it. */
noinline int klp_enable_patch(void *patch) { return patch != 0; }

int twin_call(int x);

/* First in the image, as startup_64 is: _text is here. */
__attribute__((__section__(".head.text"))) notrace void start_kernel(void)
{
	jiffies = vfs_read(1) + ring_buffer_lock_reserve(2) + cmdline_proc_show(3) +
		  type_show(4) + tracing_on() + twin_call(5) + klp_enable_patch(0);
}

/* ftrace's entry point: every traced function's first call. */
notrace void __fentry__(void) { }
