#!/bin/busybox sh
# The arm64 initramfs's /init (see Makefile): loads the modules in /m in
# modprobe's order, then dumps every loaded module's core from /proc/kcore
# (kdump.c) and writes what the kernel made of them (section addresses,
# /proc/modules, /proc/kallsyms, dmesg) to the serial console as a base64
# tarball between two marker lines, then powers off.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /out
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
cd /out
for m in md4 crct10dif_common crct10dif_generic crc-t10dif llc llc2 libchacha chacha_generic \
	zstd_compress raid6_pq xor-neon xor crc32c_generic libcrc32c btrfs; do
	insmod /m/$m.ko || echo "oracle: insmod $m failed"
done
# Every module's core, its exports among it (the oracle's arm64 symbols).
while read name size refs deps state addr rest; do
	echo "$name $size $refs $deps $state $addr" > $name.modules
	kdump $addr $size > $name.core || echo "oracle: kdump $name failed"
done < /proc/modules
for d in /sys/module/*/sections; do
	m=${d%/sections}; m=${m##*/}
	for f in $d/.* $d/*; do
		[ -f "$f" ] && echo "$m ${f##*/} $(cat $f)"
	done
done > sections
cat /proc/kallsyms > kallsyms
cat /proc/modules > modules
dmesg > dmesg
echo ===ORACLE-BEGIN
tar czf - . | base64
echo ===ORACLE-END
poweroff -f
