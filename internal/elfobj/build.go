// SPDX-License-Identifier: GPL-2.0-only

package elfobj

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
)

// Builder writes small relocatable ELF files: the project's own fixtures
// and the tests' generated modules. Sections are numbered from 1 in the
// order they are added; .symtab, .strtab and .shstrtab follow them.
type Builder struct {
	Type     elf.Type // ET_REL when 0
	Class    elf.Class
	Order    binary.ByteOrder // binary.LittleEndian or binary.BigEndian
	Machine  elf.Machine
	Flags    uint32
	Sections []BuildSection
	Symbols  []BuildSymbol // without the null symbol, which is added
	// NoSymtab writes no .symtab and .strtab (a stripped file); Symbols
	// and relocation sections are then ignored and dangling.
	NoSymtab bool
}

// BuildSection is one section to write. REL/RELA sections get their
// sh_link (the symbol table) and entry size filled in.
type BuildSection struct {
	Name      string
	Type      elf.SectionType
	Flags     elf.SectionFlag
	Data      []byte
	Size      uint64 // for SHT_NOBITS (and SHT_NULL), which have no Data
	Addr      uint64 // sh_addr
	Link      uint32
	Info      uint32
	Addralign uint64
	Entsize   uint64
}

// BuildSymbol is one symbol; its index is its position in Symbols plus one.
type BuildSymbol struct {
	Name  string
	Value uint64
	Size  uint64
	Info  uint8
	Other uint8
	Shndx uint16
}

// AddSection appends s and returns its section index.
func (b *Builder) AddSection(s BuildSection) int {
	b.Sections = append(b.Sections, s)
	return len(b.Sections)
}

// AddSymbol appends s and returns its symbol index.
func (b *Builder) AddSymbol(s BuildSymbol) uint32 {
	b.Symbols = append(b.Symbols, s)
	return uint32(len(b.Symbols))
}

// AddRelocs appends a REL (rela false) or RELA section holding rs, applying
// to section target, and returns its index.
func (b *Builder) AddRelocs(name string, rela bool, target int, rs []Reloc) int {
	var data []byte
	for _, r := range rs {
		data = AppendReloc(data, b.Order.(binary.AppendByteOrder), b.Class == elf.ELFCLASS64, rela, r)
	}
	t := elf.SHT_REL
	if rela {
		t = elf.SHT_RELA
	}
	return b.AddSection(BuildSection{Name: name, Type: t, Flags: elf.SHF_INFO_LINK, Data: data, Info: uint32(target), Addralign: 8})
}

// AppendReloc appends r to b as one Elf64_Rel/Elf64_Rela (is64) or
// Elf32_Rel/Elf32_Rela entry (rela: with its addend).
func AppendReloc(b []byte, o binary.AppendByteOrder, is64, rela bool, r Reloc) []byte {
	if is64 {
		b = o.AppendUint64(o.AppendUint64(b, r.Offset), uint64(r.Sym)<<32|uint64(r.Type))
		if rela {
			b = o.AppendUint64(b, uint64(r.Addend))
		}
		return b
	}
	b = o.AppendUint32(o.AppendUint32(b, uint32(r.Offset)), r.Sym<<8|r.Type&0xff)
	if rela {
		b = o.AppendUint32(b, uint32(r.Addend))
	}
	return b
}

// Bytes lays the file out and returns it.
func (b *Builder) Bytes() []byte {
	var buf bytes.Buffer
	_, _ = b.WriteTo(&buf) // (a bytes.Buffer's writes do not fail)
	return buf.Bytes()
}

