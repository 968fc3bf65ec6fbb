// SPDX-License-Identifier: GPL-2.0-only

//go:build !race && !klplight

package testutil

// Light reports whether the tests are built to check less (see light.go).
const Light = false
