// SPDX-License-Identifier: GPL-2.0-only

package main

import (
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
// work then goes on unseen until the process exits; it must write
// nothing that the caller reads after a timeout.
func withDeadline(limit time.Duration, st *stage, work func() error) error {
	if limit <= 0 {
		return work()
	}
	done := make(chan error, 1)
	go func() { done <- work() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &exitError{exitTooSlow, fmt.Errorf("--max-time %v reached while %s", limit, st)}
	}
}
