// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// TestArchitectures converts and resolves a small object of every
// architecture the issue names, 64- and 32-bit, little- and big-endian,
// written by the project's ELF builder: one call and one data reference
// to kernel symbols, with each architecture's usual relocation types.
func TestArchitectures(t *testing.T) {
	ix, err := kallsyms.Parse("k", strings.NewReader("ffffffff81000100 T vfs_read\nffffffff82000000 D jiffies\n"), kallsyms.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		machine      elf.Machine
		class        elf.Class
		order        binary.ByteOrder
		call, data   uint32
		callN, dataN string
	}{
		{"x86_64", elf.EM_X86_64, elf.ELFCLASS64, binary.LittleEndian, uint32(elf.R_X86_64_PLT32), uint32(elf.R_X86_64_64), "R_X86_64_PLT32", "R_X86_64_64"},
		{"arm64", elf.EM_AARCH64, elf.ELFCLASS64, binary.LittleEndian, uint32(elf.R_AARCH64_CALL26), uint32(elf.R_AARCH64_ABS64), "R_AARCH64_CALL26", "R_AARCH64_ABS64"},
		{"ppc64le", elf.EM_PPC64, elf.ELFCLASS64, binary.LittleEndian, uint32(elf.R_PPC64_REL24), uint32(elf.R_PPC64_ADDR64), "R_PPC64_REL24", "R_PPC64_ADDR64"},
		{"ppc64 (big-endian)", elf.EM_PPC64, elf.ELFCLASS64, binary.BigEndian, uint32(elf.R_PPC64_REL24), uint32(elf.R_PPC64_ADDR64), "R_PPC64_REL24", "R_PPC64_ADDR64"},
		{"s390x (big-endian)", elf.EM_S390, elf.ELFCLASS64, binary.BigEndian, uint32(elf.R_390_PLT32DBL), uint32(elf.R_390_64), "R_390_PLT32DBL", "R_390_64"},
		{"arm (32-bit)", elf.EM_ARM, elf.ELFCLASS32, binary.LittleEndian, uint32(elf.R_ARM_CALL), uint32(elf.R_ARM_ABS32), "R_ARM_CALL", "R_ARM_ABS32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &elfobj.Builder{Class: tc.class, Order: tc.order, Machine: tc.machine}
			text := b.AddSection(elfobj.BuildSection{Name: ".text.fn", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 4})
			data := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 8), Addralign: 8})
			b.AddSymbol(elfobj.BuildSymbol{Name: "fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 16})
			vr := b.AddSymbol(elfobj.BuildSymbol{Name: "vfs_read", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
			jf := b.AddSymbol(elfobj.BuildSymbol{Name: "jiffies", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
			b.AddRelocs(".rela.text.fn", true, text, []elfobj.Reloc{{Offset: 4, Sym: vr, Type: tc.call, Addend: -4}})
			b.AddRelocs(".rela.data", true, data, []elfobj.Reloc{{Offset: 0, Sym: jf, Type: tc.data}})
			ko, err := Convert("obj.o", b.Bytes(), []ConvertSymbol{{Object: "vmlinux", Name: "vfs_read"}, {Object: "vmlinux", Name: "jiffies"}})
			require.NoError(t, err)
			m, err := Parse("patch.ko", ko)
			require.NoError(t, err)
			assert.Equal(t, FormatKLP, m.Format)
			assert.Equal(t, tc.class, m.Class)
			require.Len(t, m.Sections, 2)
			res := m.Resolve(ix, ResolveOptions{})
			require.Equal(t, 2, res.Resolved, "%+v", res.Results)
			want := map[string]uint64{"vfs_read": 0xffffffff81000100, "jiffies": 0xffffffff82000000}
			types := map[string]string{"vfs_read": tc.callN, "jiffies": tc.dataN}
			for _, r := range res.Results {
				assert.Equal(t, want[r.Name], r.Address, r.Name)
				assert.Equal(t, types[r.Name], r.Type, r.Name)
			}
		})
	}
}

// TestCompressedModules: .ko.gz and .ko.xz are read by their magic bytes
// and give the same answers as the plain module.
func TestCompressedModules(t *testing.T) {
	plain, err := os.ReadFile(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	var gz, xzb bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	xw, err := xz.NewWriter(&xzb)
	require.NoError(t, err)
	_, err = xw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, xw.Close())
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	require.NoError(t, err)
	want := mustParse(t, "plain.ko", plain).Resolve(ix, ResolveOptions{})
	for name, data := range map[string][]byte{"sample.ko.gz": gz.Bytes(), "sample.ko.xz": xzb.Bytes()} {
		m := mustParse(t, name, data)
		got := m.Resolve(ix, ResolveOptions{})
		assert.Equal(t, want.Resolved, got.Resolved, name)
		assert.Equal(t, want.Deferred, got.Deferred, name)
		for i := range want.Results {
			assert.Equal(t, want.Results[i].Address, got.Results[i].Address, name)
		}
	}
	assert.Equal(t, "gzip", string(mustParse(t, "x.gz", gz.Bytes()).Compression))
	assert.Equal(t, "xz", string(mustParse(t, "x.xz", xzb.Bytes()).Compression))
	// A truncated compressed module is an error naming the file.
	_, err = Parse("cut.ko.xz", xzb.Bytes()[:xzb.Len()/2])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cut.ko.xz")
}

func mustParse(t *testing.T, name string, data []byte) *Module {
	t.Helper()
	m, err := Parse(name, data)
	require.NoError(t, err)
	return m
}
