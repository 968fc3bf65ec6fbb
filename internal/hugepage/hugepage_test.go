package hugepage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Advice never changes a byte and accepts any slice, aligned or not.
func TestAdviseKeepsContents(t *testing.T) {
	b := make([]uint32, 3<<20) // 12 MiB: holds at least 4 whole huge pages
	for i := range b {
		b[i] = uint32(i) * 2654435761
	}
	Advise(b)
	Advise(b[1:])
	Advise(b[:0])
	Advise([]byte(nil))
	Advise(make([]byte, Size-1))
	for i := range b {
		if b[i] != uint32(i)*2654435761 {
			t.Fatalf("word %d changed", i)
		}
	}
	type rec struct{ a, b uint64 }
	r := make([]rec, Size/16*3)
	Advise(r)
	r[len(r)-1] = rec{7, 8}
	require.Equal(t, rec{7, 8}, r[len(r)-1])
}
