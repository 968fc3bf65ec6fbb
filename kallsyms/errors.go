// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"errors"
	"fmt"
	"strings"

	"github.com/klpresolve/klpresolve/diag"
)

// Errors returned by this package. Lookup failures are *LookupError values
// that wrap one of ErrNotFound, ErrAmbiguous, ErrNoSuchPosition or
// ErrNoObject; parse failures are *ParseError values; a spec that does not
// parse is a *SpecError (ErrSpec).
var (
	// ErrNotFound: the name is not in the object (or its address is 0,
	// which the kernel cannot tell apart from absent).
	ErrNotFound = errors.New("symbol not found")
	// ErrAmbiguous: sympos 0 was given but the name occurs more than once.
	ErrAmbiguous = errors.New("ambiguous symbol")
	// ErrNoSuchPosition: sympos N was given but there are fewer than N.
	ErrNoSuchPosition = errors.New("no symbol at that position")
	// ErrNoObject: the object (module) is not in the index, or is one of
	// the pseudo-modules that livepatch never resolves against.
	ErrNoObject = errors.New("object not loaded")
	// ErrRestricted: every address in the input is zero, because
	// kptr_restrict hid them from the reader.
	ErrRestricted = errors.New("all symbol addresses are zero (kptr_restrict): read /proc/kallsyms as root, or run 'sysctl kernel.kptr_restrict=0'")
	// ErrPlaceholder: the input is the one-line System.map that Debian's
	// kernel image packages install in /boot ("ffffffffffffffff B The real
	// System.map is in the linux-image-<version>-dbg package"); the real
	// one is /usr/lib/debug/boot/System.map-RELEASE in that package.
	ErrPlaceholder = errors.New("a placeholder System.map, as Debian's linux-image packages install in /boot: the real one is /usr/lib/debug/boot/System.map-RELEASE, in the linux-image-RELEASE-dbg package; or read /proc/kallsyms on that kernel")
	// ErrMalformed: a line or a snapshot is not in the expected format.
	ErrMalformed = errors.New("malformed input")
	// ErrTooLarge: the input, decompressed, is larger than an index holds
	// (4 GiB: names are 32-bit offsets).
	ErrTooLarge = diag.ErrTooLarge
	// ErrCorrupt: a compressed input (gzip, zstd, xz, bzip2) whose data
	// does not decode: cut short (the decoder's io.ErrUnexpectedEOF is
	// wrapped too) or damaged.
	ErrCorrupt = diag.ErrCorrupt
	// ErrEmpty: the input holds no symbols.
	ErrEmpty = errors.New("no symbols in input")
	// ErrClosed: the Index was closed (Index.Close).
	ErrClosed = errors.New("index closed")
	// ErrSpec: a "[object:]name[,sympos]" spec does not parse
	// (ParseSpec; the error is a *SpecError).
	ErrSpec = errors.New("malformed symbol spec")
	// ErrSlide: Options.Slide or SlideTo cannot move the input's
	// addresses: a snapshot, or SlideTo for symbols without _text or
	// _stext, or both given.
	ErrSlide = errors.New("cannot slide the kernel's addresses")
	// ErrSnapshotExact: Options.LTO asked for a raw snapshot written
	// without LTO matching, whose stored tables file names exactly.
	ErrSnapshotExact = errors.New("raw snapshot written for exact matching: LTO matching needs it written again with LTO (klpresolve snapshot --lto --raw), or the text it came from")
)

// SpecError says what is wrong with a "[object:]name[,sympos]" spec. It
// matches ErrSpec with errors.Is.
type SpecError struct {
	Spec string // as given
	Msg  string // what is wrong
}

func (e *SpecError) Error() string { return fmt.Sprintf("spec %q: %s", e.Spec, e.Msg) }

// Is reports whether target is ErrSpec.
func (e *SpecError) Is(target error) bool { return target == ErrSpec }

