#!/bin/busybox sh
# The armhf initramfs's /init (see Makefile): loads the modules in /m in
# modprobe's order (the Makefile says why so many) and reports what the
# kernel made of them (lib.sh).
# ARM has no /proc/kcore: the modules' memory is read afterwards from the
# guest's RAM, which qemu keeps in a file (armpages.go).
. /lib.sh
setup
load xfrm_algo af_key crct10dif_common crct10dif-arm-ce md4 libpoly1305 \
	industrialio kfifo_buf industrialio-triggered-buffer
# The module area filled (/fill: the Makefile's A32FILL), nouveau and its
# dependencies go to vmalloc's space.
load $(cat /fill)
load drm ttm drm_kms_helper drm_display_helper drm_ttm_helper nouveau
dumpall
report
