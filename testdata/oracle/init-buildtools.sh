#!/bin/busybox sh
# The build-tool fixtures' initramfs /init (testdata/buildtools/Makefile):
# the kernel the livepatch modules were built for loads the modules in
# /m/order (the patched modules first), then each livepatch module in
# /m/patches. For each livepatch module it records livepatch's verdict
# (sysfs, or the kernel's words in dmesg), every section's bytes as the
# kernel relocated them (sections.bin, one after another as sections.txt
# lists them; their sizes from /m/NAME.sizes; not the init ones, freed),
# and, for every patched function sysfs lists, the first bytes of each
# symbol of that name: ftrace turned the patched one's into a call.
. /lib.sh
# The small kernels have no ACPI, so lib.sh's poweroff would halt: a
# reboot ends qemu (-no-reboot) instead.
poweroff() { reboot -f; }
setup
load $(cat /m/order)
for p in $(cat /m/patches); do
	insmod /m/$p.ko || echo "insmod $p: failed" >> verdicts
	name=$(echo $p | tr - _)
	# Without a reliable stack unwinder (these small kernels have none)
	# sleeping kernel threads never switch: the transition is forced, as
	# sysfs allows. The relocations and functions were resolved already.
	forced=
	i=0
	while [ "$(cat /sys/kernel/livepatch/$name/transition 2>/dev/null)" = 1 ]; do
		sleep 1; i=$((i+1))
		if [ $i = 3 ] && [ -z "$forced" ]; then
			echo 1 > /sys/kernel/livepatch/$name/force && forced=" forced"
		fi
		[ $i -lt 20 ] || break
	done
	echo "$p enabled=$(cat /sys/kernel/livepatch/$name/enabled 2>/dev/null) transition=$(cat /sys/kernel/livepatch/$name/transition 2>/dev/null)$forced" >> verdicts
	while read sec size; do
		case $sec in .init*) continue ;; esac # (freed once the module is up)
		addr=$(cat "/sys/module/$name/sections/$sec" 2>/dev/null) || continue
		: > /sec.bin
		[ "$size" -gt 0 ] && { kdump $addr $size > /sec.bin || echo "oracle: kdump $p $sec failed"; }
		echo "$p $sec $addr $(wc -c < /sec.bin)" >> sections.txt
		cat /sec.bin >> sections.bin
	done < /m/$p.sizes
	for d in /sys/kernel/livepatch/$name/*/*,*; do
		[ -d "$d" ] || continue
		f=${d##*/}; obj=${d%/*}; obj=${obj##*/}
		echo "$p $obj ${f%,*} ${f##*,}" >> funcs
		awk -v n="${f%,*}" '$3 == n' /proc/kallsyms | while read a t s rest; do
			echo "$p $obj $s $a $(kdump 0x$a 5 | od -An -tx1 | tr -d ' \n')" >> entries
		done
	done
done
report
