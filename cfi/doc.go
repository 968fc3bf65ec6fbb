// SPDX-License-Identifier: GPL-2.0-only

// Package cfi keeps the CFI shadow of loaded modules: for each page of
// module text, which check function guards it, so that an indirect call's
// target can be checked in O(1).
//
// It mirrors kernel/cfi.c of Linux 5.13-6.0 (Clang CFI, before kCFI
// replaced it in 6.1): struct cfi_shadow (a base page index and an array
// of u16 slots, SHADOW_INVALID = 0xFFFF, each slot the page index of the
// owning module's __cfi_check relative to the base), ptr_to_shadow(),
// shadow_to_check_fn(), prepare_next_shadow() (copy or re-base the
// previous shadow), add_module_to_shadow(), remove_module_from_shadow()
// and update_shadow() (build a new shadow, make it read-only, publish it,
// free the old one after a grace period). find_check_fn()'s fall-back to
// __module_address() is the package's slow path: a sorted table of the
// loaded modules.
//
// A text range is [start, end), end exclusive; kernel/cfi.c covered up to
// and including the page of start+size, one page too many when the size
// is page-multiple (Options.KernelUpperBound reproduces that).
//
// Updates are copy-on-write under one writer lock and published with an
// atomic pointer; readers never block and never lock: they enter and
// leave a read-side section, an RCU-like scheme with grace periods
// (rcu.go). Entering and leaving a section are one sync/atomic store
// each to the reader's own cache line, so the scheme is sound by the Go
// memory model alone and the race detector checks the code users run.
// Old shadows are reclaimed in one of two ways: synchronously,
// as update_shadow() did with synchronize_rcu() (the writer waits for
// every reader that might still see the old shadow), or deferred, as
// Android's "cfi: free old cfi shadow asynchronously" did with call_rcu()
// (the writer queues the old shadow and returns; a reclaimer goroutine
// unmaps it after a grace period). Deferred is the default.
//
// Shadows live in memory mapped for them (mmap), made read-only once built
// and unmapped when reclaimed, so that a stray write, or a read of a
// reclaimed shadow, faults instead of returning garbage (until the kernel
// hands the freed addresses to a later mapping: unmapping is a tripwire,
// the grace periods are the guarantee). The bookkeeping
// of reclamation lives outside the mapping (the design tension of the
// Android patch, whose rcu_head lived inside the write-protected shadow).
// That is Linux's (a memfd, mem_linux.go); on other systems shadows are
// ordinary Go memory (mem_other.go): the same answers, without the
// tripwires.
package cfi
