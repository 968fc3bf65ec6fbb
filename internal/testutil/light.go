// SPDX-License-Identifier: GPL-2.0-only

//go:build race || klplight

package testutil

// Light reports whether the tests are built to check less: with the race
// detector, which makes memory-heavy tests 5-20 times slower, or with the
// klplight tag, which make ports sets for its runs under qemu-user. Light
// tests read fewer corpus files, try fewer worker counts and kernels:
// `make test` runs every test in full natively first.
const Light = true
