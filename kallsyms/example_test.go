// SPDX-License-Identifier: GPL-2.0-only

package kallsyms_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/klpresolve/klpresolve/kallsyms"
)

func ExampleIndex_Lookup() {
	text := `ffffffff81000100 t helper
ffffffff81000200 T vfs_read
ffffffff81000300 t helper
ffffffffc0001000 t helper	[xfs]
`
	ix, _ := kallsyms.Parse("example", strings.NewReader(text), kallsyms.Options{})
	s, _ := ix.Lookup("vmlinux", "helper", 2)
	fmt.Printf("%s %#x position %d\n", s.Name, s.Address, s.Pos)
	_, err := ix.Lookup("vmlinux", "helper", 0)
	fmt.Println(err)
	// Output:
	// helper 0xffffffff81000300 position 2
	// unresolvable ambiguity for symbol 'helper' in object '(null)' (2 symbols named "helper" in vmlinux; give a sympos: [1] 0xffffffff81000100 t; [2] 0xffffffff81000300 t)
}

// A program that checks a patch against many kernels closes each index
// when it is done with it: a raw snapshot is mapped, not read, and the
// mapping is released by Close (or, later, by the collector).
func ExampleIndex_Close() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	text := "ffffffff81000200 T vfs_read\nffffffffc0001000 t helper\t[xfs]\n"
	ix, _ := kallsyms.Parse("kernel-1", strings.NewReader(text), kallsyms.Options{})
	_ = ix.WriteSnapshotRawFile(filepath.Join(dir, "kernel-1.snap"))

	for _, p := range []string{filepath.Join(dir, "kernel-1.snap")} {
		ix, err := kallsyms.Open(p, kallsyms.Options{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		s, _ := ix.Lookup("xfs", "helper", 0)
		ix.Close()
		fmt.Printf("%s: %s %#x\n", ix.Source(), s.Name, s.Address) // s stays valid
		_, err = ix.Lookup("xfs", "helper", 0)
		fmt.Println(errors.Is(err, kallsyms.ErrClosed))
	}
	// Output:
	// kernel-1: helper 0xffffffffc0001000
	// true
}

// A compact snapshot loads without decoding its symbols: a lookup decodes
// the chunk it reaches. A program that wants the whole file checked at
// once (a snapshot from elsewhere, before it is trusted) calls DecodeAll.
func ExampleIndex_DecodeAll() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	text := "ffffffff81000200 T vfs_read\nffffffffc0001000 t helper\t[xfs]\n"
	ix, _ := kallsyms.Parse("kernel", strings.NewReader(text), kallsyms.Options{})
	p := filepath.Join(dir, "kernel.snap")
	_ = ix.WriteSnapshotFile(p)

	snap, err := kallsyms.Open(p, kallsyms.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer snap.Close()
	if err := snap.DecodeAll(); err != nil {
		fmt.Println(err) // a chunk forged with a right checksum
		return
	}
	s, _ := snap.Lookup("", "vfs_read", 0)
	fmt.Printf("%s: %s %#x\n", snap.Source(), s.Name, s.Address)
	// Output:
	// kernel: vfs_read 0xffffffff81000200
}

// A loader resolving many names wants found or not, without Lookup's
// diagnostics (candidates, nearest names) for each miss.
func ExampleIndex_Find() {
	text := "ffffffff81000200 T vfs_read\nffffffffc0001000 t helper\t[xfs]\n"
	ix, _ := kallsyms.Parse("kernel", strings.NewReader(text), kallsyms.Options{})
	for _, name := range []string{"vfs_read", "xfs:helper", "vfs_reed"} {
		if s, ok := ix.FindName(name); ok {
			fmt.Printf("%s %#x\n", name, s.Address)
		} else {
			fmt.Println(name, "unresolved")
		}
	}
	_, ok := ix.Find("xfs", "helper", 2) // there is one helper in xfs
	fmt.Println(ok)
	// Output:
	// vfs_read 0xffffffff81000200
	// xfs:helper 0xffffffffc0001000
	// vfs_reed unresolved
	// false
}

// The module loader gives a module exported symbols only, and GPL-only
// ones only to GPL-compatible modules: FindExport answers as it does.
func ExampleIndex_FindExport() {
	text := `ffffffff81000000 T _printk
ffffffff81000100 T vfs_read
ffffffff81000200 T call_rcu
ffffffff82000000 r __ksymtab__printk
ffffffff8200000c R __start___ksymtab_gpl
ffffffff8200000c r __ksymtab_call_rcu
ffffffff82000018 R __stop___ksymtab_gpl
`
	ix, _ := kallsyms.Parse("System.map", strings.NewReader(text), kallsyms.Options{})
	for _, name := range []string{"_printk", "vfs_read", "call_rcu"} {
		_, gpl := ix.FindExport(name, true)
		_, other := ix.FindExport(name, false)
		fmt.Printf("%-8s GPL module: %-5v proprietary module: %v\n", name, gpl, other)
	}
	// Output:
	// _printk  GPL module: true  proprietary module: true
	// vfs_read GPL module: false proprietary module: false
	// call_rcu GPL module: true  proprietary module: false
}

// Reverse lookup, as an oops decoder does: the symbol containing each
// address, with the offset into it and its size up to the next symbol of
// its object ("?" past the object's last symbol, where kallsyms does not
// say where it ends); an address past the page of an object's last
// symbol is in no object.
func ExampleIndex_Addr() {
	text := `ffffffff81000100 T vfs_read
ffffffff81000300 T vfs_write
ffffffffc0001000 t helper	[xfs]
`
	ix, _ := kallsyms.Parse("kernel", strings.NewReader(text), kallsyms.Options{})
	for _, addr := range []uint64{0xffffffff81000105, 0xffffffffc0001010, 0xffffffffc0002000} {
		if a, ok := ix.Addr(addr); ok {
			fmt.Printf("%#x: %s\n", addr, a)
		} else {
			fmt.Printf("%#x: in no object (past %s's last symbol: %v)\n", addr, a.Object, a.Past)
		}
	}
	// Output:
	// 0xffffffff81000105: vfs_read+0x5/0x200
	// 0xffffffffc0001010: helper+0x10/? [xfs]
	// 0xffffffffc0002000: in no object (past xfs's last symbol: true)
}

// Sniff tells a symbol list from the other files of a folder by its first
// bytes, as check --kernels does.
func ExampleSniff() {
	for _, head := range []string{
		"ffffffff81000000 T _stext\nffffffff81000010 t foo\n",
		"ffffffffc0350000 t ext4_free_inode\t[ext4]\n",
		"# Kernels\n\nOne System.map per build.\n",
	} {
		fmt.Println(kallsyms.Sniff([]byte(head)))
	}
	// Output:
	// true
	// true
	// false
}

// A loop over many kernels' compact snapshots (a fleet check) opens each
// with one Arena: every index decodes into the memory the one before it
// gave back at Close.
func ExampleArena() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	var paths []string
	for k, addr := range []string{"ffffffff81000200", "ffffffff81400200"} {
		ix, _ := kallsyms.Parse("kernel", strings.NewReader(addr+" T vfs_read\n"), kallsyms.Options{})
		p := filepath.Join(dir, fmt.Sprintf("kernel-%d.snap", k))
		_ = ix.WriteSnapshotFile(p)
		paths = append(paths, p)
	}

	var arena kallsyms.Arena
	defer arena.Close()
	for _, p := range paths {
		ix, err := kallsyms.Open(p, kallsyms.Options{Arena: &arena})
		if err != nil {
			fmt.Println(err)
			return
		}
		s, _ := ix.Lookup("", "vfs_read", 0)
		fmt.Printf("%s: %#x\n", filepath.Base(p), s.Address)
		ix.Close() // gives the arena back for the next kernel
	}
	// Output:
	// kernel-0.snap: 0xffffffff81000200
	// kernel-1.snap: 0xffffffff81400200
}
