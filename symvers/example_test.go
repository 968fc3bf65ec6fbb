// SPDX-License-Identifier: GPL-2.0-only

package symvers_test

import (
	"fmt"
	"strings"

	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/symvers"
)

// A module built against other headers than the kernel's: the loader
// refuses module_layout first, then each symbol whose CRC differs.
func Example() {
	tb, err := symvers.Parse(

		"Module.symvers", strings.NewReader(
			"0x9060323f\tmodule_layout\tvmlinux\tEXPORT_SYMBOL\t\n"+
				"0xf0949581\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n"+
				"0x84b45156\tinsert_resource_expand_to_fit\tvmlinux\tEXPORT_SYMBOL_GPL\tCXL\n"))

	if err != nil {
		panic(err)
	}
	r := tb.Check(symvers.Module{
		Name:        "fix",
		Versions:    []symvers.Version{{Name: "module_layout", CRC: 0x160c03af}, {Name: "seq_printf", CRC: 0xf0949581}, {Name: "insert_resource_expand_to_fit", CRC: 0x84b45156}},
		HasVersions: true,
		Undefined:   []string{"seq_printf", "insert_resource_expand_to_fit"},
	}, kgen.Linux6_1)
	fmt.Println(r.Checked, "checked")
	for _, p := range r.Problems {
		fmt.Println(p.Message)
	}
	// Output:
	// 3 checked
	// fix: disagrees about version of symbol module_layout
	// fix: module uses symbol (insert_resource_expand_to_fit) from namespace CXL, but does not import it.
}

// A module built against Debian's 6.1.0-57 headers, on kernels of other
// builds: with __versions, a CONFIG_MODVERSIONS kernel compares what
// follows the release; a real-time kernel's configuration differs.
func ExampleCheckVermagic() {
	m := symvers.Module{Name: "fix", Vermagic: "6.1.0-57-amd64 SMP preempt mod_unload modversions ", HasVermagic: true, HasVersions: true}
	for _, kernel := range []string{
		"6.1.0-47-amd64 SMP preempt mod_unload modversions ",
		"6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions ",
	} {
		if g := symvers.CheckVermagic(m, kernel); g.OK() {
			fmt.Println("taken")
		} else {
			fmt.Println(g.Problem)
		}
	}
	// Output:
	// taken
	// fix: version magic '6.1.0-57-amd64 SMP preempt mod_unload modversions ' should be '6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions '
}
