// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	mathbits "math/bits"
	"runtime"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/pierrec/lz4/v4"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/par"
)

// Compact snapshot format, version 11: the symbols in chunks, each chunk's
// columns and names compressed apart as LZ4 blocks (a chunk's names decode
// in a microsecond or two: a lookup decodes only its symbol's chunk, and a
// patch that reaches every chunk decodes them at 3 to 4 GB/s); then the
// hash tables, packed (a bitmap of the slots in use, then those slots),
// and the chains, so that loading decodes nothing but the table of
// contents and the chains (lookups read the tables in place, see
// packedTables): a chunk is decoded the first time a lookup reaches one
// of its symbols (see
// lazySnapshot), and every chunk at once, on every core, by DecodeAll and
// by what reads every symbol. (Versions 2-4 and 6 are the raw format's,
// see snapraw.go; this build reads no version but 6 and 11; none before
// them was released: docs/snapshot-format.md.) All integers little-endian.
//
//	header (40 bytes):
//	  [8] magic "KLPSNAP\x00"
//	  u32 version (11)
//	  u32 flags (bit 0: LTO matching: vmlinux's tables are keyed by names
//	      without their .llvm.<hash> suffix, see Index.ltoSym)
//	  u32 frames: 1 + 2 x chunks
//	  u32 table slots in use
//	  u64 CRC-32 (IEEE) of the header's first 24 bytes and all that follows
//	      its first 32
//	  u32 table slots, u32 chain links
//	frame table: u32 stored length, u32 decoded length, for each frame
//	the frames, each one LZ4 block (the block format, no frame header),
//	  or stored as it is where its stored length is its decoded length:
//	  the table of contents:
//	    u32 objects, u32 symbols, u32 symbol-name bytes,
//	    u32 source-name bytes, u32 object-name bytes,
//	    source name, object names,
//	    objects (32 bytes each): u16 name length, u16 flags (bit 0 pseudo),
//	                             u32 end symbol, u32 table offset, u32
//	                             table size (slots), u64 low, u64 high
//	                             address (see ObjectInfo),
//	    u8 for each chunk: its address planes (0-8)
//	  for each chunk of symbols:
//	    its columns: u64 the address of the symbol before its first (0 for
//	      the first chunk's), then 3 + planes bytes a symbol, column by
//	      column: the type; the name length's low byte, then its high
//	      byte; the address as byte planes, low byte first, of the
//	      zigzag-encoded difference from the previous symbol's address:
//	      as many planes as the chunk's widest difference needs (the
//	      others are zero and left out: they would only cost decoding)
//	    its symbols' names, one after another
//	zero padding to a multiple of 8 bytes from the file's start
//	tables: a bitmap of the slots in use (u64 words, bit i of word
//	        i/64); then, for each slot in use, in order (each object's
//	        table, one after the other, as the Index holds them), its u32
//	        name hash and its index+1 in w bits, together, packed in u64
//	        words (packTables); w is the width of the count of slots
//	        (tableWidth). A lookup reads them in place (packedTables).
//	chain links: for the symbols whose chain goes on, in symbol order,
//	        the symbol and the index+1 of the next symbol of its name in
//	        its object, w bits each, packed the same way
const (
	snapshotVersion = 11
	headerSize      = 40
	checksumSkip    = 32 // the checksum covers the header's first 24 bytes and all from here
	tocFixed        = 20
	tocObject       = 32 // bytes an object's record in the table of contents
	slotRecord      = 8  // bytes a table slot in memory, and in the records packTables packs
	fixedColumns    = 3  // a symbol's columns before its address planes: type, name length (2)
	// maxExpansion bounds the decoded size by the file's: a forged table
	// of frames cannot make the loader allocate what the file does not
	// justify. Real snapshots expand 6-7x; minExpansionBound lets tiny ones
	// (whose fixed parts weigh more) through.
	maxExpansion      = 64
	minExpansionBound = 1 << 20
	maxChunks         = 1 << 16
	// chunkNameBytes is the writer's chunk size, in bytes of names. A
	// lookup decodes its symbol's whole chunk (LZ4 decodes 8 KiB of
	// names in about 2 us), and a patch's symbols are spread over the
	// kernel's: smaller chunks decode less per lookup, larger ones
	// compress better (the names of a 6.1 kernel in chunks of 4 KiB
	// compress to 0.42 of themselves, in chunks of 8 KiB to 0.40, in
	// chunks of 16 KiB to 0.37).
	chunkNameBytes = 8 << 10
)

var snapshotMagic = []byte("KLPSNAP\x00")

func isSnapshot(b []byte) bool { return bytes.HasPrefix(b, snapshotMagic) }

