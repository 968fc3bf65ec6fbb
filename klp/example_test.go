// SPDX-License-Identifier: GPL-2.0-only

package klp_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

func ExampleModule_Resolve() {
	ix, _ := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	m, _ := klp.Open("../testdata/klp/livepatch-sample.ko")
	res := m.Resolve(ix, klp.ResolveOptions{})
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

// A module that the kernel's symbols lack (here xfs) is checked against
// its file, as the kernel will resolve the patch when it loads.
func ExampleModule_Resolve_targets() {
	ix, _ := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	m, _ := klp.Open("../testdata/klp/order-patch.ko")
	xfs, _ := klp.Open("../testdata/klp/modules/xfs.ko")
	target, _ := klp.NewTarget(xfs, ix.ListsData())
	res := m.Resolve(ix, klp.ResolveOptions{Targets: map[string]*klp.Target{"xfs": target}})
	for _, r := range res.Results {
		kind := ""
		if r.Err != nil {
			kind = r.Err.Kind()
		}
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-8s %s,%d %s", r.Status, r.Name, r.Pos, kind)))
	}
	// Output:
	// deferred xfs_iget,0
	// error    xfs_setup,0 load_order
	// deferred xfs_setup,1
	// error    xfs_setup,2 load_order
	// error    xfs_lookup,0 ambiguous
	// error    xfs_igett,0 not_found
	// error    xfs_mount,1 load_order
	// deferred xfs_stats,0
}

// Turn a patch object into a livepatch module, as kpatch-build's
// create-klp-module does: the calls to nfs's vfs_read become a livepatch
// relocation, resolved when nfs loads.
func ExampleConvert() {
	obj, err := os.ReadFile("../testdata/klp/klp-patch-broken.o")
	if err != nil {
		log.Fatal(err)
	}
	ko, err := klp.Convert("klp-patch-broken.o", obj, []klp.ConvertSymbol{{Object: "nfs", Name: "vfs_read"}})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Parse("klp-patch-broken.ko", ko)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range m.Sections {
		fmt.Println(s.Name, len(s.Relocs))
	}
	// Output:
	// .klp.rela.nfs..text.livepatch_vfs_read 1
}
