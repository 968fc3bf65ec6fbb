// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"fmt"
	mathbits "math/bits"
)

// A compact snapshot's hash tables are packed (packTables), and a lookup
// probes them in place (packedTables): loading one fills no table, so a
// snapshot opened for a few lookups costs neither the time to spread its
// slots nor 12 bytes a symbol of memory (docs/benchmarks.md has the
// figures).

// snapTables is where the parts of a compact snapshot's tables are (see
// compactTables).
type snapTables struct {
	at, recsAt, linksAt, end uint64 // file offsets
	nslot, used, nlink       uint64
	w                        uint // bits a stored symbol number takes (tableWidth)
}

// compactTables is where the tables of compact snapshot b, whose frames
// end at framesEnd, are, and their counts of slots and links, from the
// header alone (packTables).
func compactTables(b []byte, framesEnd uint64) snapTables {
	le := binary.LittleEndian
	t := snapTables{nslot: uint64(le.Uint32(b[32:])), nlink: uint64(le.Uint32(b[36:])), used: uint64(le.Uint32(b[20:]))}
	t.w = tableWidth(t.nslot)
	t.at = align8(framesEnd)
	t.recsAt = t.at + 8*((t.nslot+63)/64)
	t.linksAt = t.recsAt + packedBytes(t.used, 32+t.w)
	t.end = t.linksAt + packedBytes(2*t.nlink, t.w)
	return t
}

// tableWidth is the bits a compact snapshot stores a symbol number of its
// tables and chain links in (an index+1, a symbol): every table has more
// slots than symbols (tableSize), so nslot's width is enough.
func tableWidth(nslot uint64) uint { return uint(max(mathbits.Len64(nslot), 1)) }

// packedBytes is the size of n numbers of w bits packed (packBits).
func packedBytes(n uint64, w uint) uint64 { return 8 * ((n*uint64(w) + 63) / 64) }

// packBits appends vals, w bits each (at most 64), to out as
// little-endian 64-bit words, the first number in the first word's low
// bits; a number may straddle two words, and the last word is padded
// with zeros.
func packBits(out []byte, vals []uint64, w uint) []byte {
	le := binary.LittleEndian
	var acc uint64
	n := uint(0) // bits in acc
	for _, v := range vals {
		acc |= v << n
		if n+w < 64 {
			n += w
			continue
		}
		out = le.AppendUint64(out, acc)
		acc, n = v>>(64-n), n+w-64 // (a shift by 64 gives 0)
	}
	if n > 0 {
		out = le.AppendUint64(out, acc)
	}
	return out
}

// unpackBits is the k-th number of w bits (at most 64) that packBits
// packed into words, which hold it.
func unpackBits(words []byte, k uint64, w uint) uint64 {
	le := binary.LittleEndian
	pos := k * uint64(w)
	q, off := 8*(pos/64), uint(pos%64)
	v := le.Uint64(words[q:]) >> off
	if off+w > 64 {
		v |= le.Uint64(words[q+8:]) << (64 - off)
	}
	return v & (1<<w - 1)
}

// packTables is the tables and chain links as a compact snapshot stores
// them, from their records (8 bytes each: a slot's hash and index+1, then
// a link's symbol and next index+1): a bitmap of the slots in use (bit i
// of word i/64, little-endian words); then, for each slot in use, in
// order, its hash and index+1 together, 32+w bits (packBits); then the
// links' two numbers, w bits each. A third of a table's slots are empty
// (tableSize), and a kernel's symbol numbers take 17-21 bits. It returns
// how many slots are in use.
func packTables(records []byte, nslot uint32) ([]byte, uint32, error) {
	le := binary.LittleEndian
	n, w := int(nslot), tableWidth(uint64(nslot))
	out := make([]byte, 8*((n+63)/64), 8*((n+63)/64)+len(records))
	var recs, links []uint64
	fits := func(x uint32) error {
		if uint64(x)>>w != 0 { // an index's never are: see tableWidth
			return fmt.Errorf("symbol number %d does not fit the %d bits of a table of %d slots", x, w, nslot)
		}
		return nil
	}
	for i := range n {
		h, x := le.Uint32(records[slotRecord*i:]), le.Uint32(records[slotRecord*i+4:])
		if x == 0 { // index+1: 0 is empty
			continue
		}
		if err := fits(x); err != nil {
			return nil, 0, err
		}
		b := out[8*(i/64):]
		le.PutUint64(b, le.Uint64(b)|1<<(i%64))
		recs = append(recs, uint64(h)|uint64(x)<<32)
	}
	for r := records[slotRecord*n:]; len(r) >= 4; r = r[4:] {
		x := le.Uint32(r)
		if err := fits(x); err != nil {
			return nil, 0, err
		}
		links = append(links, uint64(x))
	}
	out = packBits(out, recs, 32+w)
	return packBits(out, links, w), uint32(len(recs)), nil
}

