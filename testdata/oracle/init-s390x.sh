#!/bin/busybox sh
# The s390x initramfs's /init (see Makefile): loads the modules in /m in
# modprobe's order, then dumps every loaded module's core from /proc/kcore
# (kdump.c) and reports what the kernel made of them (lib.sh).
. /lib.sh
setup
load md4 crct10dif_common crct10dif_generic crc-t10dif xfrm_algo af_key \
	crc32c_generic libcrc32c xfs
dumpall
report
