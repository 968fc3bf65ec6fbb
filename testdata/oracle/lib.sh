# What both initramfs /init scripts share (see Makefile): the mounts, and
# the report: every module's section addresses (sysfs), /proc/modules,
# /proc/kallsyms and dmesg, with the cores dumped so far, written to the
# serial console as a base64 tarball between two marker lines; then the
# machine powers off.

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
