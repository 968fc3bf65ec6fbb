// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

// hashShort is xxhash.Sum64 for every length below 32, whatever follows
// the input in the buffer.
func TestHashShort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 32)
	for range 20000 {
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		for n := range 32 {
			require.Equal(t, xxhash.Sum64(b[:n]), hashShort(b, n), "n=%d %x", n, b)
		}
	}
}
