//go:build !race

package testutil

// Race reports whether the tests are built with the race detector (see
// race.go).
const Race = false