// ParseError locates a malformed input line.
type ParseError struct {
	File string // input name
	Line int    // 1-based line number
	Msg  string // what is wrong
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Unwrap makes errors.Is(err, ErrMalformed) true.
func (e *ParseError) Unwrap() error { return ErrMalformed }

// LookupError is returned by Lookup. Its message starts with the kernel's
// own pr_err() text from klp_find_object_symbol() and adds what the kernel
// does not say: the candidates, the count, or the nearest names.
type LookupError struct {
	Object string // object as asked ("vmlinux" for vmlinux)
	Name   string
	Pos    uint64 // sympos as asked
	Count  int    // occurrences of Name in Object
	Kind   error  // ErrNotFound, ErrAmbiguous, ErrNoSuchPosition, ErrNoObject or ErrClosed
	// Candidates lists the occurrences, in sympos order (ambiguity or
	// bad position): the first MaxCandidates of them; Count has them all.
	Candidates []Symbol
	// Near lists similar names (not found): the name respelt (blanks,
	// case) anywhere, the same name in other objects, the kernel's
	// wrappers of it in the object (_printk for printk, __ext4_iget,
	// __x64_sys_read for sys_read), and .isra/.constprop/.part/.cold/.llvm
	// variants.
	Near []Symbol
	// Note is an extra explanation (a zero address, a pseudo-module).
	Note string
}

// Unwrap returns the sentinel kind.
func (e *LookupError) Unwrap() error { return e.Kind }

// KindName names Kind for programs (JSON "kind"): "not_found",
// "ambiguous", "no_such_position", "object_not_loaded" or
// "index_closed". The names do not change between releases.
func (e *LookupError) KindName() string {
	switch e.Kind {
	case ErrAmbiguous:
		return "ambiguous"
	case ErrNoSuchPosition:
		return "no_such_position"
	case ErrNoObject:
		return "object_not_loaded"
	case ErrClosed:
		return "index_closed"
	}
	return "not_found"
}

// KernelMessage is the line the kernel prints for this failure (without
// the "livepatch: " prefix). Linux 6.1 prints "(null)" as the object of an
// ambiguous vmlinux symbol, and so does this.
func (e *LookupError) KernelMessage() string {
	switch e.Kind {
	case ErrAmbiguous:
		obj := e.Object
		if obj == "vmlinux" {
			obj = "(null)"
		}
		return fmt.Sprintf("unresolvable ambiguity for symbol '%s' in object '%s'", e.Name, obj)
	case ErrNoSuchPosition:
		return fmt.Sprintf("symbol position %d for symbol '%s' in object '%s' not found", e.Pos, e.Name, e.Object)
	case ErrNoObject:
		return fmt.Sprintf("object '%s' is not loaded", e.Object)
	default:
		return fmt.Sprintf("symbol '%s' not found in symbol table", e.Name)
	}
}

// maxShown bounds the candidates listed in a message.
const maxShown = 8

// MaxCandidates bounds LookupError.Candidates: a name with millions of
// occurrences (a forged list) costs an error no more than this many.
const MaxCandidates = 64

// Help is the explanation that follows the kernel's message.
func (e *LookupError) Help() string { return e.HelpAt(nil) }

// HelpAt is Help with the candidates' addresses written by where (nil:
// in hex), for symbols whose addresses are better told another way (a
// module that is not loaded: section+offset).
func (e *LookupError) HelpAt(where func(addr uint64) string) string {
	if where == nil {
		where = func(a uint64) string { return fmt.Sprintf("%#x", a) }
	}
	var b strings.Builder
	switch e.Kind {
	case ErrAmbiguous:
		fmt.Fprintf(&b, "%d symbols named %q in %s; give a sympos:", e.Count, e.Name, e.Object)
		for i, c := range e.Candidates {
			if i == maxShown {
				fmt.Fprintf(&b, " ... %d more;", max(e.Count, len(e.Candidates))-i)
				break
			}
			fmt.Fprintf(&b, " [%d] %s %c;", c.Pos, where(c.Address), c.Type)
		}
		return strings.TrimSuffix(b.String(), ";")
	case ErrNoSuchPosition:
		if e.Count == 0 {
			return fmt.Sprintf("%s has no symbol named %q", e.Object, e.Name)
		}
		symbols := "symbols"
		if e.Count == 1 {
			symbols = "symbol"
		}
		fmt.Fprintf(&b, "%s has only %d %s named %q (valid sympos: 0 if unique, 1..%d)", e.Object, e.Count, symbols, e.Name, e.Count)
		return b.String()
	}
	if e.Note != "" {
		b.WriteString(e.Note)
	}
	if len(e.Near) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("nearest:")
		for _, n := range e.Near {
			fmt.Fprintf(&b, " %s:%s", n.Object, n.Name)
		}
	}
	return b.String()
}

func (e *LookupError) Error() string {
	h := e.Help()
	if h == "" {
		return e.KernelMessage()
	}
	return e.KernelMessage() + " (" + h + ")"
}
