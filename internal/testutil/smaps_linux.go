// SPDX-License-Identifier: GPL-2.0-only

package testutil

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HugePageAdvice skips t unless madvise's huge page advice shows in this
// process's /proc/self/smaps: a kernel without transparent huge pages has
// none to give, and an emulator such as qemu-user (which runs make ports'
// 32-bit tests) ignores the advice and shows its host process's mappings.
func HugePageAdvice(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skipf("this kernel has no transparent huge pages: %v", err)
	}
	const size = 2 << 20
	m, err := unix.Mmap(-1, 0, 2*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Skipf("no anonymous mapping: %v", err)
	}
	defer unix.Munmap(m)
	base := uintptr(unsafe.Pointer(&m[0]))
	skip := int((base+size-1)&^(size-1) - base)
	if err := unix.Madvise(m[skip:skip+size], unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("madvise(MADV_HUGEPAGE): %v", err)
	}
	flags, ok := vmFlags(base + uintptr(skip))
	if !ok || !slices.Contains(flags, "hg") {
		t.Skipf("/proc/self/smaps does not show the advice (VmFlags %v): an emulator that ignores it?", flags)
	}
}

// VmFlags is the VmFlags of this process's mapping that holds addr, from
// /proc/self/smaps (hg: advised for huge pages).
func VmFlags(t testing.TB, addr uintptr) []string {
	t.Helper()
	flags, ok := vmFlags(addr)
	if !ok {
		t.Fatalf("no mapping holds %#x in /proc/self/smaps", addr)
	}
	return flags
}

func vmFlags(addr uintptr) ([]string, bool) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, false
	}
	in := false
	for line := range strings.Lines(string(b)) {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
		} else if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:")), true
		}
	}
	return nil, false
}
