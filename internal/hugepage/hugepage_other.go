// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package hugepage

func advise(addr, n uintptr) {}

func release(addr, n uintptr) {}

func populate(addr, n uintptr) bool { return false }
