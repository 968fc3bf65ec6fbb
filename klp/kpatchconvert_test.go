// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// klpParts are what create-klp-module makes of an intermediate object:
// its .klp.rela sections and .klp.sym symbols.
type klpParts struct {
	sections map[string]string // name: header fields, and each entry with its symbol's name
	symbols  []string          // each .klp.sym symbol in table order: name and fields, and whether it is among the locals
}

func readKlpParts(t *testing.T, f *elfobj.File) klpParts {
	p := klpParts{sections: map[string]string{}}
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Flags&SHFRelaLivepatch == 0 {
			continue
		}
		require.Equal(t, uint32(f.Symtab), s.Link, "%s: sh_link", s.Name)
		var b strings.Builder
		// objcopy --strip-debug, which made the fixtures' .ko files,
		// clears SHF_INFO_LINK in these SHF_ALLOC relocation sections:
		// compared without it.
		fmt.Fprintf(&b, "type=%v flags=%#x entsize=%d align=%d target=%s\n", s.Type, uint64(s.Flags&^elf.SHF_INFO_LINK), s.Entsize, s.Addralign, f.Sections[s.Info].Name)
		raw := f.SectionData(s)
		for at := 0; at+24 <= len(raw); at += 24 {
			e := append([]byte(nil), raw[at:at+24]...)
			sym := binary.LittleEndian.Uint32(e[12:])
			binary.LittleEndian.PutUint32(e[12:], 0) // the index, named instead
			fmt.Fprintf(&b, "%x %s\n", e, f.Symbols[sym].Name)
		}
		p.sections[s.Name] = b.String()
	}
	nlocal := int(f.Sections[f.Symtab].Info)
	for i, s := range f.Symbols {
		if s.Shndx == SHNLivepatch || strings.HasPrefix(s.Name, SymPrefix) {
			p.symbols = append(p.symbols, fmt.Sprintf("%s info=%#x other=%d shndx=%#x value=%d size=%d local=%v",
				s.Name, s.Info, s.Other, s.Shndx, s.Value, s.Size, i < nlocal))
		}
	}
	return p
}

// ConvertKpatch on kpatch-build's output.o writes the .klp.rela sections
// and .klp.sym symbols that create-klp-module wrote in the module
// kpatch-build made from it, entry for entry; and the module it writes
// resolves against the booted kernel's symbols to the addresses the
// .ko's relocations resolved to.
func TestConvertKpatchBuildTools(t *testing.T) {
	dir := "../testdata/buildtools/kpatch-build"
	ix, err := kallsyms.Open(filepath.Join(dir, "oracle", "kallsyms.xz"), kallsyms.Options{})
	require.NoError(t, err)
	objs, err := filepath.Glob(filepath.Join(dir, "*.output.o"))
	require.NoError(t, err)
	require.Len(t, objs, 5)
	total := 0
	for _, obj := range objs {
		name := strings.TrimSuffix(filepath.Base(obj), ".output.o")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(obj)
			require.NoError(t, err)
			out, err := ConvertKpatch(obj, in)
			require.NoError(t, err)
			conv, err := elfobj.Parse("converted", out)
			require.NoError(t, err)
			ko, err := Open(filepath.Join(dir, name+".ko"))
			require.NoError(t, err)

			want, got := readKlpParts(t, ko.elf), readKlpParts(t, conv)
			assert.Equal(t, want.sections, got.sections, ".klp.rela sections")
			assert.Equal(t, want.symbols, got.symbols, ".klp.sym symbols")
			for i := range conv.Sections {
				s := &conv.Sections[i]
				if s.Flags&SHFRelaLivepatch != 0 {
					// find_or_add_klp_relasec()
					assert.Equal(t, elf.SHF_ALLOC|elf.SHF_INFO_LINK|SHFRelaLivepatch, s.Flags, s.Name)
				}
				assert.NotContains(t, []string{kpatchRelocations, kpatchSymbols, kpatchArch, ".rela" + kpatchRelocations, ".rela" + kpatchSymbols}, s.Name, "intermediate sections are dropped")
			}

			// The intermediate is refused as it is; what convert wrote
			// resolves as the module does.
			src, err := Parse(obj, in)
			require.NoError(t, err)
			require.NotNil(t, src.Refused())
			assert.ErrorIs(t, src.Refused(), ErrKpatchIntermediate)
			m, err := Parse("converted.o", out)
			require.NoError(t, err)
			assert.Nil(t, m.Refused())
			res, kres := m.Resolve(ix, ResolveOptions{}), ko.Resolve(ix, ResolveOptions{})
			require.Equal(t, len(kres.Results), len(res.Results))
			for i, r := range res.Results {
				k := kres.Results[i]
				assert.Equal(t, fmt.Sprintf("%s+%#x %s %v %#x", k.Section, k.Offset, k.Symbol, k.Status, k.Address),
					fmt.Sprintf("%s+%#x %s %v %#x", r.Section, r.Offset, r.Symbol, r.Status, r.Address))
			}
			total += len(res.Results)
		})
	}
	assert.Equal(t, 8, total, "kpatch-build's five modules' livepatch relocations")
}

