// SPDX-License-Identifier: GPL-2.0-only

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

// Link an s390x module: its loader puts one GOT and one PLT at the start
// of the module's core, before its sections.
func ExampleModule_Link_s390() {
	m, err := modplt.Open("../testdata/modplt/link/s390x-got.o")
	if err != nil {
		log.Fatal(err)
	}
	kernel := map[string]uint64{"ext_fn": 0x1234560, "ext_data": 0x3ff90000000, "near_fn": 0x3ff80100000, "other_data": 0x3ff80100000}
	img, err := m.Link(modplt.LinkOptions{Resolve: func(name string) (uint64, bool) {
		v, ok := kernel[name]
		return v, ok
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range img.Sections[:3] {
		fmt.Printf("%-5s %#x %3d bytes\n", p.Name, p.Addr, p.Size)
	}
	fmt.Printf("GOT %d/%d, PLT %d/%d (the expoline thunk included), %d relocations applied\n",
		img.GOTUsed, img.GOTMax, img.PLTCoreUsed, img.PLTCoreMax, img.Relocs)
	// Output:
	// .got  0x3ff80000000  24 bytes
	// .plt  0x3ff80000018  66 bytes
	// .text 0x3ff8000005c  48 bytes
	// GOT 3/3, PLT 3/3 (the expoline thunk included), 12 relocations applied
}

// Link a ppc64le module: every call out of it goes through a stub in
// .stubs, and _mcount's is relative to the kernel's TOC, which
// LinkOptions.Kernel finds among the kernel's own symbols.
func ExampleModule_Link_ppc64() {
	m, err := modplt.Open("../testdata/modplt/link/cfix-ppc64le.o")
	if err != nil {
		log.Fatal(err)
	}
	exports := map[string]uint64{"_mcount": 0xc000000000071234, "ext_notify": 0xc000000000200000,
		"ext_compute": 0xc000000000200100, "ext_counter": 0xc000000002000000, "ext_table": 0xc000000002000100}
	kernel := map[string]uint64{".TOC.": 0xc000000001f0a100, "ftrace_caller": 0xc000000000071300, "ftrace_regs_caller": 0xc000000000071400}
	lookup := func(m map[string]uint64) modplt.Resolver {
		return func(name string) (uint64, bool) {
			v, ok := m[name]
			return v, ok
		}
	}
	img, err := m.Link(modplt.LinkOptions{Resolve: lookup(exports), Kernel: lookup(kernel)})
	if err != nil {
		log.Fatal(err)
	}
	stubs := img.Section(".stubs")
	fmt.Printf("%s at %#x, %d bytes: %d of %d stubs used\n", stubs.Name, stubs.Addr, stubs.Size, img.PLTCoreUsed, img.PLTCoreMax)
	fmt.Printf("%d relocations applied, linked: %v, pages of %d KiB\n", img.Relocs, img.Linked(), img.PageSize>>10)
	// Output:
	// .stubs at 0xc008000000000120, 280 bytes: 5 of 7 stubs used
	// 24 relocations applied, linked: true, pages of 64 KiB
}
