package kallsyms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/par"
)

// Snapshot format, version 1. All integers little-endian.
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
//
// Hash tables are not stored: they are rebuilt on load (in parallel),
// which keeps the file small and the loader simple to validate.
const (
	snapshotVersion = 1
	headerSize      = 32
	objRecord       = 16
	symRecord       = 16
	// maxExpansion bounds payload length / compressed length, so a forged
	// header cannot make the loader allocate what the file does not
	// justify (real snapshots expand about 3-4x).
	maxExpansion = 64
)

var snapshotMagic = []byte("KLPSNAP\x00")

func isSnapshot(b []byte) bool { return bytes.HasPrefix(b, snapshotMagic) }

// WriteSnapshot writes ix to w in the snapshot format.
func (ix *Index) WriteSnapshot(w io.Writer) error {
	if ix.closed {
		return fmt.Errorf("%s: %w", ix.source, ErrClosed)
	}
	nameBytes := 0
	for i := range ix.syms {
		nameBytes += int(ix.syms[i].nlen)
	}
	for _, o := range ix.objs {
		nameBytes += len(o.name)
	}
	n := 16 + len(ix.source) + objRecord*len(ix.objs) + symRecord*len(ix.syms) + nameBytes
	p := make([]byte, 0, n)
	le := binary.LittleEndian
	p = le.AppendUint32(p, uint32(len(ix.objs)))
	p = le.AppendUint32(p, uint32(len(ix.syms)))
	p = le.AppendUint32(p, uint32(nameBytes))
	p = le.AppendUint32(p, uint32(len(ix.source)))
	p = append(p, ix.source...)
	names := make([]byte, 0, nameBytes)
	for i := range ix.objs {
		p, names = appendObjRecord(p, names, &ix.objs[i])
	}
	p, names = ix.appendSymRecords(p, names, false)
	p = append(p, names...)

	var hdr [headerSize]byte
	copy(hdr[:], snapshotMagic)
	le.PutUint32(hdr[8:], snapshotVersion)
	var flags uint32
	if ix.lto {
		flags |= 1
	}
	le.PutUint32(hdr[12:], flags)
	le.PutUint64(hdr[16:], uint64(len(p)))
	le.PutUint64(hdr[24:], checksum(hdr[:24], p))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	// One-shot encoding records the content size in the frame header, so
	// the decoder's window is the payload itself.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	defer enc.Close()
	_, err = w.Write(enc.EncodeAll(p, nil))
	return err
}

// WriteSnapshotFile writes ix to path atomically: a temporary file in the
// same folder, synced, then renamed over path.
func (ix *Index) WriteSnapshotFile(path string) error {
	return atomicfile.Write(path, ix.WriteSnapshot)
}

func snapErr(name, format string, args ...any) error {
	return fmt.Errorf("%s: snapshot: %w: %s", name, ErrMalformed, fmt.Sprintf(format, args...))
}

// loadSnapshot validates and loads a snapshot. Every count, offset and
// length is checked before use; nothing is allocated that the file's size
// does not justify.
//
// A snapshot written with LTO matching matches that way, whatever lto
// says. One written without it does too when lto is set (Options.LTO):
// this format rebuilds its tables, with LTO keys; a raw one's are stored
// (ErrSnapshotExact).
func loadSnapshot(name string, b []byte, lto bool) (*Index, error) {
	return loadSnapshotSums(name, b, nil, lto)
}

