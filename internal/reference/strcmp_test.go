// SPDX-License-Identifier: GPL-2.0-only

package reference

import "testing"

// strcmpEq agrees with ==, name by name, as strcmp(a, b) == 0 does on C
// strings: a prefix is not equal, either way round.
func TestStrcmpEq(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"schedule", "schedule", true},
		{"", "", true},
		{"schedule", "schedule_tail", false},
		{"schedule_tail", "schedule", false},
		{"", "a", false},
		{"a", "", false},
		{"xfs_fs_fill_super", "xfs_fs_fill_supeR", false},
		{"Xfs", "xfs", false},
	} {
		if got := strcmpEq(tc.a, tc.b); got != tc.want {
			t.Errorf("strcmpEq(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
