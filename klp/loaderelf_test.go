// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// TestLoaderELFGenerations: the loader's checks of a module's sections
// per generation. 6.1's setup_load_info() takes the first symbol table
// and the first struct module section; 6.12's and 7.2's
// elf_validity_cache_copy() want exactly one of each, with contents and
// allocated, and one .modinfo at most, checked in that order (struct
// module before the symbol table, where 6.1 checks the symbol table
// first).
func TestLoaderELFGenerations(t *testing.T) {
	ix := loaderIndex(t, loaderKernel)
	const modinfo = "name=fix_patch\x00livepatch=Y\x00"
	structModule := func(typ elf.SectionType, flags elf.SectionFlag) func(b *elfobj.Builder) {
		return func(b *elfobj.Builder) {
			s := elfobj.BuildSection{Name: thisModuleSection, Type: typ, Flags: flags, Addralign: 64}
			if typ == elf.SHT_NOBITS {
				s.Size = 64
			} else {
				s.Data = make([]byte, 64)
			}
			b.AddSection(s)
		}
	}
	// A second symbol table, placed before kbuild's own: 6.1 reads it
	// (it has the null symbol only) and goes on.
	secondSymtab := func(b *elfobj.Builder) {
		n := len(b.Sections)
		b.AddSection(elfobj.BuildSection{Name: ".symtab.extra", Type: elf.SHT_SYMTAB, Data: make([]byte, 24), Link: uint32(n + 3), Info: 1, Addralign: 8, Entsize: 24})
	}
	secondModinfo := func(b *elfobj.Builder) {
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("author=x\x00"), Addralign: 1})
	}
	stripped := func(b *elfobj.Builder) { b.NoSymtab = true }
	// The symbol string table's last name, zz_last, respelt "zz\0last!":
	// every name ends in a NUL, the table does not, which only 7.2
	// checks.
	unterminated := func(b *elfobj.Builder) {
		b.AddSymbol(elfobj.BuildSymbol{Name: "zz_last", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	}
	// 7.2's extended versions: crcs bytes of CRCs, and names (none:
	// no section).
	extVersions := func(crcs int, names string) func(b *elfobj.Builder) {
		return func(b *elfobj.Builder) {
			b.AddSection(elfobj.BuildSection{Name: "__version_ext_crcs", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, crcs), Addralign: 4})
			if names != "" {
				b.AddSection(elfobj.BuildSection{Name: "__version_ext_names", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte(names), Addralign: 1})
			}
		}
	}
	both := func(fs ...func(b *elfobj.Builder)) func(b *elfobj.Builder) {
		return func(b *elfobj.Builder) {
			for _, f := range fs {
				f(b)
			}
		}
	}
	for _, tc := range []struct {
		name string
		bare bool
		add  func(b *elfobj.Builder)
		// The kernel's message and the kind, "" where it loads.
		on61, on612     string
		kind61, kind612 error
	}{
		{"none", true, nil,
			"fix_patch: No module found in object", "module fix_patch: Exactly one .gnu.linkonce.this_module section must exist.",
			ErrNoModuleStruct, ErrNoModuleStruct},
		{"two", false, structModule(elf.SHT_PROGBITS, elf.SHF_ALLOC|elf.SHF_WRITE),
			"", "module fix_patch: Exactly one .gnu.linkonce.this_module section must exist.",
			nil, ErrBadModuleStruct},
		{"no contents", true, structModule(elf.SHT_NOBITS, elf.SHF_ALLOC|elf.SHF_WRITE),
			"", "module fix_patch: .gnu.linkonce.this_module section must have a size set",
			nil, ErrBadModuleStruct},
		{"not allocated", true, structModule(elf.SHT_PROGBITS, elf.SHF_WRITE),
			"", "module fix_patch: .gnu.linkonce.this_module must occupy memory during process execution",
			nil, ErrBadModuleStruct},
		// 6.1 reads the first table, whose only symbol is the null one:
		// no call to klp_enable_patch().
		{"two symbol tables", false, secondSymtab,
			"(no message: the kernel loads the module, and livepatch does nothing with it)", "fix_patch: module has no symbols (stripped?)",
			ErrNotLivepatch, ErrNoSymbols},
		{"two modinfo", false, secondModinfo,
			"", "Only one .modinfo section must exist.",
			nil, ErrBadModinfo},
		{"no struct module and no symbols", true, stripped,
			"fix_patch: module has no symbols (stripped?)", "module fix_patch: Exactly one .gnu.linkonce.this_module section must exist.",
			ErrNoSymbols, ErrNoModuleStruct},
		{"two modinfo, no struct module", true, secondModinfo,
			"fix_patch: No module found in object", "Only one .modinfo section must exist.",
			ErrNoModuleStruct, ErrBadModinfo},
		{"one of each", false, nil, "", "", nil, nil},
		{"stripped, two struct modules", false, both(stripped, structModule(elf.SHT_PROGBITS, elf.SHF_ALLOC)),
			"fix_patch: module has no symbols (stripped?)", "module fix_patch: Exactly one .gnu.linkonce.this_module section must exist.",
			ErrNoSymbols, ErrBadModuleStruct},
		{"symbol names unterminated", false, unterminated, "", "", nil, nil},
		{"extended version CRCs without names", false, extVersions(8, ""), "", "", nil, nil},
		{"an extended version CRC without a name", false, extVersions(8, "module_layout\x00"), "", "", nil, nil},
		{"extended versions", false, extVersions(8, "module_layout\x00seq_printf\x00"), "", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := loaderModule(modinfo, tc.bare, tc.add)
			var on72 string
			switch tc.name {
			case "symbol names unterminated":
				data = respelt(t, data, "zz_last\x00", "zz\x00last!")
				on72 = "symbol string table isn't NUL terminated"
			case "extended version CRCs without names":
				on72 = "extended version crc+name presence does not match"
			case "an extended version CRC without a name":
				on72 = "more extended version crcs than names"
			}
			m, err := Parse("fix.ko", data)
			require.NoError(t, err)
			for _, g := range kgen.Known() {
				kernel, kind := tc.on612, tc.kind612
				if g == kgen.Linux6_1 {
					kernel, kind = tc.on61, tc.kind61
				}
				if g == kgen.Linux7_2 && on72 != "" {
					kernel, kind = on72, ErrMalformed
				}
				res := m.Resolve(ix, ResolveOptions{Generation: g})
				if kind == nil {
					assert.Nil(t, res.LoadErr, "%s", g)
					continue
				}
				require.NotNil(t, res.LoadErr, "%s", g)
				assert.ErrorIs(t, res.LoadErr, kind, "%s", g)
				assert.Equal(t, kernel, res.LoadErr.Kernel, "%s", g)
				assert.NotEmpty(t, res.LoadErr.Hint, "%s", g)
				assert.False(t, res.OK(false), "%s", g)
			}
		})
	}
}

