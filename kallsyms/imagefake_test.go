// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// fakeSym is a symbol of a fake kernel image.
type fakeSym struct {
	addr uint64
	typ  byte
	name string
}

// fakeText is the link address of a fake image's first loaded byte.
const fakeText = 0xffffffff81000000

// fakeARM64Text is where a fake arm64 Image is linked (KIMAGE_VADDR of a
// 48-bit kernel before 6.5).
const fakeARM64Text = 0xffff800008000000

// fakeSyms: n symbols in address order from fakeText, some names
// repeated, one at the length limit.
func fakeSyms(n int) []fakeSym { return fakeSymsAt(fakeText, n) }

func fakeSymsAt(fakeText uint64, n int) []fakeSym {
	syms := []fakeSym{{fakeText, 'T', "_text"}}
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("fn_%d_read", i%(n/2+1))
		typ := byte("TtDdRr"[i%6])
		if i == n/2 {
			name = strings.Repeat("x", KSYMNameLen-1)
		}
		syms = append(syms, fakeSym{fakeText + 0x10*uint64(i), typ, name})
	}
	return syms
}

// fakeImage writes syms' kallsyms tables as scripts/kallsyms.c writes
// them in layout (at file offset 0x1000, with .balign 8, or 4 in 7.2),
// into a little-endian 64-bit x86 ELF file whose one PT_LOAD maps the
// file at fakeText - 0x1000. Tokens: every byte a name uses is its own,
// and 0x01 stands for "_read" (kallsyms's compression, in little).
func fakeImage(layout string, syms []fakeSym, percpu bool) []byte {
	const at = 0x1000
	va := uint64(fakeText - at)
	b, _ := fakeTables(layout, syms, percpu, va, at)
	return fakeELF(b, va)
}

// fakeTables writes syms' kallsyms tables in layout at offset at of a
// file whose offset 0 is linked at va, and the banner after them; and
// where kallsyms_relative_base is (-1 for none).
func fakeTables(layout string, syms []fakeSym, percpu bool, va uint64, at int) ([]byte, int) {
	le := binary.LittleEndian
	b := make([]byte, at)
	rbAt := -1
	algn := 8
	if layout == LayoutPCRelative {
		algn = 4
	}
	label := func() {
		for len(b)%algn != 0 {
			b = append(b, 0)
		}
	}
	u32 := func(v uint32) { b = le.AppendUint32(b, v) }
	n := len(syms)
	// record_relative_base(): the first symbol that is not absolute.
	relBase := syms[slices.IndexFunc(syms, func(s fakeSym) bool { return !percpu || s.typ != 'A' })].addr
	offsets := func() {
		label()
		for _, s := range syms {
			switch {
			case layout == LayoutPCRelative:
				u32(uint32(int32(int64(s.addr) - int64(va+uint64(len(b))))))
			case percpu && s.typ == 'A':
				u32(uint32(s.addr))
			case percpu:
				u32(uint32(int32(int64(relBase) - int64(s.addr) - 1)))
			default:
				u32(uint32(s.addr - relBase))
			}
		}
	}
	relativeBase := func() { label(); rbAt = len(b); b = le.AppendUint64(b, relBase) }
	num := func() { label(); u32(uint32(n)) }
	var markers []uint32
	names := func() {
		label()
		start := len(b)
		for i, s := range syms {
			if i%256 == 0 {
				markers = append(markers, uint32(len(b)-start))
			}
			rec := strings.ReplaceAll(string(s.typ)+s.name, "_read", "\x01")
			if len(rec) > 0x7f {
				b = append(b, byte(len(rec)&0x7f|0x80), byte(len(rec)>>7))
			} else {
				b = append(b, byte(len(rec)))
			}
			b = append(b, rec...)
		}
	}
	markerTable := func() {
		label()
		for _, m := range markers {
			u32(m)
		}
	}
	var index [256]uint16
	tokens := func() {
		label()
		start := len(b)
		for i := range 256 {
			index[i] = uint16(len(b) - start)
			switch {
			case i == 1:
				b = append(b, "_read"...)
			case i >= 0x20 && i < 0x7f:
				b = append(b, byte(i))
			default:
				b = append(b, "?!"...)
			}
			b = append(b, 0)
		}
	}
	tokenIndex := func() {
		label()
		for _, x := range index {
			b = le.AppendUint16(b, x)
		}
	}
	seqs := func() {
		label()
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int {
			return cmp.Or(strings.Compare(syms[x].name, syms[y].name), cmp.Compare(syms[x].addr, syms[y].addr))
		})
		for _, i := range order {
			b = append(b, byte(i>>16), byte(i>>8), byte(i))
		}
	}
	switch layout {
	case LayoutBaseRelative:
		offsets()
		relativeBase()
		num()
		names()
		markerTable()
		seqs()
		tokens()
		tokenIndex()
	case LayoutTablesLast:
		num()
		names()
		markerTable()
		tokens()
		tokenIndex()
		offsets()
		relativeBase()
		seqs()
	case LayoutPCRelative:
		num()
		names()
		markerTable()
		tokens()
		tokenIndex()
		offsets()
		seqs()
	}
	b = append(b, bytes.Repeat([]byte{0xcc}, 64)...)
	// The banner, then the ELF header and one program header.
	b = append(b, "Linux version 9.9.9-fake (nobody@nowhere) #1\n\x00"...)
	return b, rbAt
}