// ErrTooRepetitive is returned by WriteSnapshot for an index whose
// snapshot would decode to more than 64 times its size, which the loader
// would take for a forged file: an index of long names repeated many
// times, whose tables and chains (uncompressed, 4 to 7 bytes a symbol)
// would weigh little beside them. Real kernels' snapshots decode to
// about two and a half times their size.
var ErrTooRepetitive = errors.New("index compresses too well for the compact snapshot format (write the raw one)")

// WriteSnapshot writes ix to w in the compact snapshot format.
func (ix *Index) WriteSnapshot(w io.Writer) error {
	if ix.closed {
		return fmt.Errorf("%s: %w", ix.source, ErrClosed)
	}
	if err := ix.DecodeAll(); err != nil {
		return err
	}
	b, err := compactSnapshot(ix.snapshotParts(chunkNameBytes), ix.lto)
	if err != nil {
		return fmt.Errorf("%s: %w", ix.source, err)
	}
	_, err = w.Write(b)
	return err
}

// compactParts is what a compact snapshot holds: what its frames hold
// (the table of contents, then each chunk's columns and names), and its
// tables and chain links, stored as they are.
type compactParts struct {
	frames       [][]byte
	tables       []byte
	slots, links uint32
}

// snapshotParts returns the parts of ix's compact snapshot, in chunks of
// chunkBytes of names or a little more.
func (ix *Index) snapshotParts(chunkBytes int) compactParts {
	n := len(ix.syms)
	le := binary.LittleEndian
	nameBytes := 0
	for i := range ix.syms {
		nameBytes += int(ix.syms[i].nlen)
	}
	var objNames []byte
	for _, o := range ix.objs {
		objNames = append(objNames, o.name...)
	}
	toc := make([]byte, 0, tocFixed+len(ix.source)+len(objNames)+tocObject*len(ix.objs))
	for _, v := range []int{len(ix.objs), n, nameBytes, len(ix.source), len(objNames)} {
		toc = le.AppendUint32(toc, uint32(v))
	}
	toc = append(toc, ix.source...)
	toc = append(toc, objNames...)
	for _, o := range ix.objs {
		var fl uint16
		if o.pseudo {
			fl = 1
		}
		toc = le.AppendUint16(toc, uint16(len(o.name)))
		toc = le.AppendUint16(toc, fl)
		toc = le.AppendUint32(toc, o.end)
		toc = le.AppendUint32(toc, o.off)
		toc = le.AppendUint32(toc, o.size)
		toc = le.AppendUint64(toc, o.lo)
		toc = le.AppendUint64(toc, o.hi)
	}
	// The frames' contents: the table of contents, then each chunk's
	// columns and names.
	parts := compactParts{frames: [][]byte{toc}, slots: uint32(ix.nslot())}
	names := make([]byte, 0, nameBytes)
	prev := uint64(0)
	var addrPlanes []byte // each chunk's, for the table of contents
	for s0 := 0; s0 < n; {
		s1, at := s0, len(names)
		for ; s1 < n && len(names)-at < chunkBytes; s1++ {
			names = append(names, ix.name(uint32(s1))...)
		}
		syms := ix.syms[s0:s1]
		m := len(syms)
		// The address planes stored: as many as the widest difference
		// needs (the others are all zero).
		wide, p := uint64(0), prev
		for j := range syms {
			wide |= zigzag(syms[j].addr - p)
			p = syms[j].addr
		}
		nb := (mathbits.Len64(wide) + 7) / 8
		cols := make([]byte, 8+(fixedColumns+nb)*m)
		le.PutUint64(cols, prev)
		planes := cols[8:]
		for j := range syms {
			s := &syms[j]
			planes[j], planes[m+j], planes[2*m+j] = s.typ, byte(s.nlen), byte(s.nlen>>8)
			z := zigzag(s.addr - prev)
			for b := range nb {
				planes[(fixedColumns+b)*m+j] = byte(z >> (8 * b))
			}
			prev = s.addr
		}
		parts.frames = append(parts.frames, cols, names[at:])
		addrPlanes = append(addrPlanes, byte(nb))
		s0 = s1
	}
	parts.frames[0] = append(toc, addrPlanes...)
	t := make([]byte, 0, slotRecord*ix.nslot())
	for _, sl := range ix.canonicalSlots() {
		t = le.AppendUint32(t, sl.hash)
		t = le.AppendUint32(t, sl.idx)
	}
	for i, nx := range ix.next {
		if nx != 0 {
			t = le.AppendUint32(t, uint32(i))
			t = le.AppendUint32(t, nx)
			parts.links++
		}
	}
	parts.tables = t
	return parts
}

