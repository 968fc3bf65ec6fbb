// SPDX-License-Identifier: GPL-2.0-only

//go:build ignore

// armpages RAM PGD DUMPS: ARM has no /proc/kcore, so the armhf oracle
// reads the modules' memory from the guest's RAM after the run (qemu
// keeps it in the file RAM, guest physical 0x40000000 up, as the virt
// machine has it): for every DUMPS/NAME.modules (a /proc/modules line) it
// writes DUMPS/NAME.core, the module's core, each page found through the
// kernel's own page tables (swapper_pg_dir at virtual address PGD: the
// short-descriptor format of ARMv7 without LPAE, which vmalloc's
// mappings use).
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	physOffset = 0x40000000 // the virt machine's RAM
	pageOffset = 0xc0000000 // CONFIG_PAGE_OFFSET: lowmem's virtual start
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: go run armpages.go RAM PGD DUMPS")
		os.Exit(2)
	}
	ram, err := os.ReadFile(os.Args[1])
	check(err)
	pgd, err := strconv.ParseUint(os.Args[2], 0, 32)
	check(err)
	word := func(pa uint64) uint32 {
		if pa < physOffset || pa+4 > physOffset+uint64(len(ram)) {
			check(fmt.Errorf("physical %#x is outside RAM", pa))
		}
		return binary.LittleEndian.Uint32(ram[pa-physOffset:])
	}
	// phys walks the page tables for va (ARM ARM B3.5: a first-level
	// entry per MiB, a section or a second-level table of 256 entries).
	phys := func(va uint64) uint64 {
		l1 := word(pgd - pageOffset + physOffset + (va>>20)*4)
		switch l1 & 3 {
		case 1: // page table
			l2 := word(uint64(l1&^0x3ff) + (va>>12&0xff)*4)
			switch {
			case l2&2 != 0: // small page, 4 KiB
				return uint64(l2&^0xfff) | va&0xfff
			case l2&3 == 1: // large page, 64 KiB
				return uint64(l2&^0xffff) | va&0xffff
			}
		case 2: // section, 1 MiB (a supersection: 16 MiB)
			if l1&(1<<18) != 0 {
				return uint64(l1&^0xffffff) | va&0xffffff
			}
			return uint64(l1&^0xfffff) | va&0xfffff
		}
		check(fmt.Errorf("virtual %#x is not mapped", va))
		return 0
	}
	mods, err := filepath.Glob(filepath.Join(os.Args[3], "*.modules"))
	check(err)
	for _, m := range mods {
		b, err := os.ReadFile(m)
		check(err)
		f := strings.Fields(string(b)) // name size refs deps state address
		size, err := strconv.ParseUint(f[1], 10, 64)
		check(err)
		core, err := strconv.ParseUint(f[5], 0, 64)
		check(err)
		out := make([]byte, 0, size)
		for va := core; va < core+size; {
			n := min(0x1000-va&0xfff, core+size-va)
			pa := phys(va) - physOffset
			out = append(out, ram[pa:pa+n]...)
			va += n
		}
		check(os.WriteFile(strings.TrimSuffix(m, ".modules")+".core", out, 0o644))
	}
	fmt.Printf("armpages: %d modules' cores from %s\n", len(mods), os.Args[1])
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "armpages:", err)
		os.Exit(1)
	}
}