// TestExportSections7_2: a 7.2 kernel refuses a module whose __ksymtab
// has entries and which has no __kflagstab ("no flags for exported
// symbols"), after the layout's checks, and ignores __ksymtab_gpl: a
// GPL-only export there is no export, so it duplicates nothing. 6.1 and
// 6.12 want no flags, and read __ksymtab_gpl.
func TestExportSections7_2(t *testing.T) {
	ix := loaderIndex(t, loaderKernel)
	exporting := func(table, name string, flags bool) []byte {
		return loaderModule("name=fix_patch\x00livepatch=Y\x00", false, func(b *elfobj.Builder) {
			tab := b.AddSection(elfobj.BuildSection{Name: table, Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 12), Addralign: 4})
			b.AddSymbol(elfobj.BuildSymbol{Name: "__ksymtab_" + name, Size: 12, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT), Shndx: uint16(tab)})
			if flags {
				b.AddSection(elfobj.BuildSection{Name: "__kflagstab", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte{0}, Addralign: 1})
			}
		})
	}
	load := func(data []byte, g kgen.Generation) *RelocError {
		m, err := Parse("fix.ko", data)
		require.NoError(t, err)
		return m.Resolve(ix, ResolveOptions{Generation: g}).LoadErr
	}

	noFlags := exporting("__ksymtab", "fix_helper", false)
	e := load(noFlags, kgen.Linux7_2)
	require.NotNil(t, e)
	require.ErrorIs(t, e, ErrNoExportFlags)
	assert.Equal(t, "no_export_flags", e.Kind())
	assert.Equal(t, "fix_patch: no flags for exported symbols", e.Kernel)
	assert.Equal(t, "__ksymtab", e.Section)
	assert.Nil(t, load(noFlags, kgen.Linux6_12))
	assert.Nil(t, load(noFlags, kgen.Linux6_1))
	assert.Nil(t, load(exporting("__ksymtab", "fix_helper", true), kgen.Linux7_2))

	// vmlinux exports kmalloc GPL-only: a module's __ksymtab_gpl copy is
	// a duplicate up to 6.12, nothing on 7.2.
	gpl := exporting("__ksymtab_gpl", "kmalloc", false)
	for _, g := range []kgen.Generation{kgen.Linux6_1, kgen.Linux6_12} {
		e := load(gpl, g)
		require.NotNil(t, e, "%s", g)
		assert.ErrorIs(t, e, ErrDuplicateExport, "%s", g)
	}
	assert.Nil(t, load(gpl, kgen.Linux7_2))
	// In __ksymtab, with its flags, 7.2 finds the duplicate.
	e = load(exporting("__ksymtab", "kmalloc", true), kgen.Linux7_2)
	require.NotNil(t, e)
	assert.ErrorIs(t, e, ErrDuplicateExport)
	assert.Equal(t, "fix_patch: exports duplicate symbol kmalloc (owned by kernel)", e.Kernel)
}

// TestModuleStructSize: a 6.12 or later loader wants the module's struct
// module of the kernel's own size, which one of its modules tells
// (ResolveOptions.ModuleStructSize); 6.1 does not check it, and without
// the size nothing is said.
func TestModuleStructSize(t *testing.T) {
	ix := loaderIndex(t, loaderKernel)
	m, err := Parse("fix.ko", loaderModule("name=fix_patch\x00livepatch=Y\x00", false, nil))
	require.NoError(t, err)
	assert.Equal(t, uint64(64), m.ModuleStructSize())
	opts := ResolveOptions{ModuleStructSize: 1280, ModuleStructFrom: "md4.ko"}
	for _, g := range kgen.Known() {
		opts.Generation = g
		e := m.Resolve(ix, opts).LoadErr
		if g == kgen.Linux6_1 {
			assert.Nil(t, e)
			continue
		}
		require.NotNil(t, e, "%s", g)
		assert.ErrorIs(t, e, ErrBadModuleStruct)
		assert.Equal(t, "bad_module_struct", e.Kind())
		assert.Equal(t, "module fix_patch: .gnu.linkonce.this_module section size must match the kernel's built struct module size at run time", e.Kernel)
		assert.Contains(t, e.Hint, "struct module is 64 bytes and the kernel's 1280 (as its module md4.ko has it)")
	}
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Generation: kgen.Linux7_2, ModuleStructSize: 64}).LoadErr)
	assert.Nil(t, m.Resolve(ix, ResolveOptions{Generation: kgen.Linux7_2}).LoadErr)
}