// The intermediate's decoding: every field of create-klp-module's
// structs, on the static-local patch (two symbols, three relocations).
func TestKpatchRelocations(t *testing.T) {
	m, err := Open("../testdata/buildtools/kpatch-build/livepatch-static-local.output.o")
	require.NoError(t, err)
	require.NotNil(t, m.Kpatch)
	assert.True(t, m.Kpatch.Intermediate)
	var got []string
	for _, r := range m.Kpatch.Relocations {
		got = append(got, fmt.Sprintf("%s+%#x %s%+d %s -> %s:%s,%d %v %v ext=%v", r.Section, r.Offset, r.TypeName, r.Addend, r.Object, r.SymObject, r.Name, r.Pos, r.Bind, r.SymType, r.External))
	}
	assert.Equal(t, []string{
		".text.get_next_ino+0x10 R_X86_64_32S+0 vmlinux -> vmlinux:last_ino,1 STB_LOCAL STT_OBJECT ext=false",
		".text.get_next_ino+0x24 R_X86_64_PC32-4 vmlinux -> vmlinux:shared_last_ino.2,1 STB_LOCAL STT_OBJECT ext=false",
		".text.get_next_ino+0x4f R_X86_64_32S+0 vmlinux -> vmlinux:last_ino,1 STB_LOCAL STT_OBJECT ext=false",
	}, got)
}

// What create-klp-module refuses, ConvertKpatch refuses, naming the
// file and the section.
func TestConvertKpatchErrors(t *testing.T) {
	in, err := os.ReadFile("../testdata/buildtools/kpatch-build/livepatch-cmdline.output.o")
	require.NoError(t, err)
	f, err := elfobj.Parse("x", in)
	require.NoError(t, err)
	shdr := func(name string) int { // the section header's offset
		s := f.SectionByName(name)
		require.NotNil(t, s, name)
		return int(binary.LittleEndian.Uint64(in[0x28:])) + s.Index*64
	}
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"counts differ", func(b []byte) {
			binary.LittleEndian.PutUint64(b[shdr(kpatchSymbols)+32:], 0)
		}, `number of krelas and ksyms do not match`},
		{"size", func(b []byte) {
			binary.LittleEndian.PutUint64(b[shdr(kpatchRelocations)+32:], 41)
		}, `size 41 is not a multiple of struct kpatch_relocation's 40 bytes`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := append([]byte(nil), in...)
			c.edit(b)
			_, err := ConvertKpatch("bad.o", b)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "bad.o")
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err = ConvertKpatch("plain.ko", mustRead(t, "../testdata/buildtools/kpatch-build/livepatch-cmdline.ko"))
	assert.ErrorIs(t, err, ErrNotIntermediate)
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
