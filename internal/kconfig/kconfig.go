// SPDX-License-Identifier: GPL-2.0-only

// Package kconfig reads a kernel's build configuration: the .config that
// distributions install as /boot/config-RELEASE (Fedora and RHEL also as
// /lib/modules/RELEASE/config), a kernel exposes as /proc/config.gz, and
// scripts/kconfig/confdata.c writes. Its lines are "CONFIG_NAME=value"
// (y, m, a number, or a quoted string), "# CONFIG_NAME is not set", other
// comments and blank lines.
package kconfig

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/input"
)

// Config is a parsed configuration. It is immutable and safe for
// concurrent use.
type Config struct {
	// Source names the file it was read from.
	Source string
	// Release is the kernel release its header names ("# Linux/x86
	// 6.12.117 Kernel Configuration", conf_write_heading()); "" if none.
	Release string
	values  map[string]string // by name, without "CONFIG_"; strings unquoted
}

// ErrMalformed is wrapped by every error about a line that does not
// parse (LineError).
var ErrMalformed = diag.ErrMalformedConfig

// LineError is a line that is none of the forms confdata.c writes.
type LineError struct {
	File string
	Line int
	Why  string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %s (want CONFIG_NAME=value, \"# CONFIG_NAME is not set\" or a comment)", e.File, e.Line, e.Why)
}

func (e *LineError) Unwrap() error { return ErrMalformed }

// maxSize bounds what Open and Parse read: Debian's amd64 6.1
// configuration is 260 KB.
const maxSize = 64 << 20

// Open reads the configuration at path (plain, or gzip/zstd/xz/bzip2
// compressed, as /proc/config.gz is; "-" is standard input).
func Open(path string) (*Config, error) {
	src, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return Parse(src.Name, src)
}

// Parse reads a configuration from r; name is used in errors.
func Parse(name string, r io.Reader) (*Config, error) {
	data, err := input.ReadAll(r, 0, maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Config{Source: name, values: map[string]string{}}
	for n, line := range input.Lines(data) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		name, value, set, why := parseLine(string(line))
		if why != "" {
			return nil, &LineError{File: c.Source, Line: n, Why: why}
		}
		switch {
		case name == "" && c.Release == "" && n <= headerLines:
			c.Release = headerRelease(string(line))
		case name == "":
		case set:
			c.values[name] = value
		default:
			delete(c.values, name) // "is not set", after all
		}
	}
	return c, nil
}

// parseLine reads one line: the option it sets (name, value, set), one it
// says is not set (name, !set), nothing (a comment or a blank line), or
// why it is none of those.
func parseLine(line string) (name, value string, set bool, why string) {
	if strings.TrimSpace(line) == "" {
		return "", "", false, ""
	}
	if rest, ok := strings.CutPrefix(line, "#"); ok {
		// conf_read_simple(): "# CONFIG_NAME is not set"; any other
		// comment is a comment.
		rest = strings.TrimPrefix(rest, " ")
		if n, ok := strings.CutSuffix(rest, " is not set"); ok {
			if n, ok := strings.CutPrefix(n, "CONFIG_"); ok && validName(n) {
				return n, "", false, ""
			}
		}
		return "", "", false, ""
	}
	rest, ok := strings.CutPrefix(line, "CONFIG_")
	if !ok {
		return "", "", false, "not an option: no CONFIG_ prefix"
	}
	name, value, ok = strings.Cut(rest, "=")
	if !ok {
		return "", "", false, "no '=' after the option's name"
	}
	if !validName(name) {
		return "", "", false, fmt.Sprintf("option name %q is not letters, digits and underscores", name)
	}
	if strings.HasPrefix(value, `"`) {
		s, ok := unquote(value)
		if !ok {
			return "", "", false, "a string value without its closing quote"
		}
		value = s
	}
	return name, value, true, ""
}

// unquote is a quoted value without its quotes and with confdata.c's
// escapes (\" and \\) undone.
func unquote(v string) (string, bool) {
	if len(v) < 2 || !strings.HasSuffix(v, `"`) {
		return "", false
	}
	var b strings.Builder
	in := v[1 : len(v)-1]
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c == '\\' && i+1 < len(in):
			i++
			b.WriteByte(in[i])
		case c == '"':
			return "", false // an unescaped quote before the end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Value is option name's value (name with or without "CONFIG_"): y or m
// for a bool or tristate, a string without its quotes; false when the
// configuration does not set it.
func (c *Config) Value(name string) (string, bool) {
	v, ok := c.values[strings.TrimPrefix(name, "CONFIG_")]
	return v, ok
}

// Enabled reports whether option name is y or m.
func (c *Config) Enabled(name string) bool {
	v, _ := c.Value(name)
	return v == "y" || v == "m"
}

// Len is the number of options the configuration sets.
func (c *Config) Len() int { return len(c.values) }

// headerLines: conf_write_heading() writes the release on the third line.
const headerLines = 8

// headerRelease reads the release of the header line "# Linux/ARCH
// RELEASE Kernel Configuration"; "" for any other line.
func headerRelease(line string) string {
	rest, ok := strings.CutPrefix(line, "# Linux/")
	if !ok {
		return ""
	}
	rest, ok = strings.CutSuffix(rest, " Kernel Configuration")
	if !ok {
		return ""
	}
	_, rel, ok := strings.Cut(rest, " ")
	if !ok || strings.ContainsAny(rel, " \t") {
		return ""
	}
	return rel
}