// fakeELF makes b a little-endian 64-bit x86 ELF file whose one PT_LOAD
// maps it whole at va (b's first 120 bytes are the headers').
func fakeELF(b []byte, va uint64) []byte {
	le := binary.LittleEndian
	h := b[:0:0]
	h = append(h, "\x7fELF\x02\x01\x01"...)
	h = append(h, make([]byte, 9)...)
	h = le.AppendUint16(h, 2)  // ET_EXEC
	h = le.AppendUint16(h, 62) // EM_X86_64
	h = le.AppendUint32(h, 1)  // EV_CURRENT
	h = le.AppendUint64(h, va) // entry
	h = le.AppendUint64(h, 64) // phoff
	h = le.AppendUint64(h, 0)  // shoff
	h = le.AppendUint32(h, 0)  // flags
	h = le.AppendUint16(h, 64) // ehsize
	h = le.AppendUint16(h, 56) // phentsize
	h = le.AppendUint16(h, 1)  // phnum
	h = le.AppendUint16(h, 64) // shentsize
	h = le.AppendUint16(h, 0)  // shnum
	h = le.AppendUint16(h, 0)  // shstrndx
	h = le.AppendUint32(h, 1)  // PT_LOAD
	h = le.AppendUint32(h, 5)  // R+X
	h = le.AppendUint64(h, 0)  // offset
	h = le.AppendUint64(h, va) // vaddr
	h = le.AppendUint64(h, va) // paddr
	h = le.AppendUint64(h, uint64(len(b)))
	h = le.AppendUint64(h, uint64(len(b)))
	h = le.AppendUint64(h, 4096) // align
	copy(b, h)
	return b
}

// fakeARM64Image writes syms' tables as an arm64 Image linked at
// fakeARM64Text: its header, the tables, then either (rela) a .rela.dyn
// of R_AARCH64_RELATIVE relocations whose words the Image leaves zero,
// relative_base's among them, or (without) packed relocations: the words
// hold their values, and 9,600 of them point at symbols.
func fakeARM64Image(layout string, syms []fakeSym, rela bool) []byte {
	le := binary.LittleEndian
	b, rbAt := fakeTables(layout, syms, false, fakeARM64Text, 0x1000)
	copy(b[56:], "ARM\x64")
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	if !rela {
		for i := range 1200 * 8 { // (one word in 8 is sampled)
			b = le.AppendUint64(b, syms[i%len(syms)].addr)
		}
		return b
	}
	var rels [][3]uint64
	if rbAt >= 0 {
		rels = append(rels, [3]uint64{fakeARM64Text + uint64(rbAt), 1027, le.Uint64(b[rbAt:])})
		le.PutUint64(b[rbAt:], 0)
	}
	// Zero words a pointer table's relocations fill.
	for range 100 {
		rels = append(rels, [3]uint64{fakeARM64Text + uint64(len(b)), 1027, syms[len(rels)%len(syms)].addr})
		b = le.AppendUint64(b, 0)
	}
	for _, r := range rels {
		b = le.AppendUint64(le.AppendUint64(le.AppendUint64(b, r[0]), r[1]), r[2])
	}
	return b
}
