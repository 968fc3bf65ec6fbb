package modplt_test

import (
	"fmt"
	"log"

	"github.com/klpresolve/klpresolve/modplt"
)

// Count a 32-bit ARM module's PLT entries, as Linux 6.1 would and as few
// as suffice.
func Example() {
	m, err := modplt.Open("../testdata/modplt/thumb.o")
	if err != nil {
		log.Fatal(err)
	}
	for _, mode := range []modplt.Mode{modplt.ModeKernel, modplt.ModeOptimal} {
		c, err := m.Count(modplt.Options{Mode: mode})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: .plt %d entries (%d bytes), .init.plt %d entries (%d bytes)\n",
			mode, c.PLTCore, c.PLTSizeCore, c.PLTInit, c.PLTSizeInit)
	}
	// Output:
	// kernel: .plt 9 entries (128 bytes), .init.plt 5 entries (128 bytes)
	// optimal: .plt 6 entries (128 bytes), .init.plt 5 entries (128 bytes)
}
