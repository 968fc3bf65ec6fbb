// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/par"
)

// Raw snapshot format, version 6: the index as it sits in memory, hash
// tables and chains included, uncompressed, so that loading is one map
// (or read) and one pass that checksums and validates it, and the arrays
// are used in place (no parse, no hashing, no table building, nothing
// decoded later). It is about three times the size of a compact (version 11)
// snapshot, which stores the same tables but decodes its names and records
// chunk by chunk when lookups first need them. All integers
// little-endian. (Version 2 stored 0 for the symbols' flags, which the
// loader then wrote: a read-only mapping cannot be written. Version 3
// summed the chunks with xxhash64, which ran at 11.7 GB/s on this
// project's VM where CRC-32 runs at 37: the chunk sums were half of
// loading a raw snapshot. Version 4 was version 6 without the padding at
// the end. This build reads version 6 only: docs/snapshot-format.md.)
//
//	header (48 bytes):
//	  [8] magic "KLPSNAP\x00", u32 version (6), u32 flags (bit 0: LTO;
//	  bit 1, always with bit 0: LTO keys for vmlinux only, see
//	  Index.ltoSym: a file with bit 0 alone was written when modules'
//	  tables were keyed without the suffix too, and is refused),
//	  u64 payload length, u64 checksum: xxhash64 of the header's first 24
//	  bytes, its last 16 and the CRC-32s (IEEE, u32 each) of the
//	  payload's 256 KiB chunks,
//	  u32 objects, u32 symbols, u32 table slots, u32 name bytes
//	payload, each part 8-byte aligned (zero padding):
//	  source name (u32 length, bytes)
//	  objects: 40 bytes each: u32 name offset, u16 name length, u16 flags
//	           (bit 0 pseudo), u32 first symbol, u32 end symbol, u32 table
//	           offset, u32 table size, u64 low, u64 high address
//	  symbols: 16 bytes each (u64 address, u32 name offset, u16 name
//	           length, u8 type, u8 flags: 1 if the symbol's chain goes
//	           on, which the loader checks against the chains)
//	  chains:  u32 per symbol (index+1 of the next same-named one, or 0)
//	  tables:  8 bytes per slot (u32 name hash, u32 index+1 or 0)
//	  names
//	  padding: zeros, less than 2 MiB, that make the file a whole number
//	           of 2 MiB (see rawPadding)
const (
	rawFlagLTO        = 1
	rawFlagLTOVmlinux = 2 // (with rawFlagLTO) modules' keys are exact
	rawVersion        = 6
	rawHeaderSize     = 48
	rawObjRecord      = 40
	symRecord         = 16
)

// isRawVersion reports whether v is a raw snapshot version this build
// reads.
func isRawVersion(v uint32) bool { return v == rawVersion }

