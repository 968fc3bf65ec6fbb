// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// stage names what klpresolve is doing, for --max-time's message.
type stage struct{ what atomic.Pointer[string] }

func (s *stage) set(what string) { s.what.Store(&what) }

func (s *stage) String() string {
	if p := s.what.Load(); p != nil {
		return *p
	}
	return "starting"
}

// withDeadline is --max-time: it runs work, and returns exitTooSlow when
// work has not finished within limit (0: no limit), whatever work is
// blocked on (a FIFO nobody writes to, a stalled network file system).
// work's context is then done, so that the library calls that take it
// (a fleet's check) stop starting new work; what is blocked goes on
// unseen until the process exits, and must write nothing that the caller
// reads after a timeout.
func withDeadline(ctx context.Context, limit time.Duration, st *stage, work func(ctx context.Context) error) error {
	if limit <= 0 {
		return work(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- work(ctx) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &exitError{exitTooSlow, fmt.Errorf("--max-time %v reached while %s", limit, st)}
	}
}
