// SPDX-License-Identifier: GPL-2.0-only

package reference

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

func TestScanHash(t *testing.T) {
	text := "ffffffff81000000 T _stext\n" +
		"ffffffff81000010 t __func__.0\r\n" +
		"ffffffffc0001000 t helper\t[ext4]\n" +
		"c0008000 T stext\n" +
		"broken line\n" +
		"\n" +
		"ffffffff81000020 T last"
	want := xxhash.Sum64String("_stext") ^ xxhash.Sum64String("__func__.0") ^
		xxhash.Sum64String("helper") ^ xxhash.Sum64String("stext") ^ xxhash.Sum64String("last")
	for _, w := range []int{0, 1, 2, 3, 8, 100} {
		n, sum := ScanHash([]byte(text), w)
		require.Equal(t, 5, n, "workers %d", w)
		require.Equal(t, want, sum, "workers %d", w)
	}
	n, sum := ScanHash(nil, 2)
	require.Zero(t, n)
	require.Zero(t, sum)
	// Every line is counted once, whatever the split.
	big := strings.Repeat("ffffffff81000000 T a_name\n", 1000)
	n, sum = ScanHash([]byte(big), 7)
	require.Equal(t, 1000, n)
	require.Zero(t, sum) // an even number of equal hashes
}
