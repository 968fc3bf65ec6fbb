// SPDX-License-Identifier: GPL-2.0-only

// Package ksort is a port of the Linux kernel's lib/sort.c sort_r(): the
// bottom-up heapsort the module loaders use to order relocations before
// counting PLT entries. It is not stable, and which of two equal elements
// ends first is part of the kernel's behaviour (32-bit ARM's PLT count
// depends on it), so it is ported step for step, not replaced by
// sort.Slice.
package ksort

// Sort orders s with cmp exactly as lib/sort.c sort_r() does: the same
// comparisons in the same order and the same swaps, so equal elements end
// in the kernel's order.
func Sort[T any](s []T, cmp func(a, b *T) int) {
	// sort_r() works on byte offsets pre-scaled by the element size; these
	// are element indexes. parent(i) is (i-1)/2.
	n := len(s)
	a := n / 2
	if a == 0 { // num < 2
		return
	}
	for {
		var b, c, d int
		if a > 0 { // building the heap: sift down --a
			a--
		} else if n--; n > 0 { // sorting: extract the root to --n
			s[0], s[n] = s[n], s[0]
		} else { // sort complete
			break
		}
		// Bottom-up sift: find the path to a leaf, one compare per level...
		for b = a; ; {
			c = 2*b + 1
			d = c + 1
			if d >= n {
				break
			}
			if cmp(&s[c], &s[d]) >= 0 {
				b = c
			} else {
				b = d
			}
		}
		if d == n { // the last leaf has no sibling
			b = c
		}
		// ...then backtrack to where the element at a belongs...
		for b != a && cmp(&s[a], &s[b]) >= 0 {
			b = (b - 1) / 2
		}
		// ...and shift it into place.
		c = b
		for b != a {
			b = (b - 1) / 2
			s[b], s[c] = s[c], s[b]
		}
	}
}