// loadSnapshotSums is loadSnapshot with the chunk sums of a raw snapshot
// computed while it was read (see loadRawSnapshot).
func loadSnapshotSums(name string, b, sums []byte, lto bool) (*Index, error) {
	if len(b) < headerSize {
		return nil, snapErr(name, "truncated header (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	switch v := le.Uint32(b[8:]); v {
	case snapshotVersion:
	case rawVersion:
		return loadRawSnapshot(name, b, sums, lto)
	default:
		return nil, snapErr(name, "unsupported version %d (this build reads %d and %d; write the snapshot again with this build)", v, snapshotVersion, rawVersion)
	}
	flags := le.Uint32(b[12:])
	if flags&^1 != 0 {
		return nil, snapErr(name, "unknown flags %#x", flags)
	}
	plen := le.Uint64(b[16:])
	sum := le.Uint64(b[24:])
	body := b[headerSize:]
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
	if checksum(b[:24], p) != sum {
		return nil, snapErr(name, "checksum mismatch (file corrupted)")
	}
	nobj, nsym := uint64(le.Uint32(p)), uint64(le.Uint32(p[4:]))
	nname, nsrc := uint64(le.Uint32(p[8:])), uint64(le.Uint32(p[12:]))
	need := 16 + nsrc + nobj*objRecord + nsym*symRecord + nname
	if need != plen {
		return nil, snapErr(name, "section sizes add up to %d bytes, payload has %d", need, plen)
	}
	if nobj == 0 || nobj > 1<<16 {
		return nil, snapErr(name, "bad object count %d", nobj)
	}
	if nsym == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	at := uint64(16)
	src := string(p[at : at+nsrc])
	at += nsrc
	objb := p[at : at+nobj*objRecord]
	at += nobj * objRecord
	symb := p[at : at+nsym*symRecord]
	at += nsym * symRecord
	namesOff := uint32(at)

	ix := &Index{source: src, byName: make(map[string]int, nobj), lto: flags&1 != 0 || lto}
	ix.data = unsafe.String(unsafe.SliceData(p), len(p)) // names point into it
	ix.objs = make([]object, nobj)
	prev := uint32(0)
	for i := range ix.objs {
		r := objb[i*objRecord:]
		off, nl, fl := le.Uint32(r), uint32(le.Uint16(r[4:])), le.Uint16(r[6:])
		start, end := le.Uint32(r[8:]), le.Uint32(r[12:])
		if uint64(off)+uint64(nl) > nname || nl == 0 {
			return nil, snapErr(name, "object %d: name out of range", i)
		}
		oname := ix.data[namesOff+off : namesOff+off+nl]
		if start != prev || end < start || uint64(end) > nsym {
			return nil, snapErr(name, "object %q: symbol range %d-%d does not follow %d", oname, start, end, prev)
		}
		if i == 0 && oname != Vmlinux {
			return nil, snapErr(name, "first object is %q, not vmlinux", oname)
		}
		if _, dup := ix.byName[oname]; dup {
			return nil, snapErr(name, "object %q listed twice", oname)
		}
		ix.byName[oname] = i
		ix.objs[i] = object{name: oname, start: start, end: end, pseudo: fl&1 != 0}
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

// appendObjRecord appends the first 16 bytes of o's record to p (u32
// offset of its name in names, u16 name length, u16 flags: bit 0 pseudo,
// u32 first symbol, u32 end symbol) and its name to names: the object
// record of both snapshot formats (the raw one adds its table and range).
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
// u8 flags or 0) and its name to names: the symbol table of both snapshot
// formats.
func (ix *Index) appendSymRecords(p, names []byte, flags bool) ([]byte, []byte) {
	le := binary.LittleEndian
	for i := range ix.syms {
		s := &ix.syms[i]
		p = le.AppendUint64(p, s.addr)
		p = le.AppendUint32(p, uint32(len(names)))
		p = le.AppendUint16(p, s.nlen)
		fl := byte(0)
		if flags {
			fl = s.flags
		}
		p = append(p, s.typ, fl)
		names = append(names, ix.name(uint32(i))...)
	}
	return p, names
}

// hashAll computes every symbol's table key, on all cores.
func (ix *Index) hashAll() []uint32 {
	h := make([]uint32, len(ix.syms))
	const piece = 16 << 10
	par.For(runtime.GOMAXPROCS(0), (len(h)+piece-1)/piece, func(k int) {
		for i := k * piece; i < min((k+1)*piece, len(h)); i++ {
			h[i] = hashKeyString(ix.name(uint32(i)), ix.ltoSym(uint32(i)))
		}
	})
	return h
}

func checksum(hdr, payload []byte) uint64 {
	d := xxhash.New()
	d.Write(hdr)
	d.Write(payload)
	return d.Sum64()
}
