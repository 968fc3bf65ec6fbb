// SPDX-License-Identifier: GPL-2.0-only

// Package testelf writes the small ELF objects the tests of several packages
// share (apart from testutil, which internal/input's tests import, and
// elfobj imports input).
package testelf

import (
	"debug/elf"
	"encoding/binary"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// X86Calls returns an x86_64 relocatable object whose executable
// section text refers to each of names in turn, 8 bytes apart (a
// relocation of type rtype at offset 1+8i, addend -4, against an
// undefined symbol of that name): the smallest object a test converts
// into a livepatch module or links.
func X86Calls(text string, rtype elf.R_X86_64, names ...string) []byte {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	sec := b.AddSection(elfobj.BuildSection{Name: text, Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 8*len(names)+8), Addralign: 16})
	rels := make([]elfobj.Reloc, len(names))
	for i, n := range names {
		s := b.AddSymbol(elfobj.BuildSymbol{Name: n, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		rels[i] = elfobj.Reloc{Offset: uint64(1 + 8*i), Sym: s, Type: uint32(rtype), Addend: -4}
	}
	b.AddRelocs(".rela"+text, true, sec, rels)
	return b.Bytes()
}
