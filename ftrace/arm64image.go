// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bufio"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// The bounds of .rela.dyn in arch/arm64/kernel/vmlinux.lds.S: the
// relocations __relocate_kernel (head.S) applies to the image at boot;
// later kernels' relocate_kernel() (arch/arm64/kernel/pi/relocate.c: its
// rela_start, prefixed __pi_ as all of pi/'s symbols) does (Debian's
// 6.12 has these).
const (
	relaStartSym   = "__rela_start"
	relaEndSym     = "__rela_end"
	piRelaStartSym = "__pi_rela_start"
	piRelaEndSym   = "__pi_rela_end"
	relaEntSize    = 24 // Elf64_Rela
)

// kaslrAlign divides every offset arm64's KASLR moves the kernel by:
// kaslr_early_init() picks a 2 MiB-aligned offset, to which head.S adds
// where within 2 MiB the image was loaded, a multiple of 64 KiB
// (SEGMENT_ALIGN: booting.rst, the EFI stub's EFI_KIMG_ALIGN).
const kaslrAlign = 64 << 10

// arm64Image reads the call sites of an arm64 Image (arch/arm64/boot's
// objcopy -O binary of vmlinux, /boot/vmlinuz on Debian's arm64): vmlinux's
// loaded bytes from _text, without symbols, so ix must give _text and the
// table's bounds (a System.map does; a kallsyms without
// CONFIG_KALLSYMS_ALL lists no data). The Image keeps vmlinux's zero
// words (--no-apply-dynamic-relocs) and .rela.dyn, whose relocation for
// each word says where the table was linked: the KASLR offset of ix.
func arm64Image(r io.ReaderAt, name string, ix *kallsyms.Index, head []byte) (*Sites, error) {
	var order binary.ByteOrder = binary.LittleEndian
	if kimage.ARM64BigEndian(head) {
		order = binary.BigEndian
	}
	text, ok := ix.Find(kallsyms.Vmlinux, textSym, 1)
	start, ok1 := ix.Find(kallsyms.Vmlinux, startSym, 1)
	stop, ok2 := ix.Find(kallsyms.Vmlinux, stopSym, 1)
	if !ok || !ok1 || !ok2 {
		return nil, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("an arm64 Image has no symbols, and %s lists no %s, %s and %s to find its call-site table by (a kallsyms without CONFIG_KALLSYMS_ALL, as Debian's arm64 kernels have: give the kernel's System.map)", ix.Source(), textSym, startSym, stopSym)}
	}
	size := stop.Address - start.Address
	if stop.Address < start.Address || start.Address < text.Address || size%8 != 0 || size/8 > maxSites {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("%s's %s..%s (%#x..%#x, _text %#x) is no table of 8-byte addresses", ix.Source(), startSym, stopSym, start.Address, stop.Address, text.Address)}
	}
	words, err := readTable(r, name, start.Address-text.Address, size, 8, order)
	if err != nil {
		return nil, err
	}
	slide := uint64(0)
	if slices.Contains(words, 0) {
		if slide, err = a64Relocate(r, name, ix, text.Address, start.Address, words, order); err != nil {
			return nil, err
		}
	}
	return newSites(name, ix, words, slide)
}

// relative is one R_AARCH64_RELATIVE relocation: the word at link-time
// address off becomes addend plus the KASLR offset.
type relative struct{ off, addend uint64 }

