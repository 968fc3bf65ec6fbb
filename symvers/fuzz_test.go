// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/klpresolve/klpresolve/kgen"
)

// FuzzParse: any text either parses, every line accounted for, or fails
// with a LineError naming a line that exists.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("0x00000000\tx\tvmlinux\tEXPORT_SYMBOL\t\n"))
	f.Add([]byte("0x1\tseq_printf\tvmlinux\tEXPORT_SYMBOL_GPL\tNS\r\n\n\n"))
	f.Add([]byte("0x1\tseq_printf\tvmlinux\tEXPORT_SYMBOL\n"))
	f.Add([]byte("\t\t\t\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := Parse("fuzz", strings.NewReader(string(data)))
		lines := strings.Count(string(data), "\n") + 1
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of no kind: %v", err)
			}
			if le.Line < 1 || le.Line > lines {
				t.Fatalf("line %d of %d", le.Line, lines)
			}
			return
		}
		if tb.Len() > lines {
			t.Fatalf("%d exports from %d lines", tb.Len(), lines)
		}
		for name, e := range tb.exports {
			if name == "" || e.Module == "" || name != e.Name {
				t.Fatalf("export %q: %+v", name, e)
			}
		}
	})
}

// FuzzParseVersions: any bytes give whole entries with names that have
// no NUL, or ErrBadVersions, as __versions and as extended versions;
// Check never fails on what they give.
func FuzzParseVersions(f *testing.F) {
	f.Add(versionsSection(binary.LittleEndian, true, Version{"module_layout", 0x9060323f}, Version{"seq_printf", 1}), true)
	f.Add(versionsSection(binary.BigEndian, false, Version{"module_layout", 0x9060323f}), false)
	f.Add(make([]byte, 63), true)
	f.Fuzz(func(t *testing.T, data []byte, is64 bool) {
		// The same bytes as 7.2's extended versions: CRCs in the first
		// half, names in the second.
		if ext, err := ParseExtVersions(data[:len(data)/2], data[len(data)/2:], binary.LittleEndian); err != nil {
			if !errors.Is(err, ErrBadVersions) {
				t.Fatalf("extended: error of no kind: %v", err)
			}
		} else if len(ext) != len(data)/2/4 {
			t.Fatalf("extended: %d entries from %d bytes of CRCs", len(ext), len(data)/2)
		}
		vs, err := ParseVersions(data, binary.LittleEndian, is64)
		if err != nil {
			if !errors.Is(err, ErrBadVersions) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if len(vs) != len(data)/VersionSize {
			t.Fatalf("%d entries from %d bytes", len(vs), len(data))
		}
		for _, v := range vs {
			if strings.IndexByte(v.Name, 0) >= 0 || !is64 && v.CRC > 0xffffffff {
				t.Fatalf("entry %+v", v)
			}
		}
		tb, err := Parse("Module.symvers", strings.NewReader(sample))
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"module_layout", "seq_printf"}
		for _, v := range vs {
			names = append(names, v.Name)
		}
		r := tb.Check(Module{Name: "m", Versions: vs, HasVersions: true, Undefined: names}, kgen.Linux6_1)
		if r.Checked < len(r.Problems) {
			t.Fatalf("%d checked, %d problems", r.Checked, len(r.Problems))
		}
	})
}
