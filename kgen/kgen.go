// SPDX-License-Identifier: GPL-2.0-only

// Package kgen names the kernel generations whose rules klpresolve
// mirrors, and tells which one a kernel is from what it shows: its
// release, its configuration's header, or its symbols.
//
// A generation is a family of releases whose module loader, livepatch,
// kallsyms and module PLT rules klpresolve applies alike. Three are known,
// each read in a Debian kernel tree:
//
//	generation  read in                judges releases   what begins it
//	6.1         linux-source-6.1       up to 6.3         (the oldest known)
//	6.12        linux-source-6.12      6.4 to 6.14       per-type module memory (6.4), execmem (6.10)
//	7.2         linux-source-7.2       6.15 and later    PC-relative kallsyms, ROX module text
//
// A release of a known generation's own X.Y is judged exactly. Any other
// is judged by the rules of the generation whose span holds it, and a
// note says so (the spans' edges are the releases where the rules
// changed, as far as the kernels' histories tell).
package kgen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Generation is a kernel generation. The zero value is Unknown.
type Generation int

// The known generations, oldest first.
const (
	Unknown Generation = iota
	Linux6_1
	Linux6_12
	Linux7_2
)

// Known lists the known generations, oldest first.
func Known() []Generation { return []Generation{Linux6_1, Linux6_12, Linux7_2} }

// Default is the generation assumed when nothing tells: the one
// klpresolve's rules were first written for.
const Default = Linux6_1

// String is the generation's name: "6.1", "6.12", "7.2" ("unknown").
func (g Generation) String() string {
	switch g {
	case Linux6_1:
		return "6.1"
	case Linux6_12:
		return "6.12"
	case Linux7_2:
		return "7.2"
	}
	return "unknown"
}

// release is the generation's own X.Y.
func (g Generation) release() Release {
	switch g {
	case Linux6_1:
		return Release{Major: 6, Minor: 1}
	case Linux6_12:
		return Release{Major: 6, Minor: 12}
	case Linux7_2:
		return Release{Major: 7, Minor: 2}
	}
	return Release{}
}

// ErrUnknown: a generation klpresolve does not know was asked for.
var ErrUnknown = errors.New("unknown kernel generation")

// Parse reads a generation's name ("6.1", "6.12", "7.2"), or a release
// of one ("6.12.117+deb13-amd64" is 6.12). Anything else is an error
// wrapping ErrUnknown that names the known generations.
func Parse(s string) (Generation, error) {
	r, err := ParseRelease(s)
	if err == nil {
		for _, g := range Known() {
			if gr := g.release(); gr.Major == r.Major && gr.Minor == r.Minor {
				return g, nil
			}
		}
	}
	return Unknown, fmt.Errorf("%w %q: klpresolve knows %s", ErrUnknown, s, knownList())
}

func knownList() string {
	var names []string
	for _, g := range Known() {
		names = append(names, g.String())
	}
	return strings.Join(names, ", ")
}

// Release is a kernel release's version: "6.12.117+deb13-amd64" is 6, 12,
// 117.
type Release struct {
	Major, Minor, Patch int
}

