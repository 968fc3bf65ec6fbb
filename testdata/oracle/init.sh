#!/bin/busybox sh
# The amd64 initramfs's /init (see Makefile): loads the modules in /m into
# the kernel under test, one at a time, as modprobe would (dependencies
# first), dumps each tested module's core from /proc/kcore (kdump.c)
# after it loads, and reports what the kernel made of them (lib.sh).
. /lib.sh
setup
# dump NAME MODULE: MODULE's core, as NAME (its /proc/modules line gives
# the core's size and address)
dump() {
	grep "^$2 " /proc/modules > $1.modules
	set -- $1 $(cat $1.modules)
	kdump $7 $3 > $1.core || echo "oracle: kdump $1 failed"
}
# First, so that its per-cpu area is the reserved chunk's first.
load percpu-demo
dump percpu-demo percpu_demo
# The livepatch module, then the modules it patches: livepatch applies its
# .klp.rela.ext4 and .klp.rela.xfs sections as each one loads.
load klp-demo
sleep 2
cat /sys/kernel/livepatch/klp_demo/enabled > klp-demo.enabled
dump klp-demo klp_demo
load jbd2 mbcache crc16 ext4
dump klp-demo+ext4 klp_demo
load crc32c_generic libcrc32c xfs
dump klp-demo+ext4+xfs klp_demo
dump xfs xfs
load md4
dump md4 md4
load crct10dif_common crct10dif_generic crc-t10dif
dump crc-t10dif crc_t10dif
load xfrm_algo af_key
dump af_key af_key
report