// a64Relocate fills the table's zero words from the Image's .rela.dyn, as
// __relocate_kernel does at boot, and returns the KASLR offset of ix's
// addresses: the relocations' offsets are link-time addresses, and the
// table is linked at ix's address (a System.map's, link-time) when a
// relocation is there for each of its zero words, else where relocations
// are found for the most of them, at an offset from ix's start that
// kaslrAlign divides.
func a64Relocate(r io.ReaderAt, name string, ix *kallsyms.Index, text, start uint64, words []uint64, order binary.ByteOrder) (uint64, error) {
	rs, ok1 := ix.Find(kallsyms.Vmlinux, relaStartSym, 1)
	re, ok2 := ix.Find(kallsyms.Vmlinux, relaEndSym, 1)
	if !ok1 || !ok2 {
		rs, ok1 = ix.Find(kallsyms.Vmlinux, piRelaStartSym, 1)
		re, ok2 = ix.Find(kallsyms.Vmlinux, piRelaEndSym, 1)
	}
	if !ok1 || !ok2 {
		return 0, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("its call-site table holds zero words, which relocations fill at boot, and %s lists no %s and %s (nor %s and %s) to find them by", ix.Source(), relaStartSym, relaEndSym, piRelaStartSym, piRelaEndSym)}
	}
	if re.Address < rs.Address || rs.Address < text || (re.Address-rs.Address)%relaEntSize != 0 {
		return 0, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("%s's %s..%s (%#x..%#x) is no table of relocations", ix.Source(), rs.Name, re.Name, rs.Address, re.Address)}
	}
	each := func(fn func(relative)) error {
		off, size := rs.Address-text, re.Address-rs.Address
		rd := bufio.NewReaderSize(io.NewSectionReader(r, int64(off), int64(size)), 64<<10)
		var ent [relaEntSize]byte
		for n := uint64(0); n < size; n += relaEntSize {
			if _, err := io.ReadFull(rd, ent[:]); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF // the file ends first
				}
				return &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("reading its relocations (%s, file offset %#x, %d bytes): %v after %d bytes", rs.Name, off, size, err, n)}
			}
			if uint32(order.Uint64(ent[8:])) == uint32(elf.R_AARCH64_RELATIVE) {
				fn(relative{order.Uint64(ent[0:]), order.Uint64(ent[16:])})
			}
		}
		return nil
	}
	// ix's addresses are link-time (a System.map's) where a relocation
	// exists for each zero word at the table's address (linker padding
	// has one with a zero addend: 341 of Debian's 6.12 50,950 words): one
	// pass, nothing kept.
	filled, got, found := slices.Clone(words), make([]bool, len(words)), 0
	end := start + 8*uint64(len(words))
	if err := each(func(r relative) {
		if r.off >= start && r.off < end && (r.off-start)%8 == 0 {
			if i := (r.off - start) / 8; words[i] == 0 && !got[i] {
				filled[i], got[i] = r.addend, true
				found++
			}
		}
	}); err != nil {
		return 0, err
	}
	zero := zeros(words)
	if found == zero {
		copy(words, filled)
		return 0, nil
	}
	// Else the relative relocations are kept (16 bytes of each 24 read),
	// sorted, and searched for the table.
	var rels []relative
	if err := each(func(r relative) { rels = append(rels, r) }); err != nil {
		return 0, err
	}
	slices.SortFunc(rels, func(a, b relative) int { return cmp.Compare(a.off, b.off) })
	at := func(off uint64) (uint64, bool) {
		i, ok := slices.BinarySearchFunc(rels, off, func(r relative, off uint64) int { return cmp.Compare(r.off, off) })
		if !ok {
			return 0, false
		}
		return rels[i].addend, true
	}
	// Where the table was linked, now that it is not at ix's address:
	// each relocation that could be the first zero word's is tried, and
	// the place where relocations exist for the most zero words (three
	// in four at least: padding may have none) is the table's. Two such
	// places are one too many.
	first := slices.Index(words, 0)
	fills := func(base uint64) int {
		found, missed := 0, 0
		for i, w := range words {
			if w != 0 {
				continue
			}
			if _, ok := at(base + 8*uint64(i)); ok {
				found++
			} else if missed++; missed*4 > zero {
				return 0
			}
		}
		return found
	}
	var link []uint64
	best := 0
	for _, c := range rels {
		base := c.off - 8*uint64(first)
		if (start-base)%kaslrAlign != 0 || slices.Contains(link, base) {
			continue
		}
		switch n := fills(base); {
		case n > best:
			best, link = n, []uint64{base}
		case n == best && n > 0:
			link = append(link, base)
		}
	}
	if len(link) > 1 {
		return 0, &Error{File: name, Err: ErrMismatch, Msg: fmt.Sprintf("relocations fill its call-site table's zero words as well at %#x as at %#x: which is the table's is not known", link[0], link[1])}
	}
	if len(link) == 0 {
		return 0, &Error{File: name, Err: ErrMismatch, Msg: fmt.Sprintf("no relocations between %s and %s fill its call-site table's %d zero words: another kernel's Image, or symbols of another build", rs.Name, re.Name, zero)}
	}
	for i, w := range words {
		if w == 0 {
			words[i], _ = at(link[0] + 8*uint64(i))
		}
	}
	return start - link[0], nil
}

func zeros(words []uint64) int {
	n := 0
	for _, w := range words {
		if w == 0 {
			n++
		}
	}
	return n
}
