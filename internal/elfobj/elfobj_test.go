// SPDX-License-Identifier: GPL-2.0-only

package elfobj

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(t *testing.T) []byte {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "klp", "patch.o"))
	require.NoError(t, err)
	return b
}

func TestParseSample(t *testing.T) {
	f, err := Parse("patch.o", sample(t))
	require.NoError(t, err)
	assert.Equal(t, elf.EM_X86_64, f.Machine)
	assert.Equal(t, elf.ET_REL, f.Type)
	s := f.SectionByName(".rela.text.livepatch_vfs_read")
	require.NotNil(t, s)
	r, err := f.Relocs(s)
	require.NoError(t, err)
	require.Len(t, r, 2)
	assert.Equal(t, uint32(elf.R_X86_64_PC32), r[0].Type)
	assert.Equal(t, "jiffies", f.Symbols[r[0].Sym].Name)
	assert.Equal(t, int64(-4), r[0].Addend)
	assert.Equal(t, "livepatch_sample", f.ModInfo("name"))
}

func TestHostileInputs(t *testing.T) {
	good := sample(t)
	shoff := binary.LittleEndian.Uint64(good[40:])
	mutate := func(fn func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		fn(b)
		return b
	}
	secHdr := func(b []byte, i int) []byte { return b[shoff+uint64(i*64):] }
	tests := map[string]struct {
		data []byte
		msg  string
	}{
		"truncated header": {good[:40], "truncated ELF header"},
		"not elf":          {[]byte("hello world, not an elf file at all....."), "not an ELF file"},
		"a symbol list": {[]byte("ffffffff81000000 T _stext\nffffffff81000010 t x\n"),
			"not an ELF file (no \\x7fELF magic): it reads like a kernel symbol list (kallsyms, System.map), not a module"},
		"a module's symbol": {[]byte("ffffffffc0a01000 t ovl_show_options\t[overlay]\r\n"), "reads like a kernel symbol list"},
		"a snapshot":        {[]byte("KLPSNAP\x00\x04\x00\x00\x00\x00\x00\x00\x00"), "not an ELF file (no \\x7fELF magic): a klpresolve symbol snapshot, not a module"},
		"truncated table":   {good[:shoff+10], "runs past the end"},
		"4 GiB section": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint64(secHdr(b, 1)[32:], 4<<30)
		}), "past the end of the file"},
		"shstrndx out of range": {mutate(func(b []byte) { binary.LittleEndian.PutUint16(b[62:], 999) }), "section name table index"},
		"name offset out of range": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint32(secHdr(b, 1), 0xffffff)
		}), "name offset"},
		// elf_validity_check(): section 0 is SHT_NULL, 0 bytes at 0.
		"section 0 with a size": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint64(secHdr(b, 0)[32:], 0xde0000)
		}), "section [0]: is not the null section (type SHT_NULL, 14548992 bytes at address 0x0): the kernel refuses it"},
		"section 0 with an address": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint64(secHdr(b, 0)[16:], 0x1000)
		}), "0 bytes at address 0x1000"},
		"section header entry size 72": {mutate(func(b []byte) { binary.LittleEndian.PutUint16(b[58:], 72) }),
			`section header entry size 72 is not 64: the kernel refuses it ("Invalid ELF section header size")`},
		"extended numbering": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint16(b[60:], 0)
			binary.LittleEndian.PutUint64(secHdr(b, 0)[32:], uint64(binary.LittleEndian.Uint16(good[60:])))
		}), `no sections (e_shnum 0: extended section numbering, which the kernel's loader refuses: "Invalid ELF section name index")`},
		"section 0 not SHT_NULL": {mutate(func(b []byte) {
			binary.LittleEndian.PutUint32(secHdr(b, 0)[4:], uint32(elf.SHT_PROGBITS))
		}), `(type SHT_PROGBITS, 0 bytes at address 0x0): the kernel refuses it ("ELF Spec violation: section 0 type(1)!=SH_NULL or non-zero len or addr")`},
	}
	for name, tt := range tests {
		_, err := Parse("bad.o", tt.data)
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, ErrMalformed), name)
		assert.Contains(t, err.Error(), tt.msg, name)
		assert.Contains(t, err.Error(), "bad.o", name)
	}
	// A relocation whose symbol index is past the table.
	f, err := Parse("patch.o", good)
	require.NoError(t, err)
	s := f.SectionByName(".rela.text.livepatch_vfs_read")
	b := mutate(func(b []byte) {
		binary.LittleEndian.PutUint64(b[s.Offset+8:], uint64(5000)<<32|2)
	})
	f, err = Parse("bad.o", b)
	require.NoError(t, err)
	_, err = f.Relocs(f.SectionByName(".rela.text.livepatch_vfs_read"))
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "symbol index 5000 past the symbol table")
	assert.Contains(t, err.Error(), ".rela.text.livepatch_vfs_read")
}

func TestBuilderRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		class elf.Class
		order binary.ByteOrder
	}{{elf.ELFCLASS64, binary.LittleEndian}, {elf.ELFCLASS32, binary.LittleEndian}, {elf.ELFCLASS64, binary.BigEndian}, {elf.ELFCLASS32, binary.BigEndian}} {
		b := &Builder{Class: tc.class, Order: tc.order, Machine: elf.EM_AARCH64}
		text := b.AddSection(BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 4})
		b.AddSection(BuildSection{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Size: 4096})
		fn := b.AddSymbol(BuildSymbol{Name: "fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Value: 8})
		ext := b.AddSymbol(BuildSymbol{Name: "ext", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		rela := tc.class == elf.ELFCLASS64
		rs := []Reloc{{Offset: 4, Sym: ext, Type: 7, Addend: -4}, {Offset: 12, Sym: fn, Type: 3}}
		if !rela {
			rs[0].Addend = 0
		}
		b.AddRelocs(".rela.text", rela, text, rs)
		f, err := Parse("built", b.Bytes())
		require.NoError(t, err)
		require.Equal(t, tc.class, f.Class)
		require.Equal(t, tc.order, f.Order)
		require.Equal(t, elf.EM_AARCH64, f.Machine)
		require.Equal(t, ".text", f.Sections[text].Name)
		require.Equal(t, uint64(4096), f.SectionByName(".bss").Size)
		require.Len(t, f.Symbols, 3)
		require.Equal(t, "fn", f.Symbols[fn].Name)
		require.Equal(t, uint64(8), f.Symbols[fn].Value)
		require.Equal(t, uint16(text), f.Symbols[fn].Shndx)
		got, err := f.Relocs(f.SectionByName(".rela.text"))
		require.NoError(t, err)
		require.Equal(t, rs, got)
	}
}

// ParseHeader reads the header alone, as Parse does: the same class,
// order, type, machine and flags, from the first 64 bytes only (a file
// whose sections are cut off still has a header); the same errors for a
// header that is not one.
func TestParseHeader(t *testing.T) {
	data := sample(t)
	full, err := Parse("patch.o", data)
	require.NoError(t, err)
	h, err := ParseHeader("patch.o", data[:64])
	require.NoError(t, err)
	assert.Equal(t, []any{full.Class, full.Order, full.Type, full.Machine, full.Flags}, []any{h.Class, h.Order, h.Type, h.Machine, h.Flags})
	assert.Equal(t, elf.EM_X86_64, h.Machine)
	assert.Nil(t, h.Sections)
	_, err = ParseHeader("short.o", data[:40])
	assert.EqualError(t, err, "short.o: truncated ELF header (40 of 64 bytes)")
	_, err = Parse("short.o", data[:40])
	assert.EqualError(t, err, "short.o: truncated ELF header (40 of 64 bytes)")
	_, err = ParseHeader("text.o", []byte("ffffffff81000000 T vfs_read\n"))
	assert.ErrorIs(t, err, ErrMalformed)
}

// CheckHead passes what may begin a module (ELF's magic, a compressed
// file's, fewer bytes than the magic) and refuses the rest with Parse's
// error and its hint.
func TestCheckHead(t *testing.T) {
	for _, head := range []string{"\x7fELF\x02\x01\x01", "\x28\xb5\x2f\xfd\x00", "\x1f\x8b\x08", "\xfd7zXZ\x00\x00", "\x7fE", ""} {
		assert.NoError(t, CheckHead("m.ko", []byte(head)), "%q", head)
	}
	err := CheckHead("m.ko", make([]byte, 256))
	require.ErrorIs(t, err, ErrMalformed)
	assert.EqualError(t, err, `m.ko: not an ELF file (no \x7fELF magic)`)
	err = CheckHead("m.ko", []byte("ffffffff81000000 T _stext\nffffffff81000010 T x\n"))
	require.ErrorIs(t, err, ErrMalformed)
	assert.EqualError(t, err, `m.ko: not an ELF file (no \x7fELF magic): it reads like a kernel symbol list (kallsyms, System.map), not a module`)
	_, perr := Parse("m.ko", make([]byte, 256))
	assert.Equal(t, perr.Error(), err.Error()[:len(perr.Error())], "the same words as Parse")
}

// .modinfo keys given many times (import_ns): ModInfo takes the first, as
// get_modinfo() does, ModInfoAll every one in order.
func TestModInfoAll(t *testing.T) {
	b := &Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	b.AddSection(BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC,
		Data: []byte("import_ns=CXL\x00name=m\x00import_ns=CRYPTO_INTERNAL\x00import_ns\x00"), Addralign: 1})
	f, err := Parse("m.ko", b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "CXL", f.ModInfo("import_ns"))
	assert.Equal(t, []string{"CXL", "CRYPTO_INTERNAL"}, f.ModInfoAll("import_ns"))
	assert.Equal(t, []string{"m"}, f.ModInfoAll("name"))
	assert.Nil(t, f.ModInfoAll("license"))
	assert.Equal(t, "", f.ModInfo("license"))
}

// TestExports reads the exports of testdata/kbuild/deps' klpdep_base
// (built by Kbuild: one EXPORT_SYMBOL, one EXPORT_SYMBOL_GPL) and of a
// module that exports nothing; a __ksymtab_ symbol in another section is
// not an export.
func TestExports(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	deps := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "kbuild", "deps")
	load := func(name string) *File {
		b, err := os.ReadFile(filepath.Join(deps, name))
		require.NoError(t, err)
		f, err := Parse(name, b)
		require.NoError(t, err)
		return f
	}
	base := load("klpdep-base.ko")
	assert.Equal(t, []Export{{"klpdep_base_add", false}, {"klpdep_base_secret", true}}, base.Exports())
	assert.Empty(t, load("klpdep-top.ko").Exports())
	for i := range base.Symbols {
		if base.Symbols[i].Name == "__ksymtab_klpdep_base_secret" {
			base.Symbols[i].Shndx = uint16(base.SectionByName(".text").Index)
		}
	}
	assert.Equal(t, []Export{{"klpdep_base_add", false}}, base.Exports())
}

// TestExportsOrder: exports come in the order verify_exported_symbols()
// walks them, __ksymtab by place, then __ksymtab_gpl, whatever the
// symbol table's order (modpost's linker script sorts the tables by name,
// the assembler's symbol table is in another order: crc-t10dif.ko's lists
// __ksymtab_crc_t10dif_update first, at 0xc).
func TestExportsOrder(t *testing.T) {
	b := &Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	gpl := b.AddSection(BuildSection{Name: "__ksymtab_gpl", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 24), Addralign: 4})
	tab := b.AddSection(BuildSection{Name: "__ksymtab", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 24), Addralign: 4})
	for _, s := range []struct {
		name  string
		value uint64
		sec   int
	}{{"g_second", 12, gpl}, {"b_second", 12, tab}, {"g_first", 0, gpl}, {"a_first", 0, tab}} {
		b.AddSymbol(BuildSymbol{Name: "__ksymtab_" + s.name, Value: s.value, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_NOTYPE), Shndx: uint16(s.sec)})
	}
	f, err := Parse("order.ko", b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, []Export{{"a_first", false}, {"b_second", false}, {"g_first", true}, {"g_second", true}}, f.Exports())
}
