// SPDX-License-Identifier: GPL-2.0-only

//go:build !race

package cfi

const raceEnabled = false
