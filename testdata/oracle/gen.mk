# The kernel oracle across the generations: Debian's 6.1 (bookworm's
# 6.1.0-57, the corpus's build), 6.12 (trixie's 6.12.117) and 7.2 (sid's
# 7.2.13) kernels, amd64 and arm64,
# boot under qemu (TCG, nokaslr) and load some of their own modules; their
# /proc/kallsyms and where they put each module's sections are what
# GEN-ARCH/ records (kallsyms.digest, NAME.sections), which kallsyms's
# TestImageOracle compares the image's own table with. Included by
# Makefile (make gens); go test needs neither qemu nor the kernels.
# Needs qemu-system-x86, qemu-system-arm, busybox-static (and its arm64
# package, downloaded), cpio, xz, and ../../scripts/debian-kernel's
# downloads (about 120 MB for 6.12, 140 MB for 7.2, an architecture).

GENS = 6.1-amd64 6.1-arm64 6.12-amd64 6.12-arm64 7.2-amd64 7.2-arm64

gens: $(foreach g,$(GENS),$(g)/kallsyms.digest)

# The modules each loads, dependencies first: xfs (with 6.12's crc32c),
# md4, and af_key with xfrm_algo.
MODS_6.1  = crypto/crc32c_generic lib/libcrc32c fs/xfs/xfs crypto/md4 net/xfrm/xfrm_algo net/key/af_key
MODS_6.12 = crypto/crc32c_generic lib/libcrc32c fs/xfs/xfs crypto/md4 net/xfrm/xfrm_algo net/key/af_key
MODS_7.2  = fs/xfs/xfs crypto/md4 net/xfrm/xfrm_algo net/key/af_key

rel   = $(if $(filter 6.1,$(1)),6.1.0-57-$(2),$(if $(filter 6.12,$(1)),6.12.117+deb13-$(2),7.2.13+deb14-$(2)))
image = $(if $(filter 7.2,$(1)),usr/lib/modules/$(call rel,$(1),$(2))/vmlinuz,boot/vmlinuz-$(call rel,$(1),$(2)))
# 6.1's modules are plain .ko files under lib/modules (bookworm has no
# merged /usr); later ones .ko.xz under usr/lib/modules.
kmods = $(if $(filter 6.1,$(1)),lib,usr/lib)/modules/$(call rel,$(1),$(2))/kernel

# gen GEN,ARCH,QEMU,CONSOLE,BUSYBOX: the recipe of one kernel.
define gen
$(WORK)/$(1)-$(2)/root/$(call image,$(1),$(2)):
	../../scripts/debian-kernel $(1) $(2) $(WORK)/$(1)-$(2) modules

$(WORK)/$(1)-$(2)/initrd.gz: gen.mk init-gen.sh lib.sh $(WORK)/$(1)-$(2)/root/$(call image,$(1),$(2)) $(5)
	$$(call initrd,$(WORK)/$(1)-$(2),$(5),,init-gen.sh)
	for m in $(MODS_$(1)); do \
	  f=$(WORK)/$(1)-$(2)/root/$(call kmods,$(1),$(2))/$$$$m.ko; \
	  if [ -f $$$$f.xz ]; then xz -dc $$$$f.xz; else cat $$$$f; fi > $(WORK)/$(1)-$(2)/initrd/m/$$$${m##*/}.ko; \
	  echo $$$${m##*/} >> $(WORK)/$(1)-$(2)/initrd/m/order; \
	done
	$$(call pack,$(WORK)/$(1)-$(2))

$(WORK)/$(1)-$(2)/dumps/kallsyms: $(WORK)/$(1)-$(2)/initrd.gz
	timeout 900 $(3) -m 1024 -smp 1 -nographic -no-reboot \
	  -kernel $(WORK)/$(1)-$(2)/root/$(call image,$(1),$(2)) -initrd $(WORK)/$(1)-$(2)/initrd.gz \
	  -append "console=$(4) nokaslr loglevel=4 panic=-1" > $(WORK)/$(1)-$(2)/serial.txt 2>&1
	$$(call unpack,$(WORK)/$(1)-$(2))

$(1)-$(2)/kallsyms.digest: $(WORK)/$(1)-$(2)/dumps/kallsyms
	cd ../.. && go test ./kallsyms -run '^TestImageOracle$$$$' -count=1 -args -oracle.record=$(1)-$(2) -oracle.dumps=$(WORK)/$(1)-$(2)/dumps
endef

$(WORK)/bb-arm64/bin/busybox:
	mkdir -p $(WORK)/bb-arm64
	cd $(WORK)/bb-arm64 && apt-get download -qq busybox-static:arm64
	dpkg-deb -x $(WORK)/bb-arm64/busybox-static_*_arm64.deb $(WORK)/bb-arm64

$(eval $(call gen,6.1,amd64,qemu-system-x86_64,ttyS0,/bin/busybox))
$(eval $(call gen,6.1,arm64,qemu-system-aarch64 -M virt -cpu cortex-a57,ttyAMA0,$(WORK)/bb-arm64/bin/busybox))
$(eval $(call gen,6.12,amd64,qemu-system-x86_64,ttyS0,/bin/busybox))
$(eval $(call gen,7.2,amd64,qemu-system-x86_64,ttyS0,/bin/busybox))
$(eval $(call gen,6.12,arm64,qemu-system-aarch64 -M virt -cpu cortex-a57,ttyAMA0,$(WORK)/bb-arm64/bin/busybox))
$(eval $(call gen,7.2,arm64,qemu-system-aarch64 -M virt -cpu cortex-a57,ttyAMA0,$(WORK)/bb-arm64/bin/busybox))

.PHONY: gens
