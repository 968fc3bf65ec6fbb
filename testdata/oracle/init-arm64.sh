#!/bin/busybox sh
# The arm64 initramfs's /init (see Makefile): loads the modules in /m in
# modprobe's order, then dumps every loaded module's core from /proc/kcore
# (kdump.c) and reports what the kernel made of them (lib.sh).
. /lib.sh
setup
load md4 crct10dif_common crct10dif_generic crc-t10dif llc llc2 libchacha chacha_generic \
	zstd_compress raid6_pq xor-neon xor crc32c_generic libcrc32c btrfs \
	drm ttm drm_kms_helper drm_display_helper drm_buddy i2c-algo-bit gpu-sched video \
	drm_ttm_helper amdgpu
# Every module's core, its exports among it (the oracle's symbols).
dumpall
report
