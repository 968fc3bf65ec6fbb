// SPDX-License-Identifier: GPL-2.0-only

package par

import (
	"context"
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

// ForContext calls every iteration and returns nil on a live context; once
// the context is done, no iteration starts (the one that cancelled it, and
// those under way on other workers, finish) and it returns the cause.
func TestForContext(t *testing.T) {
	var calls atomic.Int32
	require.NoError(t, ForContext(t.Context(), 3, 50, func(int) { calls.Add(1) }))
	require.Equal(t, int32(50), calls.Load())

	calls.Store(0)
	ctx, cancel := context.WithCancel(t.Context())
	err := ForContext(ctx, 3, 1000, func(i int) {
		if calls.Add(1) == 5 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.GreaterOrEqual(t, calls.Load(), int32(5))
	require.LessOrEqual(t, calls.Load(), int32(5+2), "iterations started after the cancel")

	calls.Store(0)
	require.NoError(t, ForContext(ctx, 3, 0, func(int) { calls.Add(1) }), "nothing to do is nothing left undone")
}
