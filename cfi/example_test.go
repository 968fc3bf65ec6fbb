// SPDX-License-Identifier: GPL-2.0-only

package cfi_test

import (
	"fmt"
	"log"

	"github.com/klpresolve/klpresolve/cfi"
)

// Record two modules in a shadow and look addresses up from a reader.
func Example() {
	s, err := cfi.New(cfi.Options{}) // 4 KiB pages, 32,764 slots, deferred reclamation
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.Add(cfi.Module{Name: "ext4", TextStart: 0xffffffffc0350000, TextEnd: 0xffffffffc0358000, CheckFn: 0xffffffffc0357000})
	res, _ := s.Add(cfi.Module{Name: "odd", TextStart: 0xffffffffc0360000, TextEnd: 0xffffffffc0361000, CheckFn: 0xffffffffc0360010})
	fmt.Println("odd in shadow:", res.Shadowed)

	r := s.NewReader() // one per goroutine
	defer r.Close()
	for _, addr := range []uint64{0xffffffffc0350123, 0xffffffffc0360500, 0xffffffffc0370000} {
		fn, src := r.Lookup(addr)
		fmt.Printf("%#x: check %#x (%s)\n", addr, fn, src)
	}
	// Output:
	// odd in shadow: false
	// 0xffffffffc0350123: check 0xffffffffc0357000 (shadow)
	// 0xffffffffc0360500: check 0xffffffffc0360010 (slow path)
	// 0xffffffffc0370000: check 0x0 (miss)
}
