// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// Compact snapshot format, version 1, which this build reads but no longer
// writes (a fleet's archived snapshots stay usable). All integers
// little-endian.
//
//	header (32 bytes, uncompressed):
//	  [8]  magic "KLPSNAP\x00"
//	  u32  version (1)
//	  u32  flags (bit 0: LTO matching)
//	  u64  payload length (uncompressed)
//	  u64  xxhash64 of the header's first 24 bytes and the payload
//	zstd frame holding the payload:
//	  u32 objects, u32 symbols, u32 name bytes, u32 source-name bytes
//	  source name
//	  objects: u32 name offset, u16 name length, u16 flags (bit 0 pseudo),
//	           u32 first symbol, u32 end symbol       (16 bytes each)
//	  symbols: u64 address, u32 name offset, u16 name length, u8 type,
//	           u8 0                                    (16 bytes each)
//	  names
const (
	snapshotV1  = 1
	v1ObjRecord = 16
)

// loadSnapshotV1 validates and loads a version 1 snapshot (see
// loadSnapshot).
func loadSnapshotV1(name string, b []byte, lto bool) (*Index, error) {
	le := binary.LittleEndian
	flags := le.Uint32(b[12:])
	if flags&^1 != 0 {
		return nil, snapErr(name, "unknown flags %#x", flags)
	}
	plen := le.Uint64(b[16:])
	sum := le.Uint64(b[24:])
	body := b[headerSizeV5:]
	if plen < 16 || plen > uint64(len(body))*maxExpansion || plen > maxInput {
		return nil, snapErr(name, "payload length %d does not fit a file of %d bytes", plen, len(b))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(2*plen, 1<<20)))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	p, err := dec.DecodeAll(body, make([]byte, 0, plen))
	if err != nil {
		return nil, snapErr(name, "zstd: %v", err)
	}
	if uint64(len(p)) != plen {
		return nil, snapErr(name, "payload is %d bytes, header says %d", len(p), plen)
	}
	d := xxhash.New()
	d.Write(b[:24])
	d.Write(p)
	if d.Sum64() != sum {
		return nil, snapErr(name, "checksum mismatch (file corrupted)")
	}
	nobj, nsym := uint64(le.Uint32(p)), uint64(le.Uint32(p[4:]))
	nname, nsrc := uint64(le.Uint32(p[8:])), uint64(le.Uint32(p[12:]))
	need := 16 + nsrc + nobj*v1ObjRecord + nsym*symRecord + nname
	if need != plen {
		return nil, snapErr(name, "section sizes add up to %d bytes, payload has %d", need, plen)
	}
	if nobj == 0 || nobj > maxObjects {
		return nil, snapErr(name, "bad object count %d", nobj)
	}
	if nsym == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	at := uint64(16)
	src := string(p[at : at+nsrc])
	at += nsrc
	objb := p[at : at+nobj*v1ObjRecord]
	at += nobj * v1ObjRecord
	symb := p[at : at+nsym*symRecord]
	at += nsym * symRecord
	namesOff := uint32(at)

	ix := &Index{source: src, byName: make(map[string]int, nobj), lto: flags&1 != 0 || lto}
	ix.data = unsafe.String(unsafe.SliceData(p), len(p)) // names point into it
	ix.objs = make([]object, nobj)
	prev := uint32(0)
	for i := range ix.objs {
		r := objb[i*v1ObjRecord:]
		off, nl, fl := le.Uint32(r), uint32(le.Uint16(r[4:])), le.Uint16(r[6:])
		start, end := le.Uint32(r[8:]), le.Uint32(r[12:])
		if uint64(off)+uint64(nl) > nname || nl == 0 {
			return nil, snapErr(name, "object %d: name out of range", i)
		}
		o := object{name: ix.data[namesOff+off : namesOff+off+nl], start: start, end: end, pseudo: fl&1 != 0}
		if err := ix.addObject(name, i, o, prev, nsym); err != nil {
			return nil, err
		}
		prev = end
	}
	if uint64(prev) != nsym {
		return nil, snapErr(name, "objects cover %d of %d symbols", prev, nsym)
	}
	ix.syms = make([]sym, nsym)
	nonzero := false
	for i := range ix.syms {
		r := symb[i*symRecord : i*symRecord+symRecord]
		off, nl := le.Uint32(r[8:]), le.Uint16(r[12:])
		if nl == 0 || nl >= KSYMNameLen || uint64(off)+uint64(nl) > nname {
			return nil, snapErr(name, "symbol %d: name out of range", i)
		}
		a := le.Uint64(r)
		nonzero = nonzero || a != 0
		ix.syms[i] = sym{addr: a, off: namesOff + off, nlen: nl, typ: r[14]}
	}
	if !nonzero {
		return nil, fmt.Errorf("%s: %w", name, ErrRestricted)
	}
	for i := range ix.objs {
		o := &ix.objs[i]
		r := newRun()
		for _, s := range ix.syms[o.start:o.end] {
			r.add(s.addr, s.typ)
		}
		o.setRange(r)
	}
	ix.buildTables(ix.hashAll(), nil, nil)
	return ix, nil
}