// rawPadding is the number of zero bytes a raw snapshot of size bytes
// ends with: up to the next 2 MiB, where that adds at most a quarter.
// The page cache then holds the whole file in 2 MiB folios (written in one
// call, or read under mapFile's advice), each mapped by one page-table
// entry; a tail in small folios is mapped a 4 KiB page at a time. On this
// project's VM, touching the 6.9 MB corpus snapshot once mapped took
// 0.19 ms, its 0.9 MB tail 0.12 ms of it; padded to 8 MiB, 0.09 ms.
func rawPadding(size int) int {
	const huge = hugepage.Size
	pad := (huge - size%huge) % huge
	if size < huge || pad > size/4 {
		return 0
	}
	return pad
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// WriteSnapshotRaw writes ix to w in the raw (version 6) snapshot format.
func (ix *Index) WriteSnapshotRaw(w io.Writer) error {
	if ix.closed {
		return fmt.Errorf("%s: %w", ix.source, ErrClosed)
	}
	if err := ix.DecodeAll(); err != nil {
		return err
	}
	le := binary.LittleEndian
	var names []byte
	// The header goes first in the same buffer, and the file is written
	// in one call: the page cache then holds it in folios as large as
	// the write allows (2 MiB), which a mapping maps with a page-table
	// entry each. Writing the 48-byte header first left the first 2 MiB
	// in folios grown one order at a time from a single page, and
	// mapping those costs a hypervisor exit per group of page-table
	// entries under virtualization (no page fault): most of a raw load
	// there.
	p := make([]byte, rawHeaderSize, ix.rawSize())
	pad := func() {
		for len(p)%8 != 0 {
			p = append(p, 0)
		}
	}
	p = le.AppendUint32(p, uint32(len(ix.source)))
	p = append(p, ix.source...)
	pad()
	for i := range ix.objs {
		o := &ix.objs[i]
		p, names = appendObjRecord(p, names, o)
		p = le.AppendUint32(p, o.off)
		p = le.AppendUint32(p, o.size)
		p = le.AppendUint64(p, o.lo)
		p = le.AppendUint64(p, o.hi)
	}
	p, names = ix.appendSymRecords(p, names)
	for _, n := range ix.next {
		p = le.AppendUint32(p, n)
	}
	pad()
	for _, s := range ix.tableSlots() {
		p = le.AppendUint32(p, s.hash)
		p = le.AppendUint32(p, s.idx)
	}
	p = append(p, names...)
	p = append(p, make([]byte, rawPadding(len(p)))...)

	hdr, payload := p[:rawHeaderSize], p[rawHeaderSize:]
	copy(hdr, snapshotMagic)
	le.PutUint32(hdr[8:], rawVersion)
	if ix.lto {
		le.PutUint32(hdr[12:], rawFlagLTO|rawFlagLTOVmlinux)
	}
	le.PutUint64(hdr[16:], uint64(len(payload)))
	le.PutUint32(hdr[32:], uint32(len(ix.objs)))
	le.PutUint32(hdr[36:], uint32(len(ix.syms)))
	le.PutUint32(hdr[40:], uint32(ix.nslot()))
	le.PutUint32(hdr[44:], uint32(len(names)))
	le.PutUint64(hdr[24:], rawChecksum(hdr, payload))
	_, err := w.Write(p)
	return err
}

// rawSize is the size of ix's raw snapshot (the writer's buffer, allocated
// once).
func (ix *Index) rawSize() int {
	var nname int
	for i := range ix.objs {
		nname += len(ix.objs[i].name)
	}
	for i := range ix.syms {
		nname += int(ix.syms[i].nlen)
	}
	at := rawOffsetsOf(uint64(len(ix.source)), uint64(len(ix.objs)), uint64(len(ix.syms)), uint64(ix.nslot()), uint64(nname))
	n := rawHeaderSize + int(at.end)
	return n + rawPadding(n)
}

// rawOffsets are the payload offsets of a raw snapshot's sections (see
// the format), and where the names end: the layout, computed once for the
// writer's size (rawSize) and the loader (rawLayout).
type rawOffsets struct{ src, obj, sym, next, slot, names, end uint64 }

// rawOffsetsOf lays the sections out from their counts: the source name's
// bytes, objects, symbols, table slots and name bytes.
func rawOffsetsOf(nsrc, nobj, nsym, nslot, nname uint64) rawOffsets {
	var o rawOffsets
	o.src = 4 // after the source name's length
	o.obj = align8(o.src + nsrc)
	o.sym = o.obj + nobj*rawObjRecord
	o.next = o.sym + nsym*symRecord
	o.slot = align8(o.next + nsym*4)
	o.names = o.slot + nslot*8
	o.end = o.names + nname
	return o
}

// WriteSnapshotRawFile writes ix to path atomically in the raw format.
func (ix *Index) WriteSnapshotRawFile(path string) error {
	return atomicfile.Write(path, ix.WriteSnapshotRaw)
}

// rawChecksum is xxhash64 of the header (less its checksum field) and
// of the CRC-32s of the payload's 256 KiB chunks, which are summed on all
// cores.
func rawChecksum(hdr, payload []byte) uint64 {
	n := rawChunks(len(payload))
	sums := make([]byte, rawSumSize*n)
	par.For(runtime.GOMAXPROCS(0), n, func(i int) { rawChunkSum(sums, payload, i) })
	return rawChecksumOf(hdr, sums)
}

// rawChunk is the size of the payload chunks summed apart.
const rawChunk = 256 << 10 // 27 for a 6.9 MB payload: the cores finish together

// rawSumSize is the size of a chunk's sum in the checksummed list.
const rawSumSize = 4

// rawChunks is the number of chunks of a payload of n bytes.
func rawChunks(n int) int { return (n + rawChunk - 1) / rawChunk }

// rawChunkSum stores the CRC-32 of the payload's chunk i in sums. CRC-32
// (hash/crc32's carry-less multiply code on amd64, the CRC instructions on
// arm64) is there to catch a damaged file, as xxhash64 was, at three times
// its speed; forged files are the validation's business (rawCheck).
func rawChunkSum(sums, payload []byte, i int) {
	c := payload[i*rawChunk : min((i+1)*rawChunk, len(payload))]
	binary.LittleEndian.PutUint32(sums[rawSumSize*i:], crc32.ChecksumIEEE(c))
}

// rawChecksumOf is the checksum from the header and the chunks' sums.
func rawChecksumOf(hdr, sums []byte) uint64 {
	d := xxhash.New()
	d.Write(hdr[:24])
	d.Write(hdr[32:rawHeaderSize])
	d.Write(sums)
	return d.Sum64()
}

// hostLE: the arrays are used in place only on a little-endian host.
var hostLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// loadRawSnapshot validates and loads a raw snapshot, using its arrays in
// place. Every count, offset, name and chain is checked here, and every
// table entry where a lookup reads it (Index.find): a forged file can make
// lookups miss, never loop, read out of bounds or panic. A file whose
// checksum does not match is reported as such, whatever else is wrong
// with it.
//
// sums, when the reader computed them (readRegular), are the payload
// chunks' hashes; nil means compute them here, in the same pass as the
// validation: each worker hashes a chunk and checks the records in it
// while they are in its cache, and one wake-up of the second core serves
// both (a separate pass for each costs about a third more).
func loadRawSnapshot(name string, b, sums []byte, lto bool) (*Index, error) {
	le := binary.LittleEndian
	if len(b) < rawHeaderSize {
		return nil, snapErr(name, "truncated header (%d bytes)", len(b))
	}
	flags := le.Uint32(b[12:])
	switch flags {
	case 0, rawFlagLTO | rawFlagLTOVmlinux:
	case rawFlagLTO:
		return nil, snapErr(name, "written with --lto by an older klpresolve, whose tables matched module symbols without their .llvm suffix too (the kernel never did): write it again")
	default:
		return nil, snapErr(name, "unknown flags %#x", flags)
	}
	p := b[rawHeaderSize:]
	if plen := le.Uint64(b[16:]); plen > uint64(len(p)) {
		return nil, snapErr(name, "truncated: %d bytes, its header says %d", len(b), plen+rawHeaderSize)
	} else if plen != uint64(len(p)) {
		return nil, snapErr(name, "payload is %d bytes, header says %d", len(p), plen)
	}
	nchunk := rawChunks(len(p))
	if len(sums) != rawSumSize*nchunk {
		sums = nil
	}
	ix, lay, err := rawLayout(name, b)
	if err != nil {
		sum := rawChecksumOf(b[:rawHeaderSize], sums)
		if sums == nil {
			sum = rawChecksum(b[:rawHeaderSize], p)
		}
		if sum != le.Uint64(b[24:]) {
			return nil, snapErr(name, "checksum mismatch (file corrupted)")
		}
		return nil, err
	}
	c := newRawCheck(name, ix, nchunk)
	hash := sums == nil
	if hash {
		sums = make([]byte, rawSumSize*nchunk)
	}
	par.For(runtime.GOMAXPROCS(0), nchunk, func(i int) {
		if hash {
			rawChunkSum(sums, p, i)
		}
		from, to := uint64(i*rawChunk), uint64(min((i+1)*rawChunk, len(p)))
		lo, hi := lay.symbols(from, to)
		c.check(ix, i, lo, hi)
	})
	if rawChecksumOf(b[:rawHeaderSize], sums) != le.Uint64(b[24:]) {
		return nil, snapErr(name, "checksum mismatch (file corrupted)")
	}
	if err := c.result(); err != nil {
		return nil, err
	}
	if lto && !ix.lto {
		return nil, fmt.Errorf("%s: %w", name, ErrSnapshotExact)
	}
	return ix, nil
}

// rawSections is where a raw snapshot's symbol records are in its
// payload.
type rawSections struct{ symAt, nsym uint64 }

// symbols is the symbols [lo, hi) whose records start in payload[from:to];
// consecutive ranges partition the symbols.
func (l rawSections) symbols(from, to uint64) (lo, hi uint32) {
	first := func(x uint64) uint32 {
		if x <= l.symAt {
			return 0
		}
		return uint32(min((x-l.symAt+symRecord-1)/symRecord, l.nsym))
	}
	return first(from), first(to)
}

// rawLayout reads a raw snapshot's counts, sections and objects and
// checks that they fit the payload and one another; the arrays themselves
// are checked by rawCheck.
func rawLayout(name string, b []byte) (*Index, rawSections, error) {
	le := binary.LittleEndian
	var lay rawSections
	flags := le.Uint32(b[12:])
	nobj, nsym := uint64(le.Uint32(b[32:])), uint64(le.Uint32(b[36:]))
	nslot, nname := uint64(le.Uint32(b[40:])), uint64(le.Uint32(b[44:]))
	p := b[rawHeaderSize:]
	plen := uint64(len(p))
	if nobj == 0 || nobj > 1<<16 {
		return nil, lay, snapErr(name, "bad object count %d", nobj)
	}
	if nsym == 0 {
		return nil, lay, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	if len(p) < 4 {
		return nil, lay, snapErr(name, "truncated payload")
	}
	nsrc := uint64(le.Uint32(p))
	at := rawOffsetsOf(nsrc, nobj, nsym, nslot, nname)
	// Version 6 may end with padding, less than a huge page of it.
	switch {
	case nsrc > plen || at.end > plen:
		return nil, lay, snapErr(name, "section sizes add up to %d bytes, payload has %d", at.end, plen)
	case at.end < plen && plen-at.end >= hugepage.Size:
		return nil, lay, snapErr(name, "section sizes add up to %d bytes, payload has %d (%d bytes of padding)", at.end, plen, plen-at.end)
	}
	lay = rawSections{symAt: at.sym, nsym: nsym}
	ix := &Index{source: string(p[at.src : at.src+nsrc]), byName: make(map[string]int, nobj), lto: flags&1 != 0}
	names := p[at.names:at.end]
	ix.data = unsafe.String(unsafe.SliceData(names), len(names))

	// The arrays, in place on a little-endian host whose buffer is 8-byte
	// aligned (os.ReadFile's is), else copied.
	aligned := uintptr(unsafe.Pointer(unsafe.SliceData(p)))%8 == 0
	if hostLE && aligned {
		ix.syms = unsafe.Slice((*sym)(unsafe.Pointer(&p[at.sym])), nsym)
		ix.next = unsafe.Slice((*uint32)(unsafe.Pointer(&p[at.next])), nsym)
		if nslot > 0 {
			ix.slots = unsafe.Slice((*slot)(unsafe.Pointer(&p[at.slot])), nslot)
		}
	} else {
		ix.syms = make([]sym, nsym)
		for i := range ix.syms {
			r := p[at.sym+uint64(i)*symRecord:]
			ix.syms[i] = sym{addr: le.Uint64(r), off: le.Uint32(r[8:]), nlen: le.Uint16(r[12:]), typ: r[14], flags: r[15]}
		}
		ix.next = make([]uint32, nsym)
		for i := range ix.next {
			ix.next[i] = le.Uint32(p[at.next+uint64(i)*4:])
		}
		ix.slots = make([]slot, nslot)
		for i := range ix.slots {
			r := p[at.slot+uint64(i)*8:]
			ix.slots[i] = slot{le.Uint32(r), le.Uint32(r[4:])}
		}
	}

	ix.objs = make([]object, nobj)
	prev, tables := uint32(0), uint64(0)
	for i := range ix.objs {
		r := p[at.obj+uint64(i)*rawObjRecord:]
		off, nl, fl := le.Uint32(r), uint32(le.Uint16(r[4:])), le.Uint16(r[6:])
		o := object{start: le.Uint32(r[8:]), end: le.Uint32(r[12:]), off: le.Uint32(r[16:]), size: le.Uint32(r[20:]),
			lo: le.Uint64(r[24:]), hi: le.Uint64(r[32:]), pseudo: fl&1 != 0}
		if uint64(off)+uint64(nl) > nname || nl == 0 {
			return nil, lay, snapErr(name, "object %d: name out of range", i)
		}
		o.name = strings.Clone(ix.data[off : off+nl]) // kept by callers (ObjectInfo)
		if err := ix.addObject(name, i, o, prev, nsym); err != nil {
			return nil, lay, err
		}
		n := o.end - o.start
		if uint64(o.off) != tables || o.size != max(4, n+n/2+1) || uint64(o.off)+uint64(o.size) > nslot {
			return nil, lay, snapErr(name, "object %q: hash table at %d, %d slots, does not fit", o.name, o.off, o.size)
		}
		tables += uint64(o.size)
		prev = o.end
	}
	if uint64(prev) != nsym || tables != nslot {
		return nil, lay, snapErr(name, "objects cover %d of %d symbols and %d of %d slots", prev, nsym, tables, nslot)
	}
	return ix, lay, nil
}

// rawCheck validates a raw snapshot's symbols in pieces, on any number
// of goroutines at once: names lie inside the names, chains go forward
// inside their object (no cycle), and the flags agree with the chains.
// Results are kept per piece, so that the error reported is the first in
// file order however the pieces were shared out.
type rawCheck struct {
	name  string
	nname uint64
	errs  []error  // per piece: its first problem
	addrs []uint64 // per piece: its addresses ORed (all zero: kptr_restrict)
}

func newRawCheck(name string, ix *Index, pieces int) *rawCheck {
	return &rawCheck{name: name, nname: uint64(len(ix.data)), errs: make([]error, pieces), addrs: make([]uint64, pieces)}
}

// check validates piece k, the symbols [lo, hi).
func (c *rawCheck) check(ix *Index, k int, lo, hi uint32) {
	var addrs uint64
	for oi := range ix.objs {
		o := &ix.objs[oi]
		if a, b := max(lo, o.start), min(hi, o.end); a < b {
			bad, ors := symsFaults(ix.syms[a:b], ix.next[a:b], a, o.end, c.nname)
			addrs |= ors
			if bad != 0 {
				c.errs[k] = c.symErr(ix, o, a, b)
				return
			}
		}
	}
	c.addrs[k] = addrs
}

// symsFaults counts the symbols syms (indexes first.. of an object ending
// at end; next their chains) whose name or chain is out of range or whose
// flags disagree with their chain, and ORs their addresses. Branches, not
// set-on-condition arithmetic: they are never taken in a good file, and
// the branch-free form ran at half the speed.
func symsFaults(syms []sym, next []uint32, first, end uint32, nname uint64) (bad uint32, addrs uint64) {
	next = next[:len(syms)]
	for j, s := range syms {
		nx, i := next[j], first+uint32(j)
		addrs |= s.addr
		if s.nlen == 0 || s.nlen >= KSYMNameLen || uint64(s.off)+uint64(s.nlen) > nname {
			bad++
		}
		var fl byte
		if nx != 0 {
			fl = symHasNext
			if !chainOK(i, nx, end) {
				bad++
			}
		}
		if s.flags != fl {
			bad++
		}
	}
	return bad, addrs
}

// chainOK: the same-name chain of symbol i goes on to symbol nx-1,
// forward and inside i's object, which ends at end, so that no walk
// leaves the object or loops.
func chainOK(i, nx, end uint32) bool { return nx > i+1 && nx <= end }

// symErr describes the first faulty symbol in syms[a:b] of o.
func (c *rawCheck) symErr(ix *Index, o *object, a, b uint32) error {
	for i := a; i < b; i++ {
		s, nx := ix.syms[i], ix.next[i]
		if s.nlen == 0 || s.nlen >= KSYMNameLen || uint64(s.off)+uint64(s.nlen) > c.nname {
			return snapErr(c.name, "symbol %d: name out of range", i)
		}
		if nx != 0 && !chainOK(i, nx, o.end) {
			return snapErr(c.name, "symbol %d: chain to %d leaves object %q", i, nx, o.name)
		}
		// flags are derived from the chains: checked, as the arrays may
		// be a read-only mapping.
		var fl byte
		if nx != 0 {
			fl = symHasNext
		}
		if s.flags != fl {
			return snapErr(c.name, "symbol %d: flags %#x, its chain says %#x", i, s.flags, fl)
		}
	}
	return snapErr(c.name, "symbols %d-%d: malformed", a, b) // not reached
}

// result is the first problem found, in file order.
func (c *rawCheck) result() error {
	for _, err := range c.errs {
		if err != nil {
			return err
		}
	}
	if !slices.ContainsFunc(c.addrs, func(a uint64) bool { return a != 0 }) {
		return fmt.Errorf("%s: %w", c.name, ErrRestricted)
	}
	return nil
}

// appendObjRecord appends the first 16 bytes of o's record to p (u32
// offset of its name in names, u16 name length, u16 flags: bit 0 pseudo,
// u32 first symbol, u32 end symbol) and its name to names.
func appendObjRecord(p, names []byte, o *object) ([]byte, []byte) {
	le := binary.LittleEndian
	p = le.AppendUint32(p, uint32(len(names)))
	p = le.AppendUint16(p, uint16(len(o.name)))
	var fl uint16
	if o.pseudo {
		fl = 1
	}
	p = le.AppendUint16(p, fl)
	p = le.AppendUint32(p, o.start)
	p = le.AppendUint32(p, o.end)
	return p, append(names, o.name...)
}

// appendSymRecords appends the 16-byte record of every symbol to p (u64
// address, u32 offset of its name in names, u16 name length, u8 type,
// u8 flags) and its name to names.
func (ix *Index) appendSymRecords(p, names []byte) ([]byte, []byte) {
	le := binary.LittleEndian
	for i := range ix.syms {
		s := &ix.syms[i]
		p = le.AppendUint64(p, s.addr)
		p = le.AppendUint32(p, uint32(len(names)))
		p = le.AppendUint16(p, s.nlen)
		p = append(p, s.typ, s.flags)
		names = append(names, ix.name(uint32(i))...)
	}
	return p, names
}
