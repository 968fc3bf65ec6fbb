#!/bin/busybox sh
# The 6.12 and 7.2 initramfs's /init (see gen.mk): loads the modules in
# /m in the order /m/order lists them (dependencies first, as modprobe
# would), then reports what the kernel made of them and its own
# /proc/kallsyms (lib.sh).
. /lib.sh
setup
load $(cat /m/order)
report
