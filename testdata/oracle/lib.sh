# What the initramfs /init scripts share (see Makefile): the mounts, the
# modules' dumps, and the report: every module's section addresses
# (sysfs), /proc/modules, /proc/kallsyms and dmesg, with the cores dumped
# so far, written to the serial console as a base64 tarball between two
# marker lines; then the machine powers off.

# setup mounts what the scripts read and enters /out, where the report's
# files go.
setup() {
	/bin/busybox --install -s /bin
	export PATH=/bin
	mkdir -p /proc /sys /dev /out
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	cd /out
}

# load MODULE...: insmod each, in order (modprobe's: dependencies first).
load() {
	for m in "$@"; do
		insmod /m/$m.ko || echo "oracle: insmod $m failed"
	done
}

# dumpall: every loaded module's /proc/modules line (NAME.modules) and,
# where the kernel has /proc/kcore, its core (NAME.core, kdump.c; armhf's
# are read from the guest's RAM afterwards: armpages.go).
dumpall() {
	while read name size refs deps state addr rest; do
		echo "$name $size $refs $deps $state $addr" > $name.modules
		[ -e /proc/kcore ] || continue
		kdump $addr $size > $name.core || echo "oracle: kdump $name failed"
	done < /proc/modules
}

report() {
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
}
