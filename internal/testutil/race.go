//go:build race

package testutil

// Race reports whether the tests are built with the race detector, which
// makes memory-heavy tests 5-20 times slower: some check less under it
// (fewer corpus files, fewer worker counts, fewer kernels), since
// `make test` runs every test in full without it first.
const Race = true
