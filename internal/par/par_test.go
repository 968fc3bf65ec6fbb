// SPDX-License-Identifier: GPL-2.0-only

package par

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestForCallsEachOnce(t *testing.T) {
	for _, workers := range []int{-1, 0, 1, 2, 7, 100} {
		for _, n := range []int{0, 1, 5, 1000} {
			calls := make([]atomic.Int32, n)
			For(workers, n, func(i int) { calls[i].Add(1) })
			for i := range calls {
				require.Equal(t, int32(1), calls[i].Load(), "workers %d n %d i %d", workers, n, i)
			}
		}
	}
}
