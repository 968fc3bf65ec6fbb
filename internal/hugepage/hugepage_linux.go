// SPDX-License-Identifier: GPL-2.0-only

package hugepage

import "golang.org/x/sys/unix"

func advise(addr, n uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_HUGEPAGE)
}

func release(addr, n uintptr) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_DONTNEED)
}

func populate(addr, n uintptr) bool {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_POPULATE_WRITE)
	return e == 0
}
