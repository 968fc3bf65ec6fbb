// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package cfi

func registerMembarrier() bool { return false }

func membarrier() bool { return false }
