// SPDX-License-Identifier: GPL-2.0-only

package hugepage

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func populateFresh(t *testing.T) {
	const page = 4096
	m, err := unix.Mmap(-1, 0, 16*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(m)
	require.True(t, Populate(m[3*page+1:9*page+5])) // whole pages 4..8
	vec := make([]byte, 16)
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, e)
	if vec[4]&1 == 0 && runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		// qemu-user (make ports runs s390x there) returns success for
		// any madvise advice and does nothing; native runs check this.
		t.Skip("madvise succeeded but faulted nothing in: an emulator that ignores advice")
	}
	for i, v := range vec {
		require.Equal(t, i >= 4 && i < 9, v&1 == 1, "page %d", i)
	}
	for i, c := range m {
		if c != 0 {
			t.Fatalf("byte %d is %#x", i, c)
		}
	}
}
