// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/klpresolve/klpresolve/internal/input"
)

// Vmlinux is the module name Module.symvers gives the kernel image's
// exports.
const Vmlinux = "vmlinux"

// Export is one line of Module.symvers.
type Export struct {
	Name string
	CRC  uint32
	// Module is "vmlinux" or the exporting module's path in the build
	// without .ko ("fs/xfs/xfs").
	Module string
	// GPLOnly: EXPORT_SYMBOL_GPL.
	GPLOnly bool
	// Namespace is the symbol namespace it is exported into, or "".
	Namespace string
}

// Table is a parsed Module.symvers. It is immutable and safe for
// concurrent use.
type Table struct {
	// Source names the file it was read from.
	Source  string
	exports map[string]Export
	crcs    bool
}

// ErrMalformed is wrapped by every error about a Module.symvers line
// that does not parse (see LineError).
var ErrMalformed = errors.New("malformed Module.symvers")

// LineError is a Module.symvers line that read_dump() would not take.
type LineError struct {
	File string
	Line int
	Why  string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %s (want CRC<TAB>name<TAB>module<TAB>EXPORT_SYMBOL[_GPL]<TAB>namespace)", e.File, e.Line, e.Why)
}

func (e *LineError) Unwrap() error { return ErrMalformed }

// maxSize bounds what Open and Parse read: Debian's amd64 6.1 file is
// 1.2 MB (24,683 exports).
const maxSize = 256 << 20

// Open reads the Module.symvers at path (plain, or gzip/zstd/xz/bzip2
// compressed; "-" is standard input).
func Open(path string) (*Table, error) {
	src, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return Parse(src.Name, src)
}

// Parse reads a Module.symvers from r; name is used in errors.
func Parse(name string, r io.Reader) (*Table, error) {
	data, err := input.ReadAll(r, 0, maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return parse(name, data)
}

func parse(name string, data []byte) (*Table, error) {
	// Presized for its lines, up to a bound: a file of blank lines must
	// not make a table for millions.
	t := &Table{Source: name, exports: make(map[string]Export, min(bytes.Count(data, []byte{'\n'})+1, 1<<16))}
	for n, line := range input.Lines(data) {
		if len(line) == 0 {
			continue // get_line() skips empty lines
		}
		e, why := parseLine(line)
		if why != "" {
			return nil, &LineError{File: name, Line: n, Why: why}
		}
		if e.CRC != 0 {
			t.crcs = true
		}
		// A name listed twice: modpost's sym_add_exported() keeps the
		// first and warns; so does the table.
		if _, dup := t.exports[e.Name]; !dup {
			t.exports[e.Name] = e
		}
	}
	return t, nil
}

// parseLine reads one line as read_dump() does: four tabs, a CRC in hex
// that is the whole first field, a name and a module that are not empty,
// and an export type of the two it knows.
func parseLine(line []byte) (Export, string) {
	var f [5][]byte
	rest := line
	for i := range 4 {
		j := bytes.IndexByte(rest, '\t')
		if j < 0 {
			return Export{}, fmt.Sprintf("%d fields, not 5", i+1)
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	f[4] = bytes.TrimSuffix(rest, []byte{'\r'})
	crc, err := strconv.ParseUint(string(bytes.TrimPrefix(bytes.TrimPrefix(f[0], []byte("0x")), []byte("0X"))), 16, 32)
	if err != nil || len(f[0]) == 0 {
		return Export{}, fmt.Sprintf("CRC %q is not a 32-bit hex number", f[0])
	}
	if len(f[1]) == 0 || len(f[2]) == 0 {
		return Export{}, "empty symbol or module name"
	}
	e := Export{Name: string(f[1]), CRC: uint32(crc), Module: string(f[2]), Namespace: string(f[4])}
	switch string(f[3]) {
	case "EXPORT_SYMBOL":
	case "EXPORT_SYMBOL_GPL":
		e.GPLOnly = true
	default:
		return Export{}, fmt.Sprintf("unknown export type %q", f[3])
	}
	return e, ""
}

// Lookup returns the export called name.
func (t *Table) Lookup(name string) (Export, bool) {
	e, ok := t.exports[name]
	return e, ok
}

// Len is the number of exports.
func (t *Table) Len() int { return len(t.exports) }

// HasCRCs reports whether the exports carry CRCs: a kernel built without
// CONFIG_MODVERSIONS dumps every CRC as 0, and its loader checks no
// version.
func (t *Table) HasCRCs() bool { return t.crcs }

// Version is one entry of a module's __versions section.
type Version struct {
	Name string
	// CRC is the entry's unsigned long: check_version() compares it
	// with the kernel's 32-bit CRC, so upper bits set never match.
	CRC uint64
}

// VersionSize is sizeof(struct modversion_info) on every architecture:
// an unsigned long and MODULE_NAME_LEN = 64 - sizeof(unsigned long)
// bytes of name.
const VersionSize = 64

// ErrBadVersions is wrapped by ParseVersions' errors.
var ErrBadVersions = errors.New("malformed __versions section")

// ParseVersions reads the entries of a __versions section: data is the
// section's bytes, order and is64 the module's byte order and class.
// check_version() counts sh_size / 64 entries and compares names with
// strcmp(), so a trailing partial entry is ignored and a name runs to its
// first NUL; one without a NUL within its 56 (or 60) bytes is an error
// here (the kernel would read past it).
func ParseVersions(data []byte, order binary.ByteOrder, is64 bool) ([]Version, error) {
	word := 4
	if is64 {
		word = 8
	}
	out := make([]Version, 0, len(data)/VersionSize)
	for i := 0; i+VersionSize <= len(data); i += VersionSize {
		e := data[i : i+VersionSize]
		var crc uint64
		if is64 {
			crc = order.Uint64(e)
		} else {
			crc = uint64(order.Uint32(e))
		}
		name := e[word:]
		end := bytes.IndexByte(name, 0)
		if end < 0 {
			return nil, fmt.Errorf("%w: entry %d's name has no NUL in its %d bytes", ErrBadVersions, i/VersionSize, len(name))
		}
		out = append(out, Version{Name: string(name[:end]), CRC: crc})
	}
	return out, nil
}

// ParseExtVersions reads a 7.2 module's extended versions: crcs is its
// __version_ext_crcs section (32-bit CRCs in the module's byte order),
// names its __version_ext_names (one NUL-terminated name after another,
// one for each CRC; names of any length, which __versions cannot hold).
// A CRC without a name is an error wrapping ErrBadVersions, as
// elf_validity_cache_index_versions() refuses it ("more extended version
// crcs than names").
func ParseExtVersions(crcs, names []byte, order binary.ByteOrder) ([]Version, error) {
	n := len(crcs) / 4
	out := make([]Version, 0, min(n, len(names)))
	for i := range n {
		end := bytes.IndexByte(names, 0)
		if end < 0 {
			return nil, fmt.Errorf("%w: more extended version crcs than names (%d CRCs, names for %d)", ErrBadVersions, n, i)
		}
		out = append(out, Version{Name: string(names[:end]), CRC: uint64(order.Uint32(crcs[4*i:]))})
		names = names[end+1:]
	}
	return out, nil
}
