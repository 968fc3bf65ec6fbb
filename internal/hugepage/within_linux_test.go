// SPDX-License-Identifier: GPL-2.0-only

package hugepage

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// AdviseWithin advises the huge pages a slice covers an eighth of and owns
// (up to its capacity), and no other: read back from the mapping's
// VmFlags, where the kernel lists the advice as "hg".
func TestAdviseWithin(t *testing.T) {
	testutil.HugePageAdvice(t)
	const pages = 4
	for _, tc := range []struct {
		from, len, cap int // bytes from the first huge page boundary
		want           []bool
		advise         bool // Advise(b[from:from+len]): whole pages only
	}{
		{4096, 2*Size + Size/4, 0, []bool{false, true, false, false}, true},
		{0, 3 * Size, 0, []bool{true, true, true, false}, true},
		{0, 2*Size - 1, 0, []bool{true, false, false, false}, true},
		{0, Size + Size/4, 2 * Size, []bool{true, true, false, false}, false},
		{0, Size + Size/8, 2 * Size, []bool{true, true, false, false}, false},
		{0, Size + Size/8 - 1, 2 * Size, []bool{true, false, false, false}, false},
		{0, Size + Size/4, Size + Size/2, []bool{true, false, false, false}, false},
		{4096, 2 * Size, 3*Size - 4096, []bool{false, true, false, false}, false},
		{4096, 2*Size + Size/4, 3*Size - 4096, []bool{false, true, true, false}, false},
		{0, Size / 16, Size, []bool{false, false, false, false}, false},
		{0, 0, 3 * Size, []bool{false, false, false, false}, false},
		{Size, 2 * Size, 2 * Size, []bool{false, true, true, false}, false},
	} {
		m, err := unix.Mmap(-1, 0, (pages+1)*Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		require.NoError(t, err)
		base := uintptr(unsafe.Pointer(&m[0]))
		skip := int((base+Size-1)&^(Size-1) - base)
		a := m[skip:]
		if tc.advise {
			Advise(a[tc.from : tc.from+tc.len])
		} else {
			AdviseWithin(a[tc.from : tc.from+tc.len : tc.from+tc.cap])
		}
		got := make([]bool, pages)
		for i := range got {
			got[i] = advised(t, uintptr(unsafe.Pointer(&a[i*Size])))
		}
		require.Equal(t, tc.want, got, "from %#x, len %#x, cap %#x", tc.from, tc.len, tc.cap)
		require.NoError(t, unix.Munmap(m))
	}
	// Elements larger than a byte: 3 MiB of uint64s in 4 MiB.
	m, err := unix.Mmap(-1, 0, 3*Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(m)
	base := uintptr(unsafe.Pointer(&m[0]))
	a := m[int((base+Size-1)&^(Size-1)-base):]
	w := unsafe.Slice((*uint64)(unsafe.Pointer(&a[0])), 2*Size/8)
	AdviseWithin(w[:3*Size/2/8])
	require.True(t, advised(t, uintptr(unsafe.Pointer(&a[0]))))
	require.True(t, advised(t, uintptr(unsafe.Pointer(&a[Size]))))
}

// advised reports whether the mapping holding addr has the huge page
// advice.
func advised(t *testing.T, addr uintptr) bool {
	t.Helper()
	return slices.Contains(testutil.VmFlags(t, addr), "hg")
}
