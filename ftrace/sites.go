// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"errors"
	"fmt"
	"slices"

	"github.com/klpresolve/klpresolve/kallsyms"
)

var (
	// ErrMalformed: the input is not a kernel image or a tracefs list of
	// call sites, or says something impossible (a table past the end of
	// the file, a line of no known form).
	ErrMalformed = errors.New("malformed ftrace call-site input")
	// ErrNoTable: a kernel image without a call-site table where the
	// symbols say: no __start_mcount_loc and __stop_mcount_loc (a kernel
	// built without CONFIG_DYNAMIC_FTRACE, which livepatch depends on, or
	// symbols that list no data: give a System.map).
	ErrNoTable = errors.New("no ftrace call-site table")
	// ErrUnsupported: an input this package cannot read yet, such as a
	// compressed bzImage or an image whose table holds no addresses and
	// no relocations that give them.
	ErrUnsupported = errors.New("unsupported ftrace call-site input")
	// ErrMismatch: the call sites are not at the start of functions of
	// the kernel's symbols: another kernel's, or addresses from another
	// space (a running kernel's beside a System.map's link-time ones).
	ErrMismatch = errors.New("ftrace call sites do not match the kernel's symbols")
)

// Error is a problem with one input, located where that helps.
type Error struct {
	File string
	Line int // 1-based line of a text input, 0 for none
	Err  error
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v: %s", e.File, e.Line, e.Err, e.Msg)
	}
	return fmt.Sprintf("%s: %v: %s", e.File, e.Err, e.Msg)
}

// Unwrap makes errors.Is(err, ErrMalformed) (etc.) true.
func (e *Error) Unwrap() error { return e.Err }

// Verdict is what the call sites say of a function.
type Verdict int

const (
	// Unknown: the sites cannot tell (a names-only list where only some
	// of the object's functions of that name have a site; no known end
	// of the function).
	Unknown Verdict = iota
	// Traceable: ftrace_location() finds a call site for it.
	Traceable
	// NotTraceable: it has none, and klp_patch_func() fails.
	NotTraceable
)

func (v Verdict) String() string {
	return [...]string{"unknown", "traceable", "not traceable"}[v]
}

// Sites are a kernel's ftrace call sites, read against its symbols. They
// are immutable and safe for concurrent use.
type Sites struct {
	source string
	ix     *kallsyms.Index
	// addrs are the call sites' addresses, sorted, in ix's address
	// space; nil for a names-only list.
	addrs []uint64
	// names, for a names-only list (available_filter_functions): the
	// lines naming each function.
	names map[funcKey]int
	// slide is what was added to an image's link-time addresses.
	slide uint64
	// objects are the objects the sites speak for: vmlinux alone for an
	// image; for a tracefs list, those it has a line of (a module loaded
	// after the list was made is not judged by it).
	objects map[string]bool
}

type funcKey struct{ object, name string }

// Source names the input the sites were read from.
func (s *Sites) Source() string { return s.source }

// Covers reports whether the sites speak for object's functions: an
// image's for vmlinux's only, a tracefs list's for the objects it lists.
func (s *Sites) Covers(object string) bool { return s.objects[object] }

// Len is the number of call sites.
func (s *Sites) Len() int {
	if s.names != nil {
		n := 0
		for _, c := range s.names {
			n += c
		}
		return n
	}
	return len(s.addrs)
}

// Addresses reports whether the sites have addresses (an image,
// available_filter_functions_addrs) rather than names only.
func (s *Sites) Addresses() bool { return s.names == nil }

// Slide is the offset added to an image's link-time addresses to put
// them in the symbols' space: the running kernel's KASLR offset, 0
// against a System.map.
func (s *Sites) Slide() uint64 { return s.slide }

// Function is what the sites say of the function at sym, one of the
// kernel's symbols they were read against: ftrace_location() of its
// address finds a site at it or before the next symbol
// (kallsyms_lookup_size_offset()'s size).
func (s *Sites) Function(sym kallsyms.Symbol) Verdict {
	if !s.objects[sym.Object] {
		return Unknown
	}
	if s.names != nil {
		n := s.names[funcKey{sym.Object, sym.Name}]
		switch {
		case n == 0:
			return NotTraceable
		case n >= len(s.ix.Candidates(sym.Object, sym.Name)):
			return Traceable
		}
		return Unknown
	}
	if s.hasSite(sym.Address, sym.Address+1) {
		return Traceable
	}
	info, ok := s.ix.Addr(sym.Address)
	if !ok || info.Size == 0 {
		return Unknown
	}
	if s.hasSite(sym.Address, sym.Address+info.Size) {
		return Traceable
	}
	return NotTraceable
}

// hasSite reports whether a site lies in [lo, hi).
func (s *Sites) hasSite(lo, hi uint64) bool {
	i, _ := slices.BinarySearch(s.addrs, lo)
	return i < len(s.addrs) && s.addrs[i] < hi
}

// maxEntryOffset bounds where in a function its call site may be: at its
// start on x86 (after an ENDBR), after arm64's BTI or powerpc's global
// entry (two instructions) and -mprofile-kernel's mflr.
const maxEntryOffset = 32

// sampleSize is how many call sites are checked against the symbols.
const sampleSize = 256

// check samples the sites: each must be in a text symbol of ix, near its
// start (and, where the input names it, be that symbol). Fewer than three
// in four is ErrMismatch: the input is another kernel's.
func check(source string, ix *kallsyms.Index, n int, site func(i int) (addr uint64, object, name string)) error {
	if n == 0 {
		return &Error{File: source, Err: ErrMalformed, Msg: "no call sites"}
	}
	step := max(1, n/sampleSize)
	tried, good := 0, 0
	var bad string
	for i := 0; i < n; i += step {
		addr, object, name := site(i)
		tried++
		info, ok := ix.Addr(addr)
		switch {
		case !ok:
			if bad == "" {
				bad = fmt.Sprintf("%#x is in none of its objects", addr)
			}
		case info.Offset > maxEntryOffset && name == "":
			if bad == "" {
				bad = fmt.Sprintf("%#x is %s, not near a function's start", addr, info)
			}
		case name != "" && !invalidName(name) && !named(ix, info, object, name):
			if bad == "" {
				bad = fmt.Sprintf("%#x, %s here, is %s there", addr, nameIn(object, name), info)
			}
		default:
			good++
		}
	}
	if good*4 < tried*3 {
		return &Error{File: source, Err: ErrMismatch, Msg: fmt.Sprintf("%d of %d call sites sampled are not at the start of functions of %s (e.g. %s): another kernel's, or a running kernel's addresses against a System.map's", tried-good, tried, ix.Source(), bad)}
	}
	return nil
}

// named reports whether the symbol of a reverse lookup is object's name,
// or has it as an alias: print_rec() names the first of the symbols at an
// address (get_symbol_pos()), which Index.Addr need not.
func named(ix *kallsyms.Index, info kallsyms.AddrInfo, object, name string) bool {
	if info.Object != object {
		return false
	}
	if info.Name == name {
		return true
	}
	for _, c := range ix.Candidates(object, name) {
		if c.Address == info.Address {
			return true
		}
	}
	return false
}

func nameIn(object, name string) string {
	if object == kallsyms.Vmlinux {
		return name
	}
	return name + " [" + object + "]"
}
