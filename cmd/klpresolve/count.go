// SPDX-License-Identifier: GPL-2.0-only

package main

import "strconv"

// count is n and its noun, singular for 1 ("1 object", "0 objects",
// "1 entry", "2 entries"): the text reports' counts read as sentences.
// (JSON reports carry the numbers alone.)
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// pick is one for n == 1, else many: the words around a count that agree
// with it.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