func (r Release) String() string {
	if r.Patch == 0 {
		return fmt.Sprintf("%d.%d", r.Major, r.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", r.Major, r.Minor, r.Patch)
}

// less: r comes before o.
func (r Release) less(o Release) bool {
	if r.Major != o.Major {
		return r.Major < o.Major
	}
	if r.Minor != o.Minor {
		return r.Minor < o.Minor
	}
	return r.Patch < o.Patch
}

// ParseRelease reads the version at the start of a kernel release
// (uname -r): "X.Y", then ".Z" and anything after (a local version,
// "-rc1", "+deb13-amd64") optionally.
func ParseRelease(s string) (Release, error) {
	var r Release
	nums := make([]int, 0, 3)
	rest := s
	for len(nums) < 3 {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 4 {
			break
		}
		n, _ := strconv.Atoi(rest[:i])
		nums = append(nums, n)
		rest = rest[i:]
		if len(rest) == 0 || rest[0] != '.' {
			break
		}
		rest = rest[1:]
	}
	if len(nums) < 2 {
		return r, fmt.Errorf("%q is not a kernel release (X.Y or X.Y.Z, as uname -r prints it)", s)
	}
	r.Major, r.Minor = nums[0], nums[1]
	if len(nums) == 3 {
		r.Patch = nums[2]
	}
	return r, nil
}

// The first releases whose rules are the next generation's.
var (
	from6_12 = Release{Major: 6, Minor: 4}  // mod->mem[] per-type module memory
	from7_2  = Release{Major: 6, Minor: 15} // PC-relative kallsyms_offsets, ROX module text
)

// ForRelease is the generation whose rules judge r, and whether r is of
// that generation's own X.Y.
func ForRelease(r Release) (g Generation, exact bool) {
	switch {
	case r.less(from6_12):
		g = Linux6_1
	case r.less(from7_2):
		g = Linux6_12
	default:
		g = Linux7_2
	}
	gr := g.release()
	return g, gr.Major == r.Major && gr.Minor == r.Minor
}

// Source is what told a kernel's generation.
type Source string

// The sources, most certain first.
const (
	FromFlag     Source = "--kernel-version"
	FromImage    Source = "the kernel image's banner"
	FromRelease  Source = "the kernel's release"
	FromConfig   Source = "the kernel configuration's header"
	FromKallsyms Source = "the kernel's symbols"
	Assumed      Source = "nothing (assumed)"
)

// Evidence is a kernel's generation and how it was told.
type Evidence struct {
	Generation Generation
	// Release is the kernel's release where known ("6.12.117+deb13-amd64").
	Release string
	Source  Source
	// Detail says what of the source told it: a file, or the symbols
	// that decided.
	Detail string
	// Exact: the kernel is of the generation's own X.Y (or the
	// generation was asked for by name).
	Exact bool
}

// ForReleaseString is the evidence of a release string told by source.
func ForReleaseString(release string, source Source, detail string) (Evidence, error) {
	r, err := ParseRelease(release)
	if err != nil {
		return Evidence{}, err
	}
	g, exact := ForRelease(r)
	return Evidence{Generation: g, Release: release, Source: source, Detail: detail, Exact: exact}, nil
}

// Note says, when the rules applied are not the kernel's own
// generation's, what was applied instead; "" when they are.
func (e Evidence) Note() string {
	switch {
	case e.Source == Assumed:
		return fmt.Sprintf("nothing tells the kernel's generation (--kernel-version, a kernel image, --root, its configuration or its symbols): Linux %s's rules are applied", e.Generation)
	case !e.Exact && e.Release != "":
		r, _ := ParseRelease(e.Release)
		return fmt.Sprintf("Linux %s is not a generation klpresolve knows exactly (%s): it is judged by Linux %s's rules, which span it", r, knownList(), e.Generation)
	}
	return "" // (told from its symbols: their generation's rules)
}

// String says which rules and why: "Linux 6.12 (6.12.117+deb13-amd64,
// from the kernel image's banner)".
func (e Evidence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Linux %s", e.Generation)
	var why []string
	if e.Release != "" {
		why = append(why, e.Release)
	}
	from := "from " + string(e.Source)
	if e.Source == Assumed {
		from = "assumed: nothing tells"
	}
	if e.Detail != "" {
		from += ": " + e.Detail
	}
	why = append(why, from)
	fmt.Fprintf(&b, " (%s)", strings.Join(why, ", "))
	return b.String()
}

// Symbol tests: code symbols that one generation's kernels define and
// another's do not (so a kallsyms without CONFIG_KALLSYMS_ALL shows them
// too), checked in Debian's 6.1, 6.12 and 7.2 amd64 and arm64 kernels.
var symbolTests = []struct {
	name string
	gen  Generation
	why  string
}{
	// execmem's RW allocation with ROX restore (mm/execmem.c).
	{"execmem_alloc_rw", Linux7_2, "execmem_alloc_rw()"},
	// execmem (6.10) and per-type module memory (6.4).
	{"execmem_alloc", Linux6_12, "execmem_alloc()"},
	{"module_enable_text_rox", Linux6_12, "module_enable_text_rox()"},
	// 6.1's strict_rwx.c and module_alloc().
	{"module_enable_x", Linux6_1, "module_enable_x()"},
	{"module_check_misalignment", Linux6_1, "module_check_misalignment()"},
}

// FromSymbols tells the generation from the kernel's symbols: has reports
// whether vmlinux defines a name. The newest generation whose telling
// symbol is there wins; false when none is.
func FromSymbols(has func(name string) bool) (Evidence, bool) {
	for _, t := range symbolTests {
		if has(t.name) {
			return Evidence{Generation: t.gen, Source: FromKallsyms, Detail: t.why + " among them"}, true
		}
	}
	return Evidence{}, false
}

// Assume is the evidence when nothing tells: Default's rules.
func Assume() Evidence { return Evidence{Generation: Default, Source: Assumed} }

// Name is "Linux 6.12" for the generation, or the release where it is
// not the generation's own ("Linux 6.6").
func (e Evidence) Name() string {
	if r, err := ParseRelease(e.Release); err == nil && !e.Exact {
		return "Linux " + Release{Major: r.Major, Minor: r.Minor}.String()
	}
	return "Linux " + e.Generation.String()
}

// CFIShadow: the kernel may keep a CFI shadow (kernel/cfi.c's
// cfi_shadow, with CONFIG_CFI_CLANG_SHADOW): its release is 5.13 to 6.0.
// 6.1 replaced it with kCFI, which needs none.
func (e Evidence) CFIShadow() bool {
	r, err := ParseRelease(e.Release)
	return err == nil && !r.less(Release{Major: 5, Minor: 13}) && r.less(Release{Major: 6, Minor: 1})
}
