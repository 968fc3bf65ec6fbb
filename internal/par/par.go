// SPDX-License-Identifier: GPL-2.0-only

// Package par runs the iterations of a loop on several goroutines.
package par

import (
	"context"
	"sync"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n) on up to workers goroutines, which
// take the next i as they finish one (uneven pieces balance themselves),
// and returns when every call has returned. workers < 1 means 1.
//
// The calling goroutine is one of the workers. A new goroutine may wait a
// long time for an idle core to wake (20-300 µs on a 2-vCPU VM, measured
// in kallsyms.Open): the caller starts at once and takes whatever pieces
// are left, so with more pieces than workers a late start costs little.
func For(workers, n int, f func(i int)) {
	workers = min(max(workers, 1), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			f(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// ForContext is For that stops handing out iterations once ctx is done:
// the calls under way finish, no new one starts, and it returns
// ctx.Err() if any iteration was left uncalled (nil when every one ran).
func ForContext(ctx context.Context, workers, n int, f func(i int)) error {
	var skipped atomic.Bool
	For(workers, n, func(i int) {
		if ctx.Err() != nil {
			skipped.Store(true)
			return
		}
		f(i)
	})
	if skipped.Load() {
		return ctx.Err()
	}
	return nil
}
