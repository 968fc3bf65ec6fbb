package klp_test

import (
	"fmt"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

func ExampleModule_Resolve() {
	ix, _ := kallsyms.Open("../testdata/kallsyms/example.txt", nil)
	m, _ := klp.Open("../testdata/klp/livepatch-sample.ko")
	res := m.Resolve(ix)
	for _, r := range res.Results {
		fmt.Printf("%-8s %-22s %#x\n", r.Status, r.Name, r.Address)
	}
	// Output:
	// resolved jiffies                0xffffffff82a00000
	// resolved vfs_read               0xffffffff81010180
	// resolved jiffies                0xffffffff82a00000
	// resolved ext4_read_inode_bitmap 0xffffffffc0350680
	// deferred xfs_iget               0x0
	// resolved jiffies                0xffffffff82a00000
	// resolved type_show              0xffffffff81010080
}
