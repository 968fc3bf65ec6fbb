// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time helpers for the parser's fast path. Every 64-bit
// /proc/kallsyms and System.map line has the form "%016lx %c %s" (s_show()
// in kernel/kallsyms.c; nm's output for System.map): 16 hex digits, a
// blank, the type, a blank, the name. The fast path reads the address and
// finds the end of the name 8 bytes at a time; any line it does not
// recognise goes through parseLine, which is the definition of the format.

const (
	ones8 = 0x0101010101010101
	high8 = 0x8080808080808080
)

// hex16 decodes the 16 ASCII hex digits at b[0:16]. ok is false if any of
// them is not a hex digit. Both 8-byte words go through each step
// together (the first digit is the low byte of a little-endian load).
func hex16(b []byte) (v uint64, ok bool) {
	_ = b[15]
	x := binary.LittleEndian.Uint64(b)
	y := binary.LittleEndian.Uint64(b[8:])
	if x == 'f'*ones8 {
		// "ffffffff": the upper half of every x86_64 kernel address
		// (and of 32-bit-looking ones printed with %px).
		lo, ok := hex8(y)
		return 0xffffffff<<32 | uint64(lo), ok
	}
	if (x|y)&high8 != 0 {
		return 0, false
	}
	// All bytes are below 0x80, so adding up to 0x50 to each never
	// carries into the next byte: each sum's high bit is one comparison.
	// digit: '0' <= c <= '9'; letter: 'a' <= c|0x20 <= 'f'.
	dx := (x + (0x80-'0')*ones8) &^ (x + (0x80-'9'-1)*ones8)
	dy := (y + (0x80-'0')*ones8) &^ (y + (0x80-'9'-1)*ones8)
	lx, ly := x|0x20*ones8, y|0x20*ones8
	lx = (lx + (0x80-'a')*ones8) &^ (lx + (0x80-'f'-1)*ones8)
	ly = (ly + (0x80-'a')*ones8) &^ (ly + (0x80-'f'-1)*ones8)
	if (dx|lx)&(dy|ly)&high8 != high8 {
		return 0, false
	}
	// Digit value: the low nibble, plus 9 for a letter.
	x = x&(0x0f*ones8) + (lx>>7&ones8)*9
	y = y&(0x0f*ones8) + (ly>>7&ones8)*9
	return uint64(pack8(x))<<32 | uint64(pack8(y)), true
}

// hex8 decodes 8 ASCII hex digits, the first in the low byte of x; ok is
// false if any byte is not one (v is then meaningless). No branch.
func hex8(x uint64) (v uint32, ok bool) {
	// As in hex16, with one test for both conditions: every byte is a
	// digit or a letter and below 0x80 (a carry out of a byte at or
	// above 0x80 may spoil its neighbour's flags: it is refused anyway).
	d := (x + (0x80-'0')*ones8) &^ (x + (0x80-'9'-1)*ones8)
	l := x | 0x20*ones8
	l = (l + (0x80-'a')*ones8) &^ (l + (0x80-'f'-1)*ones8)
	return pack8(x&(0x0f*ones8) + (l>>7&ones8)*9), (d|l)&^x&high8 == high8
}

// pack8 packs 8 digit values, most significant first in memory order
// (lowest byte), into 32 bits.
func pack8(d uint64) uint32 {
	d = bits.ReverseBytes64(d)
	d = (d | d>>4) & 0x00ff00ff00ff00ff
	d = (d | d>>8) & 0x0000ffff0000ffff
	return uint32(d | d>>16)
}

// ctlMask32 returns a mask of the bytes of b[:32] below 0x21, exact up to
// and including the lowest set bit (see firstCtl), computed without a
// branch: each word's flags (bit 7 of each byte) are gathered into 8 bits
// by one multiplication.
func ctlMask32(b []byte) uint32 {
	_ = b[31]
	return ctlMask8(binary.LittleEndian.Uint64(b)) | ctlMask8(binary.LittleEndian.Uint64(b[8:]))<<8 |
		ctlMask8(binary.LittleEndian.Uint64(b[16:]))<<16 | ctlMask8(binary.LittleEndian.Uint64(b[24:]))<<24
}

// ctlMask8 is ctlMask32 for the 8 bytes of x (the first in the low byte).
func ctlMask8(x uint64) uint32 {
	t := (x - 0x21*ones8) &^ x & high8
	return uint32((t >> 7) * gather8 >> 56)
}

// gather8 multiplied by a word whose bytes are 0 or 1 puts byte k's bit
// in bit 56+k.
const gather8 = 0x0102040810204080

// firstCtl returns the index of the first byte of b below 0x21 (a blank,
// a tab, a line end or another control byte), or len(b).
func firstCtl(b []byte) int {
	i := 0
	// 16 bytes a step: most names end within the first two steps. The
	// high bit of a byte is set when it is below 0x21 and not above 0x7f.
	// Borrows only run upwards, from a byte that is itself below 0x21, so
	// the lowest flagged byte is exact.
	for ; i+16 <= len(b); i += 16 {
		x := binary.LittleEndian.Uint64(b[i:])
		y := binary.LittleEndian.Uint64(b[i+8:])
		tx := (x - 0x21*ones8) &^ x & high8
		ty := (y - 0x21*ones8) &^ y & high8
		if tx|ty != 0 {
			if tx != 0 {
				return i + bits.TrailingZeros64(tx)>>3
			}
			return i + 8 + bits.TrailingZeros64(ty)>>3
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x21 {
			return i
		}
	}
	return len(b)
}