// canonicalSlots is ix's tables as inserting each object's names in
// symbol order makes them. Where names collide, the order of a table's
// entries is the order they were filed in, which the parallel builds do
// not fix; a snapshot holds the same bytes whatever the index was built
// from (see TestSnapshotDeterministic).
func (ix *Index) canonicalSlots() []slot {
	slots := ix.tableSlots()
	out := make([]slot, len(slots))
	var filed []slot
	for i := range ix.objs {
		o := &ix.objs[i]
		filed = filed[:0]
		for _, sl := range slots[o.off : o.off+o.size] {
			if sl.idx != 0 {
				filed = append(filed, sl)
			}
		}
		slices.SortFunc(filed, func(a, b slot) int { return cmp.Compare(a.idx, b.idx) })
		table := out[o.off : o.off+o.size]
		for _, sl := range filed {
			p := home(sl.hash, o.size)
			for table[p].idx != 0 {
				if p++; p == o.size {
					p = 0
				}
			}
			table[p] = sl
		}
	}
	return out
}

// compactSnapshot compresses the parts' frames and lays out the compact
// snapshot that holds them and the tables (flags bit 0 if lto).
func compactSnapshot(parts compactParts, lto bool) ([]byte, error) {
	workers := runtime.GOMAXPROCS(0)
	frames := make([][]byte, len(parts.frames))
	// A compressor each (they are not safe for concurrent use), taking
	// every workers-th frame: the output does not depend on workers.
	par.For(workers, workers, func(w int) {
		var c lz4.CompressorHC
		for k := w; k < len(frames); k += workers {
			frames[k] = encodeFrame(&c, parts.frames[k])
		}
	})
	le := binary.LittleEndian
	size, decoded := headerSize+8*len(frames), 0
	for k, f := range frames {
		size += len(f)
		decoded += len(parts.frames[k])
	}
	tablesAt := int(align8(uint64(size)))
	tables, used, err := packTables(parts.tables, parts.slots)
	if err != nil {
		return nil, err
	}
	size = tablesAt + len(tables)
	if decoded > expansionBound(size) {
		return nil, ErrTooRepetitive
	}
	out := make([]byte, headerSize, size)
	copy(out, snapshotMagic)
	le.PutUint32(out[8:], snapshotVersion)
	if lto {
		le.PutUint32(out[12:], 1)
	}
	le.PutUint32(out[16:], uint32(len(frames)))
	le.PutUint32(out[20:], used)
	le.PutUint32(out[32:], parts.slots)
	le.PutUint32(out[36:], parts.links)
	for k, f := range frames {
		out = le.AppendUint32(out, uint32(len(f)))
		out = le.AppendUint32(out, uint32(len(parts.frames[k])))
	}
	for _, f := range frames {
		out = append(out, f...)
	}
	out = append(out, make([]byte, tablesAt-len(out))...)
	out = append(out, tables...)
	le.PutUint64(out[24:], compactChecksum(out))
	return out, nil
}

// compactChecksum is the checksum of a compact snapshot b (whose checksum
// field it skips): the CRC-32 (IEEE) that the raw format's pieces use
// (rawChunkSum), which hash/crc32 computes at about twice xxhash64's
// speed: a load checks every byte of the file.
func compactChecksum(b []byte) uint64 {
	return uint64(crc32.Update(crc32.ChecksumIEEE(b[:24]), crc32.IEEETable, b[checksumSkip:]))
}

// WriteSnapshotFile writes ix to path atomically: a temporary file in the
// same folder, synced, then renamed over path.
func (ix *Index) WriteSnapshotFile(path string) error {
	return atomicfile.Write(path, ix.WriteSnapshot)
}

func zigzag(d uint64) uint64   { return d<<1 ^ uint64(int64(d)>>63) }
func unzigzag(z uint64) uint64 { return z>>1 ^ -(z & 1) }

// expansionBound is the most a compact snapshot of size bytes may decode
// to.
func expansionBound(size int) int {
	return int(min(max(uint64(size)*maxExpansion, minExpansionBound), maxInput))
}

// storedSize is the size of the snapshot whose first bytes are b, as its
// header declares it, for a reader of a stream of unknown size: need > 0
// asks for that many bytes of it first (the header, then a compact
// snapshot's frame table); known with size is the whole snapshot (size
// is len(b) when the header is one the loader will refuse: there is
// nothing more worth reading).
func storedSize(b []byte) (size, need int64, known bool) {
	le := binary.LittleEndian
	if len(b) < headerSize {
		return 0, headerSize, false
	}
	switch v := le.Uint32(b[8:]); v {
	case snapshotVersion:
		hs := int64(headerSize)
		nframe := int64(le.Uint32(b[16:]))
		if !frameCountOK(uint64(nframe)) {
			return int64(len(b)), 0, true
		}
		table := hs + 8*nframe
		if int64(len(b)) < table {
			return 0, table, false
		}
		size = table
		for k := range nframe {
			size += int64(le.Uint32(b[hs+8*k:]))
		}
		return int64(min(compactTables(b, uint64(size)).end, maxInput)), 0, true
	case rawVersion:
		if len(b) < rawHeaderSize {
			return 0, rawHeaderSize, false
		}
		plen := le.Uint64(b[16:])
		if plen > maxInput-rawHeaderSize {
			return int64(len(b)), 0, true
		}
		return rawHeaderSize + int64(plen), 0, true
	}
	return int64(len(b)), 0, true // an unknown version: the loader says so
}

