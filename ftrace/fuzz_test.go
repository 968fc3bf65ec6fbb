package ftrace

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// fuzzIndex is the fixture kernel's symbols, for the fuzz targets.
func fuzzIndex(f *testing.F) *kallsyms.Index {
	data, err := os.ReadFile(fixture("System.map"))
	if err != nil {
		f.Fatal(err)
	}
	ix, err := kallsyms.ParseBytes("System.map", data, nil)
	if err != nil {
		f.Fatal(err)
	}
	return ix
}

// FuzzParseTracefs: any text is call sites or an error of this package's
// kinds; never a panic; never more sites than lines.
func FuzzParseTracefs(f *testing.F) {
	ix := fuzzIndex(f)
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
		s, err := ParseTracefs(bytes.NewReader(data), "f", ix)
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
// this package's kinds; never a panic.
func FuzzImage(f *testing.F) {
	ix := fuzzIndex(f)
	img, err := os.ReadFile(fixture("vmlinux"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(img)
	f.Add(img[:64])
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := NewImage(bytes.NewReader(data), "vmlinux", ix)
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