// bitmapOK reports whether bitmap, of words for nslot slots, has exactly
// used bits set, all of them below nslot.
func bitmapOK(bitmap []byte, nslot, used uint64) bool {
	le := binary.LittleEndian
	set := uint64(0)
	for w := 0; w < len(bitmap)/8; w++ {
		bits := le.Uint64(bitmap[8*w:])
		if last := uint64(w+1) * 64; last > nslot && bits>>(64-(last-nslot)) != 0 {
			return false
		}
		set += uint64(mathbits.OnesCount64(bits))
	}
	return set == used
}

// packedTables is an index's hash tables as a compact snapshot stores
// them (packTables), read in place: slot i is in use if bit i of the
// bitmap is set, and its record is then the rank-th, rank being the
// number of bits set before i.
type packedTables struct {
	bitmap []byte   // nslot bits
	rank   []uint32 // rank[k]: the bits set in the bitmap's words before word k
	recs   []byte   // hash | index+1 << 32, w bits each
	w      uint
	nslot  uint32
}

// packedRanks is the length of the ranks of tables t (packedTables.rank).
func packedRanks(t snapTables) int { return int(t.recsAt-t.at) / 8 }

// newPackedTables reads the tables t of compact snapshot file in place,
// their bitmap checked (bitmapOK), with rank (packedRanks long) for their
// ranks.
func newPackedTables(file []byte, t snapTables, rank []uint32) *packedTables {
	le := binary.LittleEndian
	p := &packedTables{bitmap: file[t.at:t.recsAt], recs: file[t.recsAt:t.linksAt], w: 32 + t.w, nslot: uint32(t.nslot), rank: rank}
	n := uint32(0)
	for k := range p.rank {
		p.rank[k] = n
		n += uint32(mathbits.OnesCount64(le.Uint64(p.bitmap[8*k:])))
	}
	return p
}

// at is slot i (i < nslot).
func (p *packedTables) at(i uint32) slot {
	word := binary.LittleEndian.Uint64(p.bitmap[8*(i/64):])
	bit := uint64(1) << (i % 64)
	if word&bit == 0 {
		return slot{}
	}
	r := p.rank[i/64] + uint32(mathbits.OnesCount64(word&(bit-1)))
	v := unpackBits(p.recs, uint64(r), p.w)
	return slot{uint32(v), uint32(v >> 32)}
}

// slot is slot i of ix's tables, where they are stored.
func (ix *Index) slot(i uint32) slot {
	if ix.packed != nil {
		return ix.packed.at(i)
	}
	return ix.slots[i]
}

// nslot is the number of slots of ix's tables.
func (ix *Index) nslot() int {
	if ix.packed != nil {
		return int(ix.packed.nslot)
	}
	return len(ix.slots)
}

// tableSlots is ix's tables as slots: a copy if they are packed (for the
// writers, which read every slot once).
func (ix *Index) tableSlots() []slot {
	if ix.packed == nil {
		return ix.slots
	}
	out := make([]slot, ix.packed.nslot)
	for i := range out {
		out[i] = ix.packed.at(uint32(i))
	}
	return out
}
