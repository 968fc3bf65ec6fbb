// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// invalidPrefix begins print_rec()'s name for a disabled record (a weak
// function's leftover call site): FTRACE_INVALID_FUNCTION.
const invalidPrefix = "__ftrace_invalid_address__"

func invalidName(name string) bool { return strings.HasPrefix(name, invalidPrefix) }

// maxText bounds a tracefs list read: a kernel with every module loaded
// lists well under a million functions, 60 bytes a line.
const maxText = 256 << 20

// ParseTracefs reads a copy of tracefs's available_filter_functions_addrs
// (Linux 6.5 and later: "ffffffff81001c10 name", "... name [module]") or
// available_filter_functions ("name", "name [module]"), made on the kernel
// whose symbols ix holds. Addresses must be in ix's address space (the
// running kernel's /proc/kallsyms): a sample of them must name the
// function ix has there (else ErrMismatch). A names-only list can say that
// a function has no call site, but not which of several functions of one
// name has one.
func ParseTracefs(name string, r io.Reader, ix *kallsyms.Index) (*Sites, error) {
	data, err := input.ReadAll(r, 0, maxText)
	if err != nil {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: err.Error()}
	}
	return parseTracefs(data, name, ix)
}

// tracefsLine is one line: an address (with addrs), a name, a module.
type tracefsLine struct {
	addr         uint64
	name, object string
}

func parseTracefs(data []byte, name string, ix *kallsyms.Index) (*Sites, error) {
	var lines []tracefsLine
	withAddrs := false
	for n, line := range input.Lines(data) {
		l, hasAddr, err := parseTracefsLine(strings.TrimRight(string(line), " \t\r"))
		if err != "" {
			return nil, &Error{File: name, Line: n, Err: ErrMalformed, Msg: err}
		}
		if n == 1 {
			withAddrs = hasAddr
		} else if hasAddr != withAddrs {
			return nil, &Error{File: name, Line: n, Err: ErrMalformed, Msg: "lines with and without addresses: one file is available_filter_functions_addrs or available_filter_functions, not both"}
		}
		lines = append(lines, l)
	}
	s := &Sites{source: name, ix: ix, objects: map[string]bool{}}
	for _, l := range lines {
		s.objects[l.object] = true
	}
	if !withAddrs {
		if err := checkNames(name, ix, lines); err != nil {
			return nil, err
		}
		s.names = make(map[funcKey]int, len(lines))
		for _, l := range lines {
			if !invalidName(l.name) {
				s.names[funcKey{l.object, l.name}]++
			}
		}
		return s, nil
	}
	err := check(name, ix, len(lines), func(i int) (uint64, string, string) {
		return lines[i].addr, lines[i].object, lines[i].name
	})
	if err != nil {
		return nil, err
	}
	s.addrs = make([]uint64, len(lines))
	for i, l := range lines {
		s.addrs[i] = l.addr
	}
	slices.Sort(s.addrs)
	return s, nil
}

// checkNames samples a names-only list: three in four of its names must
// be functions of ix's objects.
func checkNames(name string, ix *kallsyms.Index, lines []tracefsLine) error {
	if len(lines) == 0 {
		return &Error{File: name, Err: ErrMalformed, Msg: "no call sites"}
	}
	step := max(1, len(lines)/sampleSize)
	tried, good := 0, 0
	var bad string
	for i := 0; i < len(lines); i += step {
		l := lines[i]
		tried++
		if invalidName(l.name) || len(ix.Candidates(l.object, l.name)) > 0 {
			good++
		} else if bad == "" {
			bad = nameIn(l.object, l.name)
		}
	}
	if good*4 < tried*3 {
		return &Error{File: name, Err: ErrMismatch, Msg: fmt.Sprintf("%d of %d functions sampled are not in %s (e.g. %s): another kernel's list", tried-good, tried, ix.Source(), bad)}
	}
	return nil
}

// parseTracefsLine reads "[addr ]name[ [module]]".
func parseTracefsLine(line string) (l tracefsLine, hasAddr bool, err string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return l, false, "an empty line"
	}
	if len(f) >= 2 && !strings.HasPrefix(f[1], "[") {
		a, perr := strconv.ParseUint(f[0], 16, 64)
		if perr != nil {
			return l, false, fmt.Sprintf("%q is not an address", f[0])
		}
		l.addr, hasAddr, f = a, true, f[1:]
	}
	l.name, l.object = f[0], kallsyms.Vmlinux
	switch {
	case len(f) > 2:
		return l, hasAddr, fmt.Sprintf("%q: want [address ]name[ [module]]", line)
	case len(f) == 2:
		m := f[1]
		if len(m) < 3 || m[0] != '[' || m[len(m)-1] != ']' {
			return l, hasAddr, fmt.Sprintf("%q: a module is [name]", m)
		}
		l.object = m[1 : len(m)-1]
	}
	if len(l.name) >= kallsyms.KSYMNameLen {
		return l, hasAddr, fmt.Sprintf("a name of %d bytes (KSYM_NAME_LEN is %d)", len(l.name), kallsyms.KSYMNameLen)
	}
	return l, hasAddr, ""
}
