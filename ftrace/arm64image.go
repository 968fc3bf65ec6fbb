package ftrace

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// arm64's Image header (Documentation/arm64/booting.rst; head.S), the
// Image's first 64 bytes, at _text.
const (
	a64HeaderSize = 64
	a64Flags      = 24 // flags: bit 0 set for a big-endian kernel
	a64Reserved   = 32 // res2, res3, res4: zero
	a64Magic      = 56 // "ARM\x64"
	a64FlagBE     = 1
)

// The bounds of .rela.dyn in arch/arm64/kernel/vmlinux.lds.S: the
// relocations __relocate_kernel (head.S) applies to the image at boot.
const (
	relaStartSym = "__rela_start"
	relaEndSym   = "__rela_end"
	relaEntSize  = 24 // Elf64_Rela
)

// kaslrAlign divides every offset arm64's KASLR moves the kernel by:
// kaslr_early_init() picks a 2 MiB-aligned offset, to which head.S adds
// where within 2 MiB the image was loaded, a multiple of 64 KiB
// (SEGMENT_ALIGN: booting.rst, the EFI stub's EFI_KIMG_ALIGN).
const kaslrAlign = 64 << 10

// isARM64Image: arm64's Image header: its magic at 56, after three zero
// reserved words (which no text, such as a tracefs list, has).
func isARM64Image(head []byte) bool {
	return len(head) >= a64HeaderSize && string(head[a64Magic:a64Magic+4]) == "ARM\x64" &&
		bytes.Count(head[a64Reserved:a64Magic], []byte{0}) == a64Magic-a64Reserved
}

// arm64Image reads the call sites of an arm64 Image (arch/arm64/boot's
// objcopy -O binary of vmlinux, /boot/vmlinuz on Debian's arm64): vmlinux's
// loaded bytes from _text, without symbols, so ix must give _text and the
// table's bounds (a System.map does; a kallsyms without
// CONFIG_KALLSYMS_ALL lists no data). The Image keeps vmlinux's zero
// words (--no-apply-dynamic-relocs) and .rela.dyn, whose relocation for
// each word says where the table was linked: the KASLR offset of ix.
func arm64Image(r io.ReaderAt, name string, ix *kallsyms.Index, head []byte) (*Sites, error) {
	var order binary.ByteOrder = binary.LittleEndian
	if binary.LittleEndian.Uint64(head[a64Flags:])&a64FlagBE != 0 {
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
// table is linked where a relocation is found for each of its zero words,
// at an offset from ix's start that kaslrAlign divides (0 for a
// System.map, whose addresses are link-time).
func a64Relocate(r io.ReaderAt, name string, ix *kallsyms.Index, text, start uint64, words []uint64, order binary.ByteOrder) (uint64, error) {
	rs, ok1 := ix.Find(kallsyms.Vmlinux, relaStartSym, 1)
	re, ok2 := ix.Find(kallsyms.Vmlinux, relaEndSym, 1)
	if !ok1 || !ok2 {
		return 0, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("its call-site table holds zero words, which relocations fill at boot, and %s lists no %s and %s to find them by", ix.Source(), relaStartSym, relaEndSym)}
	}
	if re.Address < rs.Address || rs.Address < text || (re.Address-rs.Address)%relaEntSize != 0 {
		return 0, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("%s's %s..%s (%#x..%#x) is no table of relocations", ix.Source(), relaStartSym, relaEndSym, rs.Address, re.Address)}
	}
	each := func(fn func(relative)) error {
		off := rs.Address - text
		rd := bufio.NewReaderSize(io.NewSectionReader(r, int64(off), int64(re.Address-rs.Address)), 64<<10)
		var ent [relaEntSize]byte
		for {
			if _, err := io.ReadFull(rd, ent[:]); err == io.EOF {
				return nil
			} else if err != nil {
				return &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("reading its relocations (%s, file offset %#x): %v", relaStartSym, off, err)}
			}
			if uint32(order.Uint64(ent[8:])) == uint32(elf.R_AARCH64_RELATIVE) {
				fn(relative{order.Uint64(ent[0:]), order.Uint64(ent[16:])})
			}
		}
	}
	// ix's addresses are link-time (a System.map's) where the relocations
	// at the table's address fill each zero word: one pass, nothing kept.
	filled := slices.Clone(words)
	end := start + 8*uint64(len(words))
	if err := each(func(r relative) {
		if r.off >= start && r.off < end && (r.off-start)%8 == 0 && filled[(r.off-start)/8] == 0 {
			filled[(r.off-start)/8] = r.addend
		}
	}); err != nil {
		return 0, err
	}
	if !slices.Contains(filled, 0) {
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
	// kept if the other zero words have theirs. Two places are one too
	// many.
	first := slices.Index(words, 0)
	last := first
	for i, w := range words {
		if w == 0 {
			last = i
		}
	}
	fills := func(base uint64) bool {
		if _, ok := at(base + 8*uint64(last)); !ok {
			return false
		}
		for i, w := range words {
			if _, ok := at(base + 8*uint64(i)); w == 0 && !ok {
				return false
			}
		}
		return true
	}
	var link []uint64
	for _, c := range rels {
		base := c.off - 8*uint64(first)
		if (start-base)%kaslrAlign != 0 || (len(link) > 0 && link[len(link)-1] == base) || !fills(base) {
			continue
		}
		if link = append(link, base); len(link) == 2 {
			return 0, &Error{File: name, Err: ErrMismatch, Msg: fmt.Sprintf("relocations fill its call-site table's zero words at %#x and at %#x: which is the table's is not known", link[0], link[1])}
		}
	}
	if len(link) == 0 {
		return 0, &Error{File: name, Err: ErrMismatch, Msg: fmt.Sprintf("no relocations between %s and %s fill its call-site table's %d zero words: another kernel's Image, or symbols of another build", relaStartSym, relaEndSym, zeros(words))}
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
