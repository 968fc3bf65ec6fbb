package kallsyms

import (
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/par"
)

// Raw snapshot format, version 3: the index as it sits in memory, hash
// tables and chains included, uncompressed, so that loading is one map
// (or read), one checksum and one validation pass, and the arrays are
// used in place (no parse, no hashing, no table building). It is about 6x
// the size of a version 1 (zstd) snapshot; choose it where loading speed
// matters (a folder of snapshots checked at once). All integers
// little-endian. (Version 2 stored 0 for the symbols' flags, which the
// loader then wrote: a read-only mapping cannot be written.)
//
//	header (48 bytes):
//	  [8] magic "KLPSNAP\x00", u32 version (3), u32 flags (bit 0: LTO),
//	  u64 payload length, u64 checksum: xxhash64 of the header's first 24
//	  bytes, its last 16 and the xxhash64s (u64 each) of the payload's
//	  256 KiB chunks,
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
const (
	rawVersion    = 3
	rawHeaderSize = 48
	rawObjRecord  = 40
)

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// WriteSnapshotRaw writes ix to w in the raw (version 3) snapshot format.
func (ix *Index) WriteSnapshotRaw(w io.Writer) error {
	if ix.closed {
		return fmt.Errorf("%s: %w", ix.source, ErrClosed)
	}
	le := binary.LittleEndian
	var names []byte
	var p []byte
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
	p, names = ix.appendSymRecords(p, names, true)
	for _, n := range ix.next {
		p = le.AppendUint32(p, n)
	}
	pad()
	for _, s := range ix.slots {
		p = le.AppendUint32(p, s.hash)
		p = le.AppendUint32(p, s.idx)
	}
	p = append(p, names...)

	var hdr [rawHeaderSize]byte
	copy(hdr[:], snapshotMagic)
	le.PutUint32(hdr[8:], rawVersion)
	if ix.lto {
		le.PutUint32(hdr[12:], 1)
	}
	le.PutUint64(hdr[16:], uint64(len(p)))
	le.PutUint32(hdr[32:], uint32(len(ix.objs)))
	le.PutUint32(hdr[36:], uint32(len(ix.syms)))
	le.PutUint32(hdr[40:], uint32(len(ix.slots)))
	le.PutUint32(hdr[44:], uint32(len(names)))
	le.PutUint64(hdr[24:], rawChecksum(hdr[:], p))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// WriteSnapshotRawFile writes ix to path atomically in the raw format.
func (ix *Index) WriteSnapshotRawFile(path string) error {
	return atomicfile.Write(path, ix.WriteSnapshotRaw)
}

// rawChecksum is xxhash64 of the header (less its checksum field) and
// of the xxhash64s of the payload's 256 KiB chunks, which are hashed on
// all cores: one xxhash over 7 MB costs a third of the load.
func rawChecksum(hdr, payload []byte) uint64 {
	n := (len(payload) + rawChunk - 1) / rawChunk
	sums := make([]byte, 8*n)
	par.For(runtime.GOMAXPROCS(0), n, func(i int) { rawChunkSum(sums, payload, i) })
	return rawChecksumOf(hdr, sums)
}

// rawChunk is the size of the payload chunks hashed apart.
const rawChunk = 256 << 10 // 27 for a 6.9 MB payload: the cores finish together

// rawChunkSum stores the xxhash64 of the payload's chunk i in sums.
func rawChunkSum(sums, payload []byte, i int) {
	c := payload[i*rawChunk : min((i+1)*rawChunk, len(payload))]
	binary.LittleEndian.PutUint64(sums[8*i:], xxhash.Sum64(c))
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
// place. Every count, offset, index, chain and table is checked: a forged
// file can make lookups miss, never loop, read out of bounds or panic.
//
// sums, when the reader computed them (readRegular), are the payload
// chunks' hashes; nil means compute them here.
func loadRawSnapshot(name string, b, sums []byte) (*Index, error) {
	le := binary.LittleEndian
	if len(b) < rawHeaderSize {
		return nil, snapErr(name, "truncated header (%d bytes)", len(b))
	}
	flags := le.Uint32(b[12:])
	if flags&^1 != 0 {
		return nil, snapErr(name, "unknown flags %#x", flags)
	}
	plen := le.Uint64(b[16:])
	nobj, nsym := uint64(le.Uint32(b[32:])), uint64(le.Uint32(b[36:]))
	nslot, nname := uint64(le.Uint32(b[40:])), uint64(le.Uint32(b[44:]))
	p := b[rawHeaderSize:]
	if plen != uint64(len(p)) {
		return nil, snapErr(name, "payload is %d bytes, header says %d", len(p), plen)
	}
	sum := uint64(0)
	if sums != nil && len(sums) == 8*((len(p)+rawChunk-1)/rawChunk) {
		sum = rawChecksumOf(b[:rawHeaderSize], sums)
	} else {
		sum = rawChecksum(b[:rawHeaderSize], p)
	}
	if sum != le.Uint64(b[24:]) {
		return nil, snapErr(name, "checksum mismatch (file corrupted)")
	}
	if nobj == 0 || nobj > 1<<16 {
		return nil, snapErr(name, "bad object count %d", nobj)
	}
	if nsym == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	if len(p) < 4 {
		return nil, snapErr(name, "truncated payload")
	}
	nsrc := uint64(le.Uint32(p))
	at := uint64(4)
	srcAt := at
	at = align8(at + nsrc)
	objAt := at
	at += nobj * rawObjRecord
	symAt := at
	at += nsym * symRecord
	nextAt := at
	at = align8(at + nsym*4)
	slotAt := at
	at += nslot * 8
	namesAt := at
	if at+nname != plen || nsrc > plen {
		return nil, snapErr(name, "section sizes add up to %d bytes, payload has %d", at+nname, plen)
	}
	ix := &Index{source: string(p[srcAt : srcAt+nsrc]), byName: make(map[string]int, nobj), lto: flags&1 != 0}
	names := p[namesAt:]
	ix.data = unsafe.String(unsafe.SliceData(names), len(names))

	// The arrays, in place on a little-endian host whose buffer is 8-byte
	// aligned (os.ReadFile's is), else copied.
	aligned := uintptr(unsafe.Pointer(unsafe.SliceData(p)))%8 == 0
	if hostLE && aligned {
		ix.syms = unsafe.Slice((*sym)(unsafe.Pointer(&p[symAt])), nsym)
		ix.next = unsafe.Slice((*uint32)(unsafe.Pointer(&p[nextAt])), nsym)
		if nslot > 0 {
			ix.slots = unsafe.Slice((*slot)(unsafe.Pointer(&p[slotAt])), nslot)
		}
	} else {
		ix.syms = make([]sym, nsym)
		for i := range ix.syms {
			r := p[symAt+uint64(i)*symRecord:]
			ix.syms[i] = sym{addr: le.Uint64(r), off: le.Uint32(r[8:]), nlen: le.Uint16(r[12:]), typ: r[14], flags: r[15]}
		}
		ix.next = make([]uint32, nsym)
		for i := range ix.next {
			ix.next[i] = le.Uint32(p[nextAt+uint64(i)*4:])
		}
		ix.slots = make([]slot, nslot)
		for i := range ix.slots {
			r := p[slotAt+uint64(i)*8:]
			ix.slots[i] = slot{le.Uint32(r), le.Uint32(r[4:])}
		}
	}

	ix.objs = make([]object, nobj)
	prev, tables := uint32(0), uint64(0)
	for i := range ix.objs {
		r := p[objAt+uint64(i)*rawObjRecord:]
		off, nl, fl := le.Uint32(r), uint32(le.Uint16(r[4:])), le.Uint16(r[6:])
		o := object{start: le.Uint32(r[8:]), end: le.Uint32(r[12:]), off: le.Uint32(r[16:]), size: le.Uint32(r[20:]),
			lo: le.Uint64(r[24:]), hi: le.Uint64(r[32:]), pseudo: fl&1 != 0}
		if uint64(off)+uint64(nl) > nname || nl == 0 {
			return nil, snapErr(name, "object %d: name out of range", i)
		}
		o.name = strings.Clone(ix.data[off : off+nl]) // kept by callers (ObjectInfo)
		if o.start != prev || o.end < o.start || uint64(o.end) > nsym {
			return nil, snapErr(name, "object %q: symbol range %d-%d does not follow %d", o.name, o.start, o.end, prev)
		}
		n := o.end - o.start
		if uint64(o.off) != tables || o.size != max(4, n+n/2+1) || uint64(o.off)+uint64(o.size) > nslot {
			return nil, snapErr(name, "object %q: hash table at %d, %d slots, does not fit", o.name, o.off, o.size)
		}
		tables += uint64(o.size)
		if i == 0 && o.name != Vmlinux {
			return nil, snapErr(name, "first object is %q, not vmlinux", o.name)
		}
		if _, dup := ix.byName[o.name]; dup {
			return nil, snapErr(name, "object %q listed twice", o.name)
		}
		ix.byName[o.name] = i
		ix.objs[i] = o
		prev = o.end
	}
	if uint64(prev) != nsym || tables != nslot {
		return nil, snapErr(name, "objects cover %d of %d symbols and %d of %d slots", prev, nsym, tables, nslot)
	}
	if err := ix.validateRaw(name, nname); err != nil {
		return nil, err
	}
	return ix, nil
}

// validateRaw checks every symbol's name, flags and chain and every table
// entry of a raw snapshot, on all cores (half the symbols and half the
// table slots each): chains go forward inside their object (no cycle),
// table entries point into their object, and every table has an empty
// slot (a probe always ends).
func (ix *Index) validateRaw(name string, nname uint64) error {
	w := runtime.GOMAXPROCS(0)
	nsym, nslot := uint32(len(ix.syms)), uint32(len(ix.slots))
	errs := make([]error, w)
	nonzero := make([]bool, w)
	empty := make([][]bool, w) // per worker, per object: saw an empty slot
	par.For(w, w, func(k int) {
		// Results are kept in locals and stored once at the end: the
		// workers' result slots share a cache line.
		lo, hi := nsym*uint32(k)/uint32(w), nsym*uint32(k+1)/uint32(w)
		slo, shi := nslot*uint32(k)/uint32(w), nslot*uint32(k+1)/uint32(w)
		seen := make([]bool, len(ix.objs))
		var addrs uint64
		for oi := range ix.objs {
			o := &ix.objs[oi]
			if a, b := max(lo, o.start), min(hi, o.end); a < b {
				next := ix.next[a:b]
				for j, s := range ix.syms[a:b] {
					i := a + uint32(j)
					if s.nlen == 0 || s.nlen >= KSYMNameLen || uint64(s.off)+uint64(s.nlen) > nname {
						errs[k] = snapErr(name, "symbol %d: name out of range", i)
						return
					}
					addrs |= s.addr
					if nx := next[j]; nx != 0 && (nx <= i+1 || nx > o.end) {
						errs[k] = snapErr(name, "symbol %d: chain to %d leaves object %q", i, nx, o.name)
						return
					}
					// flags are derived from the chains: checked, as
					// the arrays may be a read-only mapping.
					var fl byte
					if next[j] != 0 {
						fl = symHasNext
					}
					if s.flags != fl {
						errs[k] = snapErr(name, "symbol %d: flags %#x, its chain says %#x", i, s.flags, fl)
						return
					}
				}
			}
			if a, b := max(slo, o.off), min(shi, o.off+o.size); a < b {
				n, empties := o.end-o.start, uint32(0)
				for _, sl := range ix.slots[a:b] {
					// idx is 0 (empty) or in (start, end]. Written
					// without a branch that depends on the data:
					// a third of the slots are empty, at random.
					empty := sl.idx == 0
					var e uint32
					if empty {
						e = 1
					}
					empties += e
					if (sl.idx-1-o.start >= n) != empty { // idx-1 wraps for 0
						errs[k] = snapErr(name, "object %q: table entry %d outside it", o.name, sl.idx)
						return
					}
				}
				seen[oi] = empties > 0
			}
		}
		nonzero[k], empty[k] = addrs != 0, seen
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if !slices.Contains(nonzero, true) {
		return fmt.Errorf("%s: %w", name, ErrRestricted)
	}
	for oi := range ix.objs {
		seen := false
		for k := range w {
			seen = seen || empty[k][oi]
		}
		if !seen {
			return snapErr(name, "object %q: hash table has no empty slot", ix.objs[oi].name)
		}
	}
	return nil
}
