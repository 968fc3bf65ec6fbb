// SPDX-License-Identifier: GPL-2.0-only

package ftrace_test

import (
	"fmt"
	"log"

	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Ask whether livepatch can patch a function: klp_patch_func() needs an
// ftrace call site in it, which the kernel image's __mcount_loc table
// lists.
func ExampleOpen() {
	ix, err := kallsyms.Open("../testdata/ftrace/System.map", kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	sites, err := ftrace.Open("../testdata/ftrace/vmlinux", ix)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sites.Len(), "call sites")
	for _, name := range []string{"vfs_read", "ring_buffer_lock_reserve"} {
		sym, err := ix.Lookup(kallsyms.Vmlinux, name, 0)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %v\n", name, sites.Function(sym))
	}
	// Output:
	// 5 call sites
	// vfs_read: traceable
	// ring_buffer_lock_reserve: not traceable
}
