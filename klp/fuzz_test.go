// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klpresolve/klpresolve/kallsyms"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(fixture("*.ko"))
	files = append(files, fixture("patch.o"), fixture("modules/xfs.ko"), fixture("modules/nfs.ko"))
	inter, _ := filepath.Glob("../testdata/buildtools/kpatch-build/*.output.o")
	files = append(files, inter...)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("module %v with error %v", m, err)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the input: %v", err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNotRelocatable) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error of no documented kind (%T): %v", err, err)
			}
			return
		}
		_ = m.NumRelocs()
		for _, s := range m.Sections {
			for _, r := range s.Relocs {
				_ = r.TypeName()
			}
		}
		// Nor reading it as a target: what it lists is what it has.
		for _, all := range []bool{true, false} {
			tg, err := NewTarget(m, all)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz") || !errors.Is(err, ErrMalformed) {
					t.Fatalf("target error does not name the input, or of no documented kind: %v", err)
				}
				continue
			}
			if tg.Coming == nil {
				if tg.Loaded != nil {
					t.Fatalf("core symbols without a symbol table")
				}
				continue
			}
			if tg.Loaded != nil && tg.Loaded.Len() > tg.Coming.Len() {
				t.Fatalf("core symbols (%d) outnumber the whole table (%d)", tg.Loaded.Len(), tg.Coming.Len())
			}
			tg.Coming.Symbols(tg.Name, func(s kallsyms.Symbol) bool {
				_ = tg.Where(s.Address)
				_, _ = m.checkTarget(tg, &RelaSection{Name: "s", Object: tg.Name}, &Relocation{RelocSymbol: &RelocSymbol{Sym: SymbolName{Object: tg.Name, Name: s.Name}}})
				return true
			})
		}
		// Converting must not panic either.
		_, _ = Convert("fuzz", data, []ConvertSymbol{{Object: "vmlinux", Name: "vfs_read"}})
		// Nor create-klp-module's step, which writes a module whose
		// relocations are all livepatch's.
		out, err := ConvertKpatch("fuzz", data)
		switch {
		case err != nil:
			if !strings.HasPrefix(err.Error(), "fuzz") || !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrNotIntermediate) || errors.Is(err, ErrNotRelocatable)) {
				t.Fatalf("ConvertKpatch error does not name the input, or of no documented kind (%T): %v", err, err)
			}
		default:
			c, err := Parse("fuzz", out)
			if err != nil {
				t.Fatalf("ConvertKpatch wrote what does not parse: %v", err)
			}
			if c.Kpatch != nil && c.Kpatch.Intermediate {
				t.Fatalf("ConvertKpatch left .kpatch.relocations")
			}
		}
	})
}

func FuzzParseSymbolName(f *testing.F) {
	f.Add(".klp.sym.vmlinux.printk,0")
	f.Add(".klp.sym.m.x, 12junk")
	f.Fuzz(func(t *testing.T, s string) {
		sn, n := ParseSymbolName(s)
		if n == 3 && FormatSymbolName(sn.Object, sn.Name, sn.Pos) == s {
			return
		}
		if len(sn.Object) > ModuleNameMax || len(sn.Name) > SymbolNameMax {
			t.Fatalf("%q: fields too long", s)
		}
	})
}
