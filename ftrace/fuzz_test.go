// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// fuzzIndex is a fixture kernel's symbols (System.map, arm64/System.map),
// for the fuzz targets.
func fuzzIndex(f *testing.F, smap string) *kallsyms.Index {
	data, err := os.ReadFile(fixture(smap))
	if err != nil {
		f.Fatal(err)
	}
	ix, err := kallsyms.ParseBytes(smap, data, kallsyms.Options{})
	if err != nil {
		f.Fatal(err)
	}
	return ix
}

// FuzzParseTracefs: any text is call sites or an error of this package's
// kinds; never a panic; never more sites than lines.
func FuzzParseTracefs(f *testing.F) {
	ix := fuzzIndex(f, "System.map")
	for _, name := range []string{"available_filter_functions", "available_filter_functions_addrs"} {
		data, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("vfs_read [xfs]\n__ftrace_invalid_address___64\n"))
	f.Add([]byte("ffffffff81000060 vfs_read\nzz\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseTracefs("f", bytes.NewReader(data), ix)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if s.Len() > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d sites from %d lines", s.Len(), bytes.Count(data, []byte("\n"))+1)
		}
		ix.Symbols(kallsyms.Vmlinux, func(sym kallsyms.Symbol) bool { s.Function(sym); return true })
	})
}

// FuzzImage: any bytes are a kernel image's call sites or an error of
// this package's kinds; never a panic. arm64 picks the symbols: the arm64
// kernel's, which find an Image's table (its seeds: the Image, cut and
// whole), or the x86 one's.
func FuzzImage(f *testing.F) {
	x86, a64 := fuzzIndex(f, "System.map"), fuzzIndex(f, "arm64/System.map")
	for _, seed := range []struct {
		file  string
		arm64 bool
	}{{"vmlinux", false}, {"arm64/vmlinux", true}, {"arm64/Image", true}} {
		img, err := os.ReadFile(fixture(seed.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(img, seed.arm64)
		f.Add(img[:64], seed.arm64)
	}
	f.Fuzz(func(t *testing.T, data []byte, arm64 bool) {
		ix := x86
		if arm64 {
			ix = a64
		}
		s, err := NewImage("vmlinux", bytes.NewReader(data), ix)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrNoTable) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if s.Len() > len(data)/4 {
			t.Fatalf("%d sites from %d bytes", s.Len(), len(data))
		}
	})
}
