// SPDX-License-Identifier: GPL-2.0-only

package ksort

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSortOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 200 {
		s := make([]int, n)
		for i := range s {
			s[i] = r.IntN(10) // many ties
		}
		want := slices.Clone(s)
		slices.Sort(want)
		Sort(s, func(a, b *int) int { return cmp.Compare(*a, *b) })
		require.Equal(t, want, s, "n=%d", n)
	}
}

// TestSortKernelOrder pins the order of equal elements to the one
// lib/sort.c produces; the expected permutations were worked through by
// hand from sort_r()'s loop (heap build, then root extraction).
func TestSortKernelOrder(t *testing.T) {
	type kv struct{ k, id int }
	by := func(a, b *kv) int { return cmp.Compare(a.k, b.k) }
	ids := func(s []kv) []int {
		var out []int
		for _, x := range s {
			out = append(out, x.id)
		}
		return out
	}
	// Three equal keys. Heap build (a=0): the path goes to index 1, and
	// the backtrack stops at once on equality: [0 1 2]. Extract: swap 0
	// and 2 -> [2 1 0]; 2 stays at the root (equal to 1). Extract: swap
	// root and 1 -> [1 2 0].
	s := []kv{{1, 0}, {1, 1}, {1, 2}}
	Sort(s, by)
	require.Equal(t, []int{1, 2, 0}, ids(s))
	// Two equal keys swap: the root is extracted to the end.
	s = []kv{{5, 0}, {5, 1}}
	Sort(s, by)
	require.Equal(t, []int{1, 0}, ids(s))
}
