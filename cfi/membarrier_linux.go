// SPDX-License-Identifier: GPL-2.0-only

package cfi

import "golang.org/x/sys/unix"

// membarrier(2) commands (include/uapi/linux/membarrier.h).
const (
	membarrierQuery                    = 0
	membarrierPrivateExpedited         = 1 << 3
	membarrierRegisterPrivateExpedited = 1 << 4
)

// registerMembarrier enables membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
// for this process (registration is per process and idempotent) and
// reports whether it is available.
func registerMembarrier() bool {
	r, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
	if e != 0 || r&membarrierPrivateExpedited == 0 {
		return false
	}
	_, _, e = unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterPrivateExpedited, 0, 0)
	return e == 0
}

// membarrier runs a full memory barrier on every CPU that runs a thread
// of this process (an IPI to each), as liburcu's urcu-memb flavour does in
// synchronize_rcu(). It reports whether it did.
func membarrier() bool {
	_, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierPrivateExpedited, 0, 0)
	return e == 0
}
