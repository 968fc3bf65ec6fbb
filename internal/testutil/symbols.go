// SPDX-License-Identifier: GPL-2.0-only

package testutil

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// SymbolLine is one line of a kallsyms or System.map file.
type SymbolLine struct {
	Addr   uint64
	Type   string
	Name   string
	Object string // "vmlinux", or the module in the line's brackets
}

// ReadSymbolLines is the tests' own reading of a kallsyms or System.map
// file, independent of package kallsyms: every non-blank line, in file
// order. A line it cannot read fails tb.
func ReadSymbolLines(tb testing.TB, path string) []SymbolLine {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []SymbolLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 3 {
			tb.Fatalf("%s: %q: not a symbol line", path, sc.Text())
		}
		a, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			tb.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		obj := "vmlinux"
		if len(fields) == 4 {
			obj = strings.Trim(fields[3], "[]")
		}
		out = append(out, SymbolLine{a, fields[1], fields[2], obj})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Nth returns the address of the pos-th (1-based) of lines that name
// name in object, as sympos counts, and whether there is one.
func Nth(lines []SymbolLine, object, name string, pos int) (uint64, bool) {
	n := 0
	for _, l := range lines {
		if l.Object == object && l.Name == name {
			if n++; n == pos {
				return l.Addr, true
			}
		}
	}
	return 0, false
}