// WriteTo lays the file out and writes it to w: the sections' data as
// they are, without a copy of the whole file in memory (a linked module
// is megabytes, and a fresh process pays for every page it touches).
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	is64 := b.Class == elf.ELFCLASS64
	o := b.Order.(interface {
		binary.ByteOrder
		binary.AppendByteOrder
	})
	f := &File{Class: b.Class}
	symtab := len(b.Sections) + 1
	strtabIdx := symtab + 1

	// Every table sized before it is filled, and the output once: a
	// linked module is megabytes, and each doubling of a growing buffer
	// is a fresh allocation to fault in and copy.
	names := 1
	for _, s := range b.Symbols {
		if s.Name != "" {
			names += len(s.Name) + 1
		}
	}
	strtab := make([]byte, 1, names)
	syms := make([]byte, f.SymEntSize(), f.SymEntSize()*(len(b.Symbols)+1))
	for _, s := range b.Symbols {
		name := uint32(0)
		if s.Name != "" {
			name = uint32(len(strtab))
			strtab = append(append(strtab, s.Name...), 0)
		}
		if is64 {
			syms = o.AppendUint32(syms, name)
			syms = append(syms, s.Info, s.Other)
			syms = o.AppendUint16(syms, s.Shndx)
			syms = o.AppendUint64(syms, s.Value)
			syms = o.AppendUint64(syms, s.Size)
		} else {
			syms = o.AppendUint32(syms, name)
			syms = o.AppendUint32(syms, uint32(s.Value))
			syms = o.AppendUint32(syms, uint32(s.Size))
			syms = append(syms, s.Info, s.Other)
			syms = o.AppendUint16(syms, s.Shndx)
		}
	}
	firstGlobal := len(b.Symbols) + 1
	for i, s := range b.Symbols {
		if elf.ST_BIND(s.Info) != elf.STB_LOCAL {
			firstGlobal = i + 1
			break
		}
	}
	all := append([]BuildSection(nil), b.Sections...)
	for i := range all {
		if all[i].Type == elf.SHT_REL || all[i].Type == elf.SHT_RELA {
			all[i].Link = uint32(symtab)
			all[i].Entsize = uint64(f.RelocEntSize(all[i].Type == elf.SHT_RELA))
		}
	}
	if !b.NoSymtab {
		all = append(all,
			BuildSection{Name: ".symtab", Type: elf.SHT_SYMTAB, Data: syms, Link: uint32(strtabIdx), Info: uint32(firstGlobal), Addralign: 8, Entsize: uint64(f.SymEntSize())},
			BuildSection{Name: ".strtab", Type: elf.SHT_STRTAB, Data: strtab, Addralign: 1})
	}
	all = append(all, BuildSection{Name: ".shstrtab", Type: elf.SHT_STRTAB, Addralign: 1})
	shnames := make([]uint32, len(all))
	shstr := []byte{0}
	for i, s := range all {
		shnames[i] = uint32(len(shstr))
		shstr = append(append(shstr, s.Name...), 0)
	}
	all[len(all)-1].Data = shstr

	ehsize, shentsize := 52, 40
	if is64 {
		ehsize, shentsize = 64, 64
	}
	// The layout: the header, each section's data 8-aligned, then the
	// section headers.
	offs := make([]uint64, len(all))
	end := uint64(ehsize)
	for i, s := range all {
		if s.Type == elf.SHT_NOBITS {
			offs[i] = end
			continue
		}
		offs[i] = (end + 7) &^ 7
		end = offs[i] + uint64(len(s.Data))
	}
	shoff := (end + 7) &^ 7
	total := int(shoff) + shentsize*(len(all)+1)
	if bb, ok := w.(*bytes.Buffer); ok {
		bb.Grow(total)
	}
	// out is the header, then the section headers.
	out := make([]byte, ehsize, ehsize+shentsize*(len(all)+1))
	out = append(out, make([]byte, shentsize)...) // the null section
	for i, s := range all {
		size := uint64(len(s.Data))
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			size = s.Size
		}
		if is64 {
			out = o.AppendUint32(out, shnames[i])
			out = o.AppendUint32(out, uint32(s.Type))
			out = o.AppendUint64(out, uint64(s.Flags))
			out = o.AppendUint64(out, s.Addr)
			out = o.AppendUint64(out, offs[i])
			out = o.AppendUint64(out, size)
			out = o.AppendUint32(out, s.Link)
			out = o.AppendUint32(out, s.Info)
			out = o.AppendUint64(out, s.Addralign)
			out = o.AppendUint64(out, s.Entsize)
		} else {
			out = o.AppendUint32(out, shnames[i])
			out = o.AppendUint32(out, uint32(s.Type))
			out = o.AppendUint32(out, uint32(s.Flags))
			out = o.AppendUint32(out, uint32(s.Addr))
			out = o.AppendUint32(out, uint32(offs[i]))
			out = o.AppendUint32(out, uint32(size))
			out = o.AppendUint32(out, s.Link)
			out = o.AppendUint32(out, s.Info)
			out = o.AppendUint32(out, uint32(s.Addralign))
			out = o.AppendUint32(out, uint32(s.Entsize))
		}
	}
	h := out[:ehsize]
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS] = byte(b.Class)
	if b.Order == binary.ByteOrder(binary.BigEndian) {
		h[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	} else {
		h[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	}
	h[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	typ := b.Type
	if typ == 0 {
		typ = elf.ET_REL
	}
	o.PutUint16(h[16:], uint16(typ))
	o.PutUint16(h[18:], uint16(b.Machine))
	o.PutUint32(h[20:], uint32(elf.EV_CURRENT))
	shnum := uint16(len(all) + 1)
	if is64 {
		o.PutUint64(h[40:], shoff)
		o.PutUint32(h[48:], b.Flags)
		o.PutUint16(h[52:], uint16(ehsize))
		o.PutUint16(h[58:], uint16(shentsize))
		o.PutUint16(h[60:], shnum)
		o.PutUint16(h[62:], uint16(len(all))) // .shstrtab, the last
	} else {
		o.PutUint32(h[32:], uint32(shoff))
		o.PutUint32(h[36:], b.Flags)
		o.PutUint16(h[40:], uint16(ehsize))
		o.PutUint16(h[46:], uint16(shentsize))
		o.PutUint16(h[48:], shnum)
		o.PutUint16(h[50:], uint16(len(all))) // .shstrtab, the last
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var zeros [8]byte
	at := uint64(ehsize)
	_, _ = bw.Write(out[:ehsize])
	for i, s := range all {
		if s.Type == elf.SHT_NOBITS {
			continue
		}
		_, _ = bw.Write(zeros[:offs[i]-at])
		_, _ = bw.Write(s.Data)
		at = offs[i] + uint64(len(s.Data))
	}
	_, _ = bw.Write(zeros[:shoff-at])
	_, _ = bw.Write(out[ehsize:])
	// (a bufio.Writer keeps its first error and returns it here)
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return int64(total), nil
}
