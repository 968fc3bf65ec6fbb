/* The other type_show: notrace, so one of the two names has no call site. */
#define notrace __attribute__((__no_instrument_function__))
#define noinline __attribute__((__noipa__))

extern int jiffies;

static noinline notrace int type_show(int x) { return x + jiffies; }
int twin_call(int x) { return type_show(x); }
