/* The other type_show: notrace, so one of the two names has no call site. */
#ifndef notrace /* arm64's: patchable_function_entry(0, 0) (the Makefile) */
#define notrace __attribute__((__no_instrument_function__))
#endif
#define noinline __attribute__((__noipa__))

extern int jiffies;

static noinline notrace int type_show(int x) { return x + jiffies; }
int twin_call(int x) { return type_show(x); }