// frameCountOK: a compact snapshot has its table of contents and two
// frames for each of 1 to maxChunks chunks.
func frameCountOK(n uint64) bool { return n >= 3 && n%2 == 1 && n <= 1+2*maxChunks }

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

// frame is where a compact snapshot's frame is in the file, and how many
// bytes it decodes to.
type snapFrame struct{ from, to, n uint64 }

// loadSnapshotSums is loadSnapshot with the chunk sums of a raw snapshot
// computed while it was read (see loadRawSnapshot).
func loadSnapshotSums(name string, b, sums []byte, lto bool) (*Index, error) {
	return loadSnapshotArena(name, b, sums, lto, nil)
}

// loadSnapshotArena is loadSnapshotSums whose index, if it is a compact
// snapshot's decoded lazily, takes its memory from arena (nil: none).
func loadSnapshotArena(name string, b, sums []byte, lto bool, arena *Arena) (*Index, error) {
	if len(b) < 12 {
		return nil, snapErr(name, "truncated header (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	v := le.Uint32(b[8:])
	switch v {
	case snapshotVersion:
	case rawVersion:
		return loadRawSnapshot(name, b, sums, lto)
	default:
		if v > snapshotVersion {
			return nil, snapErr(name, "version %d, from a newer klpresolve (this build reads %d and %d): use that klpresolve, or write the snapshot again with this one", v, snapshotVersion, rawVersion)
		}
		return nil, snapErr(name, "version %d, which this build does not read (it reads %d and %d): write the snapshot again with this build", v, snapshotVersion, rawVersion)
	}
	hs := uint64(headerSize)
	if uint64(len(b)) < hs {
		return nil, snapErr(name, "truncated header (%d bytes)", len(b))
	}
	flags := le.Uint32(b[12:])
	if flags&^1 != 0 {
		return nil, snapErr(name, "unknown flags %#x", flags)
	}
	nframe := uint64(le.Uint32(b[16:]))
	if !frameCountOK(nframe) {
		return nil, snapErr(name, "bad frame count %d", nframe)
	}
	body := hs + 8*nframe
	if uint64(len(b)) < body {
		return nil, snapErr(name, "truncated frame table (%d bytes, %d frames)", len(b), nframe)
	}
	// The bookkeeping's memory, an Arena's if it has some spare: a lazy
	// index keeps it, and gives it back with the Arena.
	sp := arena.takeSpare()
	kept := false
	defer func() {
		if !kept {
			arena.putSpare(sp)
		}
	}()
	sp.frames = reuse(sp.frames, int(nframe))
	frames := sp.frames
	at, decoded := body, uint64(0)
	for k := range frames {
		r := b[hs+8*uint64(k):]
		stored, n := uint64(le.Uint32(r)), uint64(le.Uint32(r[4:]))
		frames[k] = snapFrame{at, at + stored, n}
		at += stored
		decoded += n
	}
	t := compactTables(b, at)
	end := t.end
	if compactChecksum(b) != le.Uint64(b[24:]) {
		if end > uint64(len(b)) { // a copy cut off, most likely
			return nil, snapErr(name, "truncated: %d bytes, its frames and tables need %d", len(b), end)
		}
		return nil, snapErr(name, "checksum mismatch (file corrupted)")
	}
	if end != uint64(len(b)) {
		return nil, snapErr(name, "frames and tables add up to %d bytes, the file has %d", end, len(b))
	}
	if !allZero(b[at:t.at]) {
		return nil, snapErr(name, "padding before the tables is not zero")
	}
	if decoded > uint64(expansionBound(len(b))) {
		return nil, snapErr(name, "frames decode to %d bytes, more than a file of %d bytes can hold", decoded, len(b))
	}
	if t.used > t.nslot || !bitmapOK(b[t.at:t.recsAt], t.nslot, t.used) {
		return nil, snapErr(name, "the slot bitmap does not mark %d of %d slots", t.used, t.nslot)
	}
	workers := runtime.GOMAXPROCS(0)
	decode := func(f snapFrame, dst []byte) error { return decodeFrame(b, f, dst) }
	toc := make([]byte, frames[0].n)
	if err := decode(frames[0], toc); err != nil {
		return nil, snapErr(name, "table of contents: %v", err)
	}
	fileLTO := flags&1 != 0
	ix, nsym, nname, planes, err := readTOC(name, toc, lto || fileLTO, t.nslot, (nframe-1)/2)
	if err != nil {
		return nil, err
	}
	sp.chunks = reuse(sp.chunks, len(frames[1:])/2)
	ch, err := chunksOf(name, frames[1:], nsym, nname, planes, sp.chunks)
	if err != nil {
		return nil, err
	}
	if fileLTO || !lto {
		// Every object's addresses zero: kptr_restrict, as in a text
		// (which the writer cannot have had: it does not load).
		if !slices.ContainsFunc(ix.objs, func(o object) bool { return o.lo != 0 || o.hi != 0 }) {
			return nil, fmt.Errorf("%s: %w", name, ErrRestricted)
		}
		// The tables are stored, keyed as this index's are (an exact
		// file asked for LTO matching is rebuilt, below).
		ix.arena = arena
		if err := ix.loadLazy(name, b, t, ch, nsym, nname, sp); err != nil {
			return nil, err
		}
		kept = true
		return ix, nil
	}
	// The names, the records and the tables of a large index go in
	// anonymous mappings where the system has them, on huge pages: fresh
	// heap memory took a fault per 4 KiB (2,900 in a one-shot load of
	// 122,000 symbols; 2,000 now, and 12.0 ms against 13.5).
	names, nmap := anonBytes(int(nname))
	ix.data = unsafe.String(unsafe.SliceData(names), len(names))
	st := snapshotStream(nsym)
	defer func() {
		if st.mem != nil {
			unmapFile(st.mem)
		}
		if nmap != nil {
			unmapFile(nmap)
		}
	}()
	if err := ix.rebuild(name, ch, st, names, workers, func(c *snapChunk, cols []byte) error {
		if err := decode(c.cols, cols); err != nil {
			return snapErr(name, "chunk %d's columns: %v", c.k, err)
		}
		if err := decode(c.names, names[c.n0:c.n1]); err != nil {
			return snapErr(name, "chunk %d's names: %v", c.k, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if st.mem != nil {
		// The records and tables are in the mapping, which ix keeps; what
		// only the build read goes back to the kernel.
		ix.anon, st.mem = st.mem, nil
		st.releaseScratch()
	}
	ix.own(nmap)
	nmap = nil
	return ix, nil
}

// encodeFrame is src as a frame: an LZ4 block (compressed as hard as
// the codec can, since a snapshot is written once and read many times),
// or src itself where that block would not be smaller.
func encodeFrame(c *lz4.CompressorHC, src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := c.CompressBlock(src, dst)
	if err != nil || n == 0 || n >= len(src) {
		return slices.Clone(src)
	}
	return dst[:n:n]
}

// decodeFrame decodes frame f of the compact snapshot b into dst, which
// must be exactly the size the frame table gives: a frame stored at that
// size is a copy, any other is an LZ4 block that must decode to exactly
// dst (the decoder writes nothing past it).
func decodeFrame(b []byte, f snapFrame, dst []byte) error {
	src := b[f.from:f.to]
	if len(src) == len(dst) {
		copy(dst, src)
		return nil
	}
	if len(dst) == 0 {
		return fmt.Errorf("%d bytes stored for none", len(src))
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return fmt.Errorf("it does not decode to the %d bytes the frame table says (%v)", len(dst), err)
	}
	if n != len(dst) {
		return fmt.Errorf("it decodes to %d bytes, the frame table says %d", n, len(dst))
	}
	return nil
}

// snapChunk is a chunk of a compact snapshot: its symbols [s0, s1) and their
// names' bytes [n0, n1), and its two frames.
type snapChunk struct {
	k              int
	s0, s1, n0, n1 uint32
	planes         uint8 // address planes its columns store
	cols, names    snapFrame
}

// addObject checks object i of a snapshot being loaded against the
// objects before it, and files it: its symbols follow the previous
// object's (which ended at prev) and end within nsym; vmlinux comes
// first; no name comes twice. (A snapshot's objects cover its symbols in
// order, as build() makes them.)
func (ix *Index) addObject(name string, i int, o object, prev uint32, nsym uint64) error {
	if o.start != prev || o.end < o.start || uint64(o.end) > nsym {
		return snapErr(name, "object %q: symbol range %d-%d does not follow %d within %d symbols", o.name, o.start, o.end, prev, nsym)
	}
	if i == 0 && o.name != Vmlinux {
		return snapErr(name, "first object is %q, not vmlinux", o.name)
	}
	if _, dup := ix.byName[o.name]; dup {
		return snapErr(name, "object %q listed twice", o.name)
	}
	ix.byName[o.name] = i
	ix.objs[i] = o
	return nil
}

// chunksOf lays out in ch the chunks of a compact snapshot of nsym
// symbols and nname bytes of names from the frames after the table of
// contents (two frames a chunk), each chunk with its count of address
// planes (planes, from the table of contents).
func chunksOf(name string, frames []snapFrame, nsym int, nname uint32, planes []byte, ch []snapChunk) ([]snapChunk, error) {
	s, nb := uint64(0), uint64(0)
	for k := range ch {
		cols, names := frames[2*k], frames[2*k+1]
		if planes[k] > 8 {
			return nil, snapErr(name, "chunk %d: %d address planes", k, planes[k])
		}
		per := uint64(fixedColumns + planes[k])
		m := (cols.n - 8) / per
		if cols.n < 8+per || (cols.n-8)%per != 0 || names.n < m {
			return nil, snapErr(name, "chunk %d: %d bytes of columns, %d of names", k, cols.n, names.n)
		}
		ch[k] = snapChunk{k, uint32(s), uint32(s + m), uint32(nb), uint32(nb + names.n), planes[k], cols, names}
		s, nb = s+m, nb+names.n
		if s > uint64(nsym) || nb > uint64(nname) {
			break
		}
	}
	if s != uint64(nsym) || nb != uint64(nname) {
		return nil, snapErr(name, "chunks hold %d symbols and %d name bytes, the table of contents says %d and %d", s, nb, nsym, nname)
	}
	return ch, nil
}

// readTOC reads the table of contents of a compact snapshot of nchunk
// chunks into a new Index with its objects; it returns the symbols'
// count, the names' size and each chunk's count of address planes. The
// objects have their hash tables, which fill the nslot slots one after
// the other, each the size build() gives it.
func readTOC(name string, toc []byte, lto bool, nslot, nchunk uint64) (*Index, int, uint32, []byte, error) {
	le := binary.LittleEndian
	if len(toc) < tocFixed {
		return nil, 0, 0, nil, snapErr(name, "table of contents of %d bytes", len(toc))
	}
	var c [5]uint64
	for i := range c {
		c[i] = uint64(le.Uint32(toc[4*i:]))
	}
	nobj, nsym, nname, nsrc, nobjName := c[0], c[1], c[2], c[3], c[4]
	rec := uint64(tocObject)
	if need := tocFixed + nsrc + nobjName + rec*nobj + nchunk; need != uint64(len(toc)) {
		return nil, 0, 0, nil, snapErr(name, "table of contents is %d bytes, its counts need %d", len(toc), need)
	}
	if nsym == 0 {
		return nil, 0, 0, nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	if nobj == 0 || nobj > maxObjects {
		return nil, 0, 0, nil, snapErr(name, "bad object count %d", nobj)
	}
	if nname < nsym || nname > maxInput {
		return nil, 0, 0, nil, snapErr(name, "%d bytes of names for %d symbols", nname, nsym)
	}
	at := uint64(tocFixed)
	src := string(toc[at : at+nsrc])
	at += nsrc
	onames := string(toc[at : at+nobjName])
	at += nobjName
	ix := &Index{source: src, byName: make(map[string]int, nobj), lto: lto}
	ix.objs = make([]object, nobj)
	prev, noff, tables := uint32(0), uint64(0), uint64(0)
	for i := range ix.objs {
		r := toc[at+rec*uint64(i):]
		nl, fl, end := uint64(le.Uint16(r)), le.Uint16(r[2:]), le.Uint32(r[4:])
		if nl == 0 || noff+nl > nobjName {
			return nil, 0, 0, nil, snapErr(name, "object %d: name out of range", i)
		}
		o := object{name: onames[noff : noff+nl], start: prev, end: end, pseudo: fl&1 != 0}
		noff += nl
		if err := ix.addObject(name, i, o, prev, nsym); err != nil {
			return nil, 0, 0, nil, err
		}
		ob := &ix.objs[i]
		ob.off, ob.size, ob.lo, ob.hi = le.Uint32(r[8:]), le.Uint32(r[12:]), le.Uint64(r[16:]), le.Uint64(r[24:])
		if uint64(ob.off) != tables || ob.size != tableSize(ob.end-ob.start) || uint64(ob.off)+uint64(ob.size) > nslot {
			return nil, 0, 0, nil, snapErr(name, "object %q: hash table at %d, %d slots, does not fit", ob.name, ob.off, ob.size)
		}
		tables += uint64(ob.size)
		prev = end
	}
	if uint64(prev) != nsym || noff != nobjName {
		return nil, 0, 0, nil, snapErr(name, "objects cover %d of %d symbols and %d of %d name bytes", prev, nsym, noff, nobjName)
	}
	if tables != nslot {
		return nil, 0, 0, nil, snapErr(name, "objects' tables fill %d of %d slots", tables, nslot)
	}
	return ix, int(nsym), uint32(nname), toc[uint64(len(toc))-nchunk:], nil
}

// rebuild fills ix's symbols chunk by chunk on workers goroutines, in the
// arrays of st (zeroed), their names in names (ix.data): each chunk is decoded (by decode, into its names
// and a scratch buffer for its columns), then its records are rebuilt and
// its names hashed while they are in cache, and vmlinux's symbols sorted
// by bucket for its table; then the objects' ranges and the tables.
func (ix *Index) rebuild(name string, ch []snapChunk, st *stream, names []byte, workers int, decode func(*snapChunk, []byte) error) error {
	n := int(ch[len(ch)-1].s1)
	hashes := st.hashes[:n]
	ix.syms = st.syms[:n]
	vm := ix.objs[0]
	var order []slot
	var vmRuns []sortedRun
	if splitTable(vm.end - vm.start) {
		order = st.order
		if order == nil {
			order = make([]slot, vm.end)
		}
		vmRuns = make([]sortedRun, len(ch))
	}
	type objRun struct {
		obj int
		r   run
	}
	runs := make([][]objRun, len(ch))
	errs := make([]error, len(ch))
	nonzero := make([]bool, len(ch))
	// Scratch for the columns, one per worker at a time.
	scratch := make(chan []byte, workers)
	for range workers {
		scratch <- nil
	}
	par.For(workers, len(ch), func(k int) {
		c := &ch[k]
		cols := <-scratch
		defer func() { scratch <- cols }()
		n := 8 + (fixedColumns+int(c.planes))*int(c.s1-c.s0)
		if cap(cols) < n {
			cols = make([]byte, n)
		}
		cols = cols[:n]
		if errs[k] = decode(c, cols); errs[k] != nil {
			return
		}
		syms, h := ix.syms[c.s0:c.s1], hashes[c.s0:c.s1]
		seen, err := decodeColumns(name, c, cols, syms)
		if err != nil {
			errs[k] = err
			return
		}
		for j := range syms {
			off, nl := int(syms[j].off), int(syms[j].nlen)
			switch i := c.s0 + uint32(j); {
			case ix.ltoSym(i):
				h[j] = hashKeyString(ix.name(i), true)
			case nl < 32 && off+32 <= int(c.n1):
				// hashKey, branch-free, as the parse; the 32 bytes it
				// reads stay in this chunk's names (the next chunk's may
				// be being decoded).
				h[j] = uint32(hashShort(names[off:], nl))
			default:
				h[j] = uint32(xxhash.Sum64(names[off : off+nl]))
			}
		}
		nonzero[k] = seen != 0
		// The objects this chunk holds symbols of, and their ranges here.
		for o := ix.objectOf(c.s0); o < len(ix.objs) && ix.objs[o].start < c.s1; o++ {
			r := newRun()
			for _, s := range ix.syms[max(c.s0, ix.objs[o].start):min(c.s1, ix.objs[o].end)] {
				r.add(s.addr, s.typ)
			}
			runs[k] = append(runs[k], objRun{o, r})
		}
		// This chunk's share of the tables' pages, faulted in here, on
		// all cores, rather than by the fill.
		st.touch(int(c.s0), int(c.s1-c.s0))
		if vmRuns != nil && c.s0 < vm.end {
			hi := min(c.s1, vm.end)
			out := order[c.s0:hi]
			vmRuns[k] = sortedRun{out, sortRun(hashes[c.s0:hi], c.s0, out)}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if !slices.Contains(nonzero, true) {
		return fmt.Errorf("%s: %w", name, ErrRestricted)
	}
	whole := make([]run, len(ix.objs))
	for i := range whole {
		whole[i] = newRun()
	}
	for _, rs := range runs {
		for _, or := range rs {
			whole[or.obj].merge(or.r)
		}
	}
	for i := range ix.objs {
		ix.objs[i].setRange(whole[i])
	}
	if vmRuns != nil {
		vmRuns = slices.DeleteFunc(vmRuns, func(r sortedRun) bool { return r.start == nil })
	}
	ix.buildTables(hashes, st.block, vmRuns)
	return nil
}

// decodeColumns fills syms, the records of chunk c, from its columns
// cols (see the format), their names' offsets from where the chunk's
// names start; it returns their addresses ORed.
//
// A chunk of up to fastPlanes address planes (nearly every one: a
// kernel's symbols are sorted) is decoded in one pass, each record
// written once; a chunk with more, or whose names do not add up, goes
// the long way (decodeColumnsSlow), which says what is wrong.
func decodeColumns(name string, c *snapChunk, cols []byte, syms []sym) (uint64, error) {
	m := len(syms)
	if int(c.planes) > fastPlanes || m > len(noPlane) {
		return decodeColumnsSlow(name, c, cols, syms)
	}
	prev, col := binary.LittleEndian.Uint64(cols), cols[8:]
	typ, lo, hi := col[:m], col[m:2*m], col[2*m:3*m]
	// The planes a chunk does not store read as zeros.
	var p [fastPlanes][]byte
	for b := range p {
		p[b] = noPlane[:m]
		if b < int(c.planes) {
			p[b] = col[(fixedColumns+b)*m : (fixedColumns+1+b)*m]
		}
	}
	p0, p1, p2, p3 := p[0][:m], p[1][:m], p[2][:m], p[3][:m]
	off, seen := c.n0, uint64(0)
	for j := range syms {
		nl := uint32(lo[j]) | uint32(hi[j])<<8
		if nl-1 >= KSYMNameLen-1 { // 0, or KSYMNameLen and over
			return decodeColumnsSlow(name, c, cols, syms)
		}
		d := uint64(p0[j]) | uint64(p1[j])<<8 | uint64(p2[j])<<16 | uint64(p3[j])<<24
		prev += unzigzag(d)
		// Field by field: a literal is built on the stack by narrow
		// stores, then copied with a 16-byte load they cannot forward to.
		r := &syms[j]
		r.addr, r.off, r.nlen, r.typ, r.flags = prev, off, uint16(nl), typ[j], 0
		seen |= prev
		off += nl
	}
	// Each length is under KSYMNameLen and a chunk has fewer than
	// len(noPlane) symbols, so off cannot wrap: ending at the chunk's
	// end, no name ran past it.
	if off != c.n1 {
		return decodeColumnsSlow(name, c, cols, syms)
	}
	return seen, nil
}

// fastPlanes is the most address planes decodeColumns decodes in one
// pass.
const fastPlanes = 4

// noPlane stands for the address planes a chunk does not store (read
// only: nothing writes it).
var noPlane [4096]byte

// decodeColumnsSlow is decodeColumns plane by plane, for any chunk.
func decodeColumnsSlow(name string, c *snapChunk, cols []byte, syms []sym) (uint64, error) {
	m := len(syms)
	prev, planes := binary.LittleEndian.Uint64(cols), cols[8:]
	off := c.n0
	for j := range syms {
		nl := uint32(planes[m+j]) | uint32(planes[2*m+j])<<8
		if nl == 0 || nl >= KSYMNameLen || off+nl > c.n1 {
			return 0, snapErr(name, "symbol %d: name out of range", int(c.s0)+j)
		}
		syms[j] = sym{off: off, nlen: uint16(nl), typ: planes[j]}
		off += nl
	}
	if off != c.n1 {
		return 0, snapErr(name, "chunk %d: its names are %d bytes, its symbols' lengths add up to %d", c.k, c.n1-c.n0, off-c.n0)
	}
	// The address differences, plane by plane (the chunk's widest
	// difference says how many are stored: a kernel's symbols are sorted,
	// a module's close together).
	for b := range int(c.planes) {
		plane := planes[(fixedColumns+b)*m : (fixedColumns+1+b)*m]
		for j := range syms {
			syms[j].addr |= uint64(plane[j]) << (8 * b)
		}
	}
	seen := uint64(0)
	for j := range syms {
		prev += unzigzag(syms[j].addr)
		syms[j].addr = prev
		seen |= prev
	}
	return seen, nil
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

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.NativeEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// anonBytes returns n zeroed bytes: when they fill a huge page, in an
// anonymous mapping (returned as well, for the caller to unmap) where the
// system has them, starting on a huge page boundary and advised to use
// huge pages; on the heap otherwise. (The mapping's own start is only page
// aligned: 2.5 MB mapped anywhere holds a whole huge page one time in
// four, and the names were faulted in 4 KiB at a time the other three: a
// compact load took 15-19 ms in a loop here, 14-16 aligned.)
//
// The mapping reaches the end of the last huge page the bytes end in,
// which is advised too where they fill an eighth of it: 2.97 MB of names
// took 237 faults of 4 KiB for their last 0.97 MB.
func anonBytes(n int) (b, mapping []byte) {
	if n >= hugepage.Size {
		up := (n + hugepage.Size - 1) &^ (hugepage.Size - 1)
		if m, err := mapAnon(up + hugepage.Size); err == nil {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
			skip := int((base+hugepage.Size-1)&^(hugepage.Size-1) - base)
			hugepage.AdviseWithin(m[skip : skip+n : skip+up])
			return m[skip : skip+n : skip+n], m
		}
	}
	return make([]byte, n), nil
}

// snapshotStream returns the arrays for the records of a compact snapshot
// of n symbols (see newStream): on the heap for a small one; for one whose
// records nearly fill a huge page, with room for a whole one, which they
// then get.
func snapshotStream(n int) *stream {
	const perPage = hugepage.Size / int(unsafe.Sizeof(sym{}))
	switch {
	case n < perPage/8:
		return &stream{syms: make([]sym, n), hashes: make([]uint32, n)}
	case n < perPage && n >= perPage/2:
		n = perPage
	}
	return newStream(n)
}
