//go:build !race

package cfi

const raceEnabled = false
