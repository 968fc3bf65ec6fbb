// SPDX-License-Identifier: GPL-2.0-only

//go:build race

package cfi

// raceEnabled: under the race detector readers use atomic stores (the
// detector cannot see membarrier(2)'s ordering and would report the plain
// ones).
const raceEnabled = true
