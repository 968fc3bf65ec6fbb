// SPDX-License-Identifier: GPL-2.0-only

package klp

import "strings"

// Prefixes and limits of livepatch names (include/linux/livepatch.h,
// kernel/livepatch/core.c).
const (
	SymPrefix     = ".klp.sym."
	RelaPrefix    = ".klp.rela."
	ModuleNameMax = 55  // %55[^.]: MODULE_NAME_LEN (56) - 1
	SymbolNameMax = 511 // %511[^,]: KSYM_NAME_LEN (512) - 1
)

// SymbolName is a parsed ".klp.sym.<object>.<name>,<pos>".
type SymbolName struct {
	Object string
	Name   string
	Pos    uint64
}

// scanSet is vsscanf's "%<width>[^<stop>]": at least one byte, at most
// width bytes, none of them stop or NUL. It returns the match and the rest.
func scanSet(s string, width int, stop byte) (string, string, bool) {
	i := 0
	for i < len(s) && i < width && s[i] != stop && s[i] != 0 {
		i++
	}
	if i == 0 {
		return "", s, false
	}
	return s[:i], s[i:], true
}

// isspace is the kernel's isspace(): space, \t, \n, \v, \f, \r.
func isspace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// ParseSymbolName parses a livepatch symbol name the way
// klp_resolve_symbols() does, with sscanf(name,
// ".klp.sym.%55[^.].%511[^,],%lu", ...) == 3. It returns how many fields
// the kernel's sscanf would have converted (3 means success).
//
// The kernel's vsscanf edge cases, reproduced (see the tests):
//   - the object stops at the first '.', so object names never hold one,
//     and one of 56 or more bytes leaves a non-'.' where the '.' literal
//     must match: 1 field;
//   - the name runs to the first ',' (names may hold dots, never commas);
//     512 bytes or more leave a non-',' where ',' must match: 2 fields;
//   - %lu skips leading white space, takes no sign ("-1" and "+1" fail),
//     needs a digit, then reads digits with no overflow check (the value
//     wraps modulo 2^64; to 32 bits on 32-bit kernels, see Wrap32), and
//     ignores whatever follows: ",1junk" is position 1.
func ParseSymbolName(s string) (SymbolName, int) {
	var out SymbolName
	rest, ok := strings.CutPrefix(s, SymPrefix)
	if !ok {
		return out, 0
	}
	var f string
	if f, rest, ok = scanSet(rest, ModuleNameMax, '.'); !ok {
		return out, 0
	}
	out.Object = f
	if rest, ok = strings.CutPrefix(rest, "."); !ok {
		return out, 1
	}
	if f, rest, ok = scanSet(rest, SymbolNameMax, ','); !ok {
		return out, 1
	}
	out.Name = f
	if rest, ok = strings.CutPrefix(rest, ","); !ok {
		return out, 2
	}
	if rest == "" {
		return out, 2
	}
	for rest != "" && isspace(rest[0]) {
		rest = rest[1:]
	}
	if rest == "" || rest[0] < '0' || rest[0] > '9' {
		return out, 2
	}
	var v uint64
	for rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		v = v*10 + uint64(rest[0]-'0') // simple_strntoull(): wraps, no error
		rest = rest[1:]
	}
	out.Pos = v
	return out, 3
}

// ParseSectionName parses a livepatch relocation section name the way
// klp_apply_section_relocs() does, with sscanf(name, ".klp.rela.%55[^.]")
// == 1. truncated reports an object name longer than 55 bytes: the kernel
// then silently keeps its first 55 bytes, which match no object, so the
// section is never applied.
func ParseSectionName(s string) (object string, ok, truncated bool) {
	rest, found := strings.CutPrefix(s, RelaPrefix)
	if !found {
		return "", false, false
	}
	obj, rest, found := scanSet(rest, ModuleNameMax, '.')
	if !found {
		return "", false, false
	}
	truncated = rest != "" && rest[0] != '.'
	return obj, true, truncated
}

// FormatSymbolName builds ".klp.sym.<object>.<name>,<pos>".
func FormatSymbolName(object, name string, pos uint64) string {
	return SymPrefix + object + "." + name + "," + uitoa(pos)
}

func uitoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
