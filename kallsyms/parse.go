// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/klpresolve/klpresolve/internal/hugepage"
	"github.com/klpresolve/klpresolve/internal/input"
	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/internal/par"
)

// KSYMNameLen is the kernel's KSYM_NAME_LEN since Linux 6.1: a name has at
// most KSYMNameLen-1 bytes.
const KSYMNameLen = 512

// DefaultPath is where the running kernel publishes its symbols.
const DefaultPath = "/proc/kallsyms"

// Options tune how an index is built. The zero value is the default.
type Options struct {
	// LTO also matches a name against vmlinux's symbols whose
	// ".llvm.<digits>" suffix is stripped, as livepatch did on kernels
	// 6.2-6.10 built with CONFIG_LTO_CLANG (kallsyms_on_each_match_symbol()
	// compares names after cleanup_symbol_name()); modules' symbols are
	// matched exactly, as module_kallsyms_on_each_symbol() always did.
	// Exact matching, as 6.1 and 6.11+ do, is the default. A snapshot
	// written in LTO mode loads in it anyway; one written without it
	// loads in LTO mode when LTO is set, except a raw one, whose tables
	// are stored with exact keys (ErrSnapshotExact).
	LTO bool
	// Workers is how many goroutines parse; 0 means GOMAXPROCS.
	Workers int
	// NoMap makes Open read a snapshot file into memory instead of
	// mapping it. A mapping is faster to load (nothing is copied), but
	// the file must then not be truncated or rewritten in place while
	// the Index is in use (a raw snapshot, used in place; a compact one,
	// whose tables are used in place and whose chunks are decoded from
	// the mapping when first needed): the kernel would kill the process
	// (SIGBUS), or lookups would see bytes that were never validated.
	// WriteSnapshotRawFile replaces a file by renaming a new one over it,
	// which is safe. A mapped index's lookups also cost more (the file's
	// 4 KiB pages miss the TLB where a read buffer sits in huge pages,
	// about a third more): read a snapshot that will answer millions of
	// lookups.
	NoMap bool
	// MaxSymbols bounds the lines of a streamed input (0:
	// DefaultMaxSymbols).
	MaxSymbols int
	// Arena, if set, is the memory the index of a compact snapshot
	// decodes into, reused from one index to the next (see Arena).
	Arena *Arena
	// Slide is added to vmlinux's addresses, but for absolute symbols'
	// (x86_64's per-cpu offsets), as KASLR moves a running kernel: a
	// System.map's or a kernel image's link-time addresses then answer
	// for the kernel running with that offset. SlideTo is the running
	// kernel's _text instead (as its /proc/kallsyms shows it), the slide
	// being its distance from the input's own _text (or _stext). A
	// snapshot keeps the addresses it was written with: either on a
	// snapshot is ErrSlide.
	Slide, SlideTo uint64
	// MapText maps a plain (uncompressed) text file too, instead of
	// reading it, and puts the index's arrays in an anonymous mapping of
	// huge pages instead of the Go heap: the profile of a short-lived
	// process, such as klpresolve's own commands, which open one index and
	// make a few thousand lookups at most. Open then copies nothing,
	// faults in no buffer the size of the file, and makes no pass over it
	// before the parse: a fresh process indexes a kallsyms in about
	// two thirds of the time, with a fifth of the page faults
	// (docs/benchmarks.md). Lookups
	// cost more: each reads its name from the file's 4 KiB pages (about
	// 125 ns instead of 85), and in a loop that keeps its heap warm Open
	// is no faster. As with a
	// mapped raw snapshot, the file must not be truncated or rewritten in
	// place while the Index is in use, and the mappings are released by
	// Close or once the Index is unreachable. NoMap overrides it.
	MapText bool
}

func (o *Options) workers() int {
	if o != nil && o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (o *Options) lto() bool { return o != nil && o.LTO }

func (o *Options) mapSnapshots() bool { return o == nil || !o.NoMap }

func (o *Options) mapText() bool { return o != nil && o.MapText && !o.NoMap }

func (o *Options) arena() *Arena {
	if o == nil {
		return nil
	}
	return o.Arena
}

// Open reads path ("-" is standard input) into an index: a /proc/kallsyms
// or System.map text, plain or gzip/zstd compressed, or a snapshot file
// written by WriteSnapshot (recognised by its magic bytes). A raw snapshot
// file is mapped, not read (see Options.NoMap); the mapping is released
// once the Index is unreachable. With Options.MapText, so is a plain
// text file.
func Open(path string, opts Options) (*Index, error) {
	ix, err := open(path, &opts)
	return opts.slid(ix, err)
}

func open(path string, opts *Options) (*Index, error) {
	f, err := readRegular(path, opts.workers(), opts.mapSnapshots(), opts.mapText())
	if err != nil {
		return nil, err
	}
	if f != nil && f.compact {
		ix, err := loadSnapshotArena(path, f.data, nil, opts.lto(), opts.arena())
		if err == nil && ix.lazy != nil {
			ix.own(f.data) // its chunks are decoded from the mapping
			return ix, nil
		}
		unmapFile(f.data) // nothing of the index points into it
		return ix, err
	}
	if f != nil && f.mapped {
		var ix *Index
		if f.text {
			ix, err = newParser(path, opts).parseMapped(f.data)
		} else {
			ix, err = loadSnapshotSums(path, f.data, nil, opts.lto())
		}
		if err != nil {
			unmapFile(f.data)
			return nil, err
		}
		ix.own(f.data)
		return ix, nil
	}
	if f != nil && f.image {
		return fromImage(path, f.data, opts)
	}
	if f != nil {
		if isSnapshot(f.data) {
			return loadSnapshotSums(path, f.data, f.sums, opts.lto())
		}
		p := newParser(path, opts)
		p.dispatch(f.data, 0, len(f.data), f)
		return p.finish(f.data)
	}
	src, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return parseSource(src.Name, src.Reader, src.SizeHint, opts)
}

// Parse reads a kallsyms or System.map text (or a snapshot) from r. name is
// used in error messages.
func Parse(name string, r io.Reader, opts Options) (*Index, error) {
	ix, err := parse(name, r, &opts)
	return opts.slid(ix, err)
}

func parse(name string, r io.Reader, opts *Options) (*Index, error) {
	src, err := input.Wrap(name, io.NopCloser(r), 0)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return parseSource(name, src.Reader, 0, opts)
}

// ParseBytes builds an index from an in-memory text. The index keeps data
// (its names point into it): the caller must not modify it afterwards.
func ParseBytes(name string, data []byte, opts Options) (*Index, error) {
	ix, err := parseBytes(name, data, &opts)
	return opts.slid(ix, err)
}

func parseBytes(name string, data []byte, opts *Options) (*Index, error) {
	if maybeImage(data[:min(len(data), kimage.HeadLen)]) {
		return fromImage(name, data, opts)
	}
	if isSnapshot(data) {
		return loadSnapshotArena(name, data, nil, opts.lto(), opts.arena())
	}
	p := newParser(name, opts)
	p.dispatch(data, 0, len(data), &wholeInput{data: data})
	return p.finish(data)
}

func parseSource(name string, r io.Reader, hint int64, opts *Options) (*Index, error) {
	// A kernel image, compressed as a whole (vmlinux.gz) or arriving on a
	// stream: its first bytes tell, and it is read whole.
	br := bufio.NewReaderSize(r, kimage.HeadLen)
	if head, _ := br.Peek(kimage.HeadLen); maybeImage(head) {
		data, err := input.ReadAll(br, hint, kimage.MaxImage)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return fromImage(name, data, opts)
	}
	return newParser(name, opts).stream(br, hint)
}

// stream builds the index of an input read from r, parsing it while it
// arrives (readAndParse).
func (p *parser) stream(r io.Reader, hint int64) (*Index, error) {
	defer p.freeStream() // after the workers are done (abort, finish)
	buf, m, err := p.readAndParse(r, hint)
	kept := false
	defer func() {
		if m != nil && !kept {
			p.unmapBuffer(m) // after the workers are done, too
		}
	}()
	if err != nil {
		p.abort()
		if _, ok := err.(*ParseError); ok {
			return nil, err // it names the input
		}
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	if isSnapshot(buf) {
		p.abort()
		if m != nil && unsafe.SliceData(buf) == unsafe.SliceData(m) {
			buf = bytes.Clone(buf) // a loader may keep it
		}
		return loadSnapshot(p.name, buf, p.lto)
	}
	ix, err := p.finish(buf)
	if err != nil {
		return nil, err
	}
	p.keepStream(ix)
	if m != nil && unsafe.SliceData(buf) == unsafe.SliceData(m) {
		if len(buf) < mapStreamFrom {
			// A small input goes to the heap, so that the names handed
			// out need no copies (nameOut).
			ix.data = strings.Clone(ix.data)
		} else {
			ix.text, ix.textBusy, kept = m, p.prefaulting, true
		}
	}
	ix.own(nil)
	return ix, nil
}

// parseMapped builds the index of a text file mapped whole (Options.MapText)
// the way a stream's is built (see stream): the chunks count their own
// lines and claim their windows of one anonymous mapping, sized for lines
// of streamLine bytes, so that nothing goes over the file before the
// parse. The Index keeps that mapping (keepStream); the caller has it own
// the file's mapping too (Index.own).
func (p *parser) parseMapped(data []byte) (*Index, error) {
	defer p.freeStream()
	p.st = newStream(len(data)/streamLine + 1)
	p.dispatch(data, 0, len(data), nil)
	ix, err := p.finish(data)
	if err != nil {
		return nil, err
	}
	p.keepStream(ix)
	return ix, nil
}

// Chunking: parsing overlaps reading. Complete lines are handed to the
// worker as soon as at least minChunk bytes of them have arrived (reading
// /proc/kallsyms is slow: the kernel formats 4 KiB per read), and a large
// read is split into pieces of at most maxChunk so both cores get work.
// Each hand-off can wake a parked worker from the reader's thread, which
// is the critical path: 1 MiB chunks (about 6 for a kernel's kallsyms)
// instead of 256 KiB ones cut a one-shot run's context switches from
// ~330 to ~250.
const (
	minChunk = 1 << 20
	maxChunk = 1 << 20
	// streamReserve is the buffer first reserved for input of unknown
	// size: a /proc/kallsyms of 150k symbols is about 7 MB.
	streamReserve = 16 << 20
	// mapStreamFrom: a stream's buffer of at least this many bytes is
	// reserved in an anonymous mapping (see readAndParse).
	mapStreamFrom = 4 << 20
	// streamLine is the shortest mean line length the stream's symbol
	// arrays are sized for (a kallsyms line has 44 bytes on average, a
	// 32-bit System.map's 30); shorter lines are copied once at the end.
	streamLine = 24
)

type parser struct {
	name       string
	lto        bool
	workers    int
	maxSymbols int // a stream's lines at most (Options.MaxSymbols)

	jobs    chan *chunk
	wg      sync.WaitGroup
	chunks  []*chunk
	started int // workers running
	// reading: the input is still arriving (readAndParse), so one core is
	// left to the reader.
	reading bool
	// st: a streamed input's arrays, made at its first chunk; lastClaim
	// is the channel on which the newest chunk hands on the end of its
	// window (see chunk.claim).
	st        *stream
	lastClaim chan int
	// prefaulting: closed once the stream's prefault goroutine is gone.
	prefaulting <-chan struct{}
}

// stream holds the arrays a streamed input's chunks fill windows of, each
// chunk its own, claimed in input order (chunk.claim).
type stream struct {
	syms   []sym
	hashes []uint32
	// order: vmlinux's symbols sorted by bucket (chunk.sortVmlinux).
	order []slot
	// block: room for the tables, chains and scratch of buildTables
	// (tableSlots), which the chunks fault in as they go (chunk.touch).
	block []slot
	// mem: the mapping that holds them all (nil when syms and hashes are
	// on the heap, and order and block absent), unmapped by
	// parser.freeStream unless the Index uses it.
	mem []byte
	// scratch: the part of mem that holds hashes and order, which only
	// the build reads (released once the index is built, see
	// releaseScratch).
	scratch []byte
}

// releaseScratch gives the pages of the arrays only the build read back to
// the kernel.
func (st *stream) releaseScratch() {
	hugepage.Release(st.scratch)
	st.scratch = nil
}

// chunk is a run of complete lines, parsed by one worker.
type chunk struct {
	data   []byte // the lines (a window of the input buffer)
	base   int    // offset of data[0] in the input
	syms   []sym
	hashes []uint32
	runs   []run
	lines  int // lines in the chunk (for error line numbers)
	err    *ParseError
	// window: syms and hashes are windows of whole and wholeHashes, the
	// arrays of the entire input.
	window      bool
	whole       []sym
	wholeHashes []uint32
	// at: where its window starts in whole. A streamed input's chunk: st
	// is the stream (see claim: claimIn brings at from the previous
	// chunk, claimOut hands the next one its start, -1 for no more
	// windows). vmRun: its vmlinux symbols sorted by bucket, in its window
	// of order (sortVmlinux).
	st                *stream
	claimIn, claimOut chan int
	at                int
	order             []slot
	vmRun             sortedRun
	// vmlinux's lines in this chunk: whether their addresses never
	// decrease, and the first and last address.
	hasVm, vmSorted bool
	vmFirst, vmLast uint64
}

// run is a stretch of consecutive lines of one object in a chunk.
type run struct {
	obj   string // "" for vmlinux
	count int
	// The address range of its symbols, and of its absolute ('A', 'a')
	// symbols apart (see object.setRange).
	lo, hi, alo, ahi uint64
}

func newRun() run { return run{lo: ^uint64(0), alo: ^uint64(0)} }

// merge adds the lines of s (of the same object) to r.
func (r *run) merge(s run) {
	r.count += s.count
	r.lo, r.hi = min(r.lo, s.lo), max(r.hi, s.hi)
	r.alo, r.ahi = min(r.alo, s.alo), max(r.ahi, s.ahi)
}

func (r *run) add(addr uint64, typ byte) {
	r.count++
	if typ|0x20 == 'a' {
		r.alo, r.ahi = min(r.alo, addr), max(r.ahi, addr)
	} else {
		r.lo, r.hi = min(r.lo, addr), max(r.hi, addr)
	}
}

func newParser(name string, opts *Options) *parser {
	p := &parser{name: name, lto: opts.lto(), workers: opts.workers(), maxSymbols: DefaultMaxSymbols}
	if opts != nil && opts.MaxSymbols > 0 {
		p.maxSymbols = opts.MaxSymbols
	}
	return p
}

// start runs the workers: all of them, or while the input is still being
// read, one fewer than there are cores. The reader's read(2) calls are
// the critical path for /proc/kallsyms (the kernel formats 4 KiB per
// call): a reader that comes back from one and finds both Ps taken by
// workers waits for one of them to be preempted.
func (p *parser) start() {
	n := p.workers
	if p.reading {
		n = max(1, n-1)
	}
	if p.jobs == nil {
		p.jobs = make(chan *chunk, 64)
	}
	for ; p.started < n; p.started++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for c := range p.jobs {
				c.parse(p.name, p.lto)
			}
		}()
	}
}

// drain parses the chunks still queued on the calling goroutine too, then
// waits for the workers: a worker goroutine may start late (see par.For).
func (p *parser) drain() {
	if p.jobs != nil {
		close(p.jobs)
		for c := range p.jobs {
			c.parse(p.name, p.lto)
		}
		p.wg.Wait()
		p.jobs, p.started = nil, 0
	}
}

func (p *parser) abort() {
	if p.jobs != nil {
		close(p.jobs)
		p.wg.Wait()
		p.jobs, p.started = nil, 0
	}
}

// dispatch hands data[from:to] (complete lines) to the workers, split so
// that every worker gets a share. When whole is given, data[from:to] is the
// entire input: the symbol arrays are then allocated once, at their exact
// size, and each chunk fills its own window of them, so that build() can
// adopt them without a copy.
func (p *parser) dispatch(data []byte, from, to int, whole *wholeInput) {
	p.start()
	piece := (to - from) / p.workers
	if p.reading {
		// One worker runs while the input arrives (start): a piece each
		// would only add wake-ups to the reader's path.
		piece = to - from
	}
	piece = max(min(piece, maxChunk), 64<<10)
	var bounds []int
	for at := from; at < to; {
		end := to
		if end-at > piece {
			end = at + piece
			if i := bytes.IndexByte(data[end:to], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = to
			}
		}
		bounds = append(bounds, at)
		at = end
	}
	bounds = append(bounds, to)
	var syms []sym
	var hashes []uint32
	var order []slot
	var counts []int
	if whole != nil {
		counts = make([]int, len(bounds)-1)
		total := 0
		for i := range counts {
			counts[i] = whole.lines(bounds[i], bounds[i+1])
			total += counts[i]
		}
		syms, hashes = make([]sym, total), make([]uint32, total)
		hugepage.Advise(syms)
		hugepage.Advise(hashes)
		if splitTable(uint32(total)) {
			order = make([]slot, total) // see chunk.sortVmlinux
		}
	}
	at := 0
	for i := 0; i+1 < len(bounds); i++ {
		c := &chunk{data: data[bounds[i]:bounds[i+1]], base: bounds[i]}
		if whole != nil {
			n := counts[i]
			c.syms, c.hashes = syms[at:at:at+n], hashes[at:at:at+n]
			c.window, c.whole, c.wholeHashes = true, syms, hashes
			c.order, c.at = order, at
			at += n
		} else if p.st != nil {
			c.st, c.whole, c.wholeHashes = p.st, p.st.syms, p.st.hashes
			if splitTable(splitFill) { // (the stream's size is not known yet)
				c.order = p.st.order
			}
			c.claimIn, c.claimOut = p.lastClaim, make(chan int, 1)
			if c.claimIn == nil {
				c.claimIn = make(chan int, 1)
				c.claimIn <- 0
			}
			p.lastClaim = c.claimOut
		}
		p.chunks = append(p.chunks, c)
		p.jobs <- c
	}
}

// wholeInput is an entire input in memory, with the number of line ends
// in each of its pieces when the reader counted them (see readRegular).
type wholeInput struct {
	data  []byte
	piece int   // piece size; 0: nothing counted
	nl    []int // nl[i]: line ends in data[i*piece : (i+1)*piece]
	// sums: a raw snapshot's chunk hashes (see loadRawSnapshot).
	sums []byte
	// mapped: data is a read-only mapping of a raw snapshot file, or of
	// a text file (text), which the Index keeps. compact: data is a
	// read-only mapping of a compact snapshot, which the loader decodes
	// out of it and which is unmapped once loaded.
	mapped, text, compact bool
	// image: data is a kernel image (fromImage).
	image bool
}

// lines counts the lines of data[from:to], a run of whole lines (the last
// one may lack its line end).
func (w *wholeInput) lines(from, to int) int {
	var n int
	if w.piece == 0 {
		n = bytes.Count(w.data[from:to], []byte{'\n'})
	} else {
		n = w.ends(to) - w.ends(from)
	}
	if to > from && w.data[to-1] != '\n' {
		n++
	}
	return n
}

// ends counts the line ends in data[:x] from the pieces' counts.
func (w *wholeInput) ends(x int) int {
	n := 0
	k := x / w.piece
	for _, c := range w.nl[:k] {
		n += c
	}
	return n + bytes.Count(w.data[k*w.piece:x], []byte{'\n'})
}

// readRegular reads path whole when it is a regular, non-empty file that
// is not compressed (nil otherwise: the caller streams it). The file is
// read in pieces by workers goroutines at once (copying out of the page
// cache and faulting in the new buffer parallelise), and each reader
// works on its piece while it is in cache: it counts the line ends of a
// text, so that the parser can presize its arrays without another pass,
// or hashes a chunk of a raw snapshot's payload for its checksum.
//
// With mapRaw, a raw snapshot is mapped instead, on a little-endian host
// (where its arrays are used in place); its checksum is left to the
// loader. With mapText, so is a text, whose lines are then counted by the
// parser (parseMapped).
func readRegular(path string, workers int, mapRaw, mapText bool) (*wholeInput, error) {
	if path == "-" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < 16 || st.Size() > maxInput {
		return nil, nil // /proc/kallsyms says 0 bytes: stream it
	}
	size := int(st.Size())
	// Where the file may be mapped, it is mapped before a byte of it is
	// read, and its head read through the mapping: a file not yet in the
	// page cache is then read under mapFile's huge-page advice (2 MiB
	// folios), not by read(2)'s readahead, whose first small folios would
	// stay in the cache for every later load. A file that is not to be
	// mapped after all (compressed, a compact snapshot) is unmapped.
	var m []byte
	if mapRaw || mapText {
		m, _ = mapFile(f, size) // nil where not mappable: read it
	}
	var head [16]byte
	if m != nil {
		copy(head[:], m)
	} else if _, err := io.ReadFull(f, head[:]); err != nil {
		return nil, nil
	}
	le := binary.LittleEndian
	compressed := input.Detect(head[:]) != input.None
	if !compressed && !isSnapshot(head[:]) && !textStart(head[0]) {
		// Not a text: a kernel image, read whole. (What is neither fails
		// as a text does, naming its first line.)
		unmapFile(m)
		data, err := input.ReadAt(path, f, st.Size(), kimage.MaxImage)
		if err != nil {
			return nil, err
		}
		if maybeImage(data[:min(len(data), kimage.HeadLen)]) {
			return &wholeInput{data: data, image: true}, nil
		}
		return &wholeInput{data: data}, nil
	}
	raw := isSnapshot(head[:]) && isRawVersion(le.Uint32(head[8:])) && size > rawHeaderSize
	switch {
	case m == nil:
	case !compressed && mapRaw && hostLE && raw:
		return &wholeInput{data: m, mapped: true}, nil
	case !compressed && mapText && !isSnapshot(head[:]):
		return &wholeInput{data: m, mapped: true, text: true}, nil
	case !compressed && mapRaw && isSnapshot(head[:]) && !raw:
		// A compact snapshot, decoded straight from the page cache: read,
		// it took a fresh buffer's pages (153 faults of 4 KiB for the
		// corpus file's 627 KB).
		return &wholeInput{data: m, compact: true}, nil
	default:
		unmapFile(m)
	}
	if compressed {
		return nil, nil
	}
	w := &wholeInput{data: make([]byte, size)}
	hugepage.Advise(w.data)
	// Piece i is data[start(i):start(i+1)].
	var n int
	var start func(i int) int
	var work func(i int, b []byte)
	if isSnapshot(head[:]) {
		if raw {
			// One piece per payload chunk, the header with the first.
			payload := w.data[rawHeaderSize:]
			n = rawChunks(len(payload))
			w.sums = make([]byte, rawSumSize*n)
			start = func(i int) int { return min(size, max(0, rawHeaderSize+i*rawChunk)*min(i, 1)) }
			work = func(i int, _ []byte) { rawChunkSum(w.sums, payload, i) }
		}
	} else {
		w.piece = max(size/(4*workers), 256<<10)
		n = (size + w.piece - 1) / w.piece
		w.nl = make([]int, n)
		work = func(i int, b []byte) { w.nl[i] = bytes.Count(b, []byte{'\n'}) }
	}
	if start == nil {
		if n == 0 {
			n = (size + maxChunk - 1) / maxChunk
			w.piece = maxChunk
		}
		start = func(i int) int { return min(size, i*w.piece) }
	}
	errs := make([]error, n)
	par.For(workers, n, func(i int) {
		b := w.data[start(i):start(i+1)]
		if _, err := f.ReadAt(b, int64(start(i))); err != nil {
			errs[i] = err
		} else if work != nil {
			work(i, b)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if w.nl == nil {
		w.piece = 0 // not a text: nothing counted
	}
	return w, nil
}

// readAndParse reads r into one buffer, dispatching complete lines as they
// arrive. The buffer is presized from hint and doubled when full; chunks
// already dispatched keep pointing at the old copy, whose bytes are equal.
//
// A large buffer is first reserved in an anonymous mapping (m, which the
// caller unmaps once no worker reads it, unless the Index keeps it), not
// on the Go heap: 16 MB of heap at once starts a collection while the
// input arrives, whose write barriers, mark worker and pauses slowed a
// one-shot run on /proc/kallsyms by 2.4 ms of 42 (8 of 8 alternating
// rounds of 20 runs, with the collector on and off). The buffer grows on
// the heap, should the input outgrow it.
func (p *parser) readAndParse(r io.Reader, hint int64) (buf, m []byte, err error) {
	buf, m, err = p.readStream(r, hint)
	if err != nil && m != nil {
		p.abort() // nothing may read m any more
		p.unmapBuffer(m)
		m = nil
	}
	return buf, m, err
}

// unmapBuffer unmaps the stream's buffer m once the prefault goroutine,
// which may still be faulting it in, is gone: an address unmapped under it
// could be mapped again by someone else, whose pages it would then fault
// in.
func (p *parser) unmapBuffer(m []byte) {
	if p.prefaulting != nil {
		<-p.prefaulting
	}
	unmapFile(m)
}

func (p *parser) readStream(r io.Reader, hint int64) (buf, m []byte, err error) {
	p.reading = true
	defer func() { p.reading = false }()
	size := int64(256 << 10)
	if hint > 0 {
		size = hint + 1
	} else {
		// Reserve room for a large kernel's kallsyms at once: only the
		// pages written are faulted in, where doubling would fault in
		// (and copy) every size on the way, which costs as much system
		// time as the kernel's own formatting of the file.
		size = streamReserve
	}
	if size > maxInput+1 {
		size = maxInput + 1
	}
	if size >= mapStreamFrom {
		if mm, err := mapAnon(int(size)); err == nil {
			m, buf = mm, mm[:0]
		}
	}
	if buf == nil {
		buf = make([]byte, 0, size)
	}
	hugepage.Advise(buf[:cap(buf)])
	var ahead chan<- int // see prefault
	if p.workers > 1 {
		ahead, p.prefaulting = prefault(buf[:cap(buf)])
	}
	defer func() {
		if ahead != nil {
			close(ahead)
		}
	}()
	kickAt := prefaultFirst
	done := 0 // bytes dispatched
	first := true
	lineChecked := false
	lines, maxLines := 0, p.maxSymbols
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxInput {
				return nil, m, fmt.Errorf("%w (%d bytes)", ErrTooLarge, maxInput)
			}
			nb := make([]byte, len(buf), min(2*cap(buf), maxInput+1))
			copy(nb, buf)
			buf = nb
			if ahead != nil { // it faults in the old buffer's pages
				close(ahead)
				ahead = nil
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		if lines += bytes.Count(buf[len(buf):len(buf)+n], []byte{'\n'}); lines > maxLines {
			return nil, m, fmt.Errorf("%w: more than %d lines, more symbols than any kernel has (kallsyms.Options.MaxSymbols)", ErrTooLarge, maxLines)
		}
		buf = buf[:len(buf)+n]
		if ahead != nil && len(buf) >= kickAt {
			select {
			case ahead <- len(buf):
			default: // still faulting in: it will go on from there
			}
			kickAt = len(buf) + prefaultStep
		}
		if first && len(buf) >= len(snapshotMagic) {
			first = false
			if isSnapshot(buf) {
				// A snapshot is binary: read it whole, parse nothing. With
				// the file's size known, into one buffer of that size (a
				// raw snapshot is used in place: no copies).
				if hint > int64(len(buf)) && hint <= maxInput {
					nb := make([]byte, hint)
					copy(nb, buf)
					if _, err := io.ReadFull(r, nb[len(buf):]); err != nil {
						return nil, m, err
					}
					buf = nb
				} else if hint <= 0 {
					// A stream: read what the header declares and a byte
					// more (the loader refuses trailing bytes), not on to
					// the input limit (a forged header, zeros after it).
					return readSnapshotStream(r, buf, m)
				}
				rest, err := input.ReadAll(r, 0, maxInput)
				if err != nil {
					return nil, m, err
				}
				if len(rest) == 0 {
					return buf, m, nil
				}
				return append(buf, rest...), m, nil
			}
		}
		if !first && !lineChecked {
			// The first line is judged as soon as it is whole: a stream
			// that is no symbol list (yes, /dev/urandom) fails now, not
			// once it ends, if ever.
			if perr := firstLine(p.name, buf, err == io.EOF); perr != nil {
				return nil, m, perr
			} else if bytes.IndexByte(buf, '\n') >= 0 || err == io.EOF {
				lineChecked = true
			}
		}
		if err == io.EOF {
			p.reading = false
			p.start() // all cores for the rest
			if done < len(buf) {
				var whole *wholeInput
				if done == 0 {
					whole = &wholeInput{data: buf}
				}
				p.dispatch(buf, done, len(buf), whole)
			}
			return buf, m, nil
		}
		if err != nil {
			return nil, m, err
		}
		if len(buf)-done >= minChunk {
			i := bytes.LastIndexByte(buf[done:], '\n')
			if i < 0 {
				// No symbol line is that long: /dev/zero, a disk or a
				// binary file given by mistake would otherwise be read
				// to the 4 GiB limit before its first line is looked at.
				return nil, m, &ParseError{File: p.name, Line: bytes.Count(buf[:done], []byte{'\n'}) + 1,
					Msg: fmt.Sprintf("no line end in %d bytes: not a symbol list (give /proc/kallsyms, a System.map or a snapshot)", len(buf)-done)}
			}
			if p.st == nil {
				p.st = newStream(cap(buf) / streamLine)
			}
			p.dispatch(buf, done, done+i+1, nil)
			done += i + 1
		}
	}
}

// readSnapshotStream reads the rest of a snapshot that began with got on
// a stream of unknown size, as far as its header declares (storedSize)
// and a byte more, so that a stream that goes on past it is still refused
// by the loader, without reading it to the end. m is passed through.
func readSnapshotStream(r io.Reader, got, m []byte) (buf, _ []byte, err error) {
	buf = bytes.Clone(got) // got may sit in the stream's mapping
	for {
		size, need, known := storedSize(buf)
		want := need
		if known {
			want = size + 1
		}
		if int64(len(buf)) >= want {
			return buf, m, nil
		}
		nb := make([]byte, want)
		copy(nb, buf)
		n, err := io.ReadFull(r, nb[len(buf):])
		buf = nb[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf, m, nil // the loader says what is missing
		}
		if err != nil {
			return nil, m, err
		}
		if known {
			return buf, m, nil
		}
	}
}

// Prefaulting: while a stream is read, a goroutine faults in the pages of
// its buffer ahead of the reader, on the core the reader leaves free (see
// start), so that the reader's read(2) calls copy into pages that are
// already there instead of taking a fault per 4 KiB (or zeroing a huge
// page) each. /proc/kallsyms, the stream that matters, is formatted by the
// kernel on the reader's thread, and reading it into a fresh buffer costs
// 7-9 ms more system time than cat's, which reuses one small buffer (31
// ms in all). The reader kicks the goroutine once prefaultFirst bytes
// have arrived (a small input, such as a few lines on standard input, is
// never faulted in ahead), then every prefaultStep bytes; it stays
// prefaultAhead bytes ahead.
const (
	prefaultFirst = 64 << 10
	prefaultStep  = 1 << 20
	prefaultAhead = 2 << 20
)

// prefault starts the goroutine that faults in b ahead of its reader (see
// above): each int sent is how many bytes of b the reader has filled.
// Closing the channel ends it. Faulting in never changes a byte of b
// (hugepage.Populate), so it may race with the reader's writes.
//
// The goroutine closes finished when it is gone: until then it may still be
// faulting in b, which must stay mapped (see parser.unmapBuffer).
func prefault(b []byte) (kick chan<- int, finished <-chan struct{}) {
	k, fin := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(fin)
		done, ok := 0, true
		for at := range k {
			for ok && done < min(at+prefaultAhead, len(b)) {
				end := min(done+prefaultStep, len(b))
				ok = hugepage.Populate(b[done:end])
				done = end
			}
		}
	}()
	return k, fin
}

// newStream makes the arrays a streamed input's chunks fill windows of,
// with room for n records: one anonymous mapping where the system has
// them (syms and hashes on the heap otherwise). Only the pages written are
// faulted in, by the workers that write them; the runtime would clear a
// reused heap block of this size on the reader's path, and a fresh one
// would count towards the heap and bring the next collection forward into
// the table build.
func newStream(n int) *stream {
	const slotSize = int(unsafe.Sizeof(slot{}))
	// Each array starts on a huge page boundary: one that ends a little
	// past one would hold a whole huge page for its last bytes.
	up := func(x int) int { return (x + hugepage.Size - 1) &^ (hugepage.Size - 1) }
	hashesAt := up(n * int(unsafe.Sizeof(sym{})))
	orderAt := hashesAt + up(4*n)
	blockAt := orderAt + up(n*slotSize)
	blockSlots := tableSlots(n) + maxObjects*5
	m, err := mapAnon(hugepage.Size + blockAt + blockSlots*slotSize)
	if err != nil {
		st := &stream{syms: make([]sym, n), hashes: make([]uint32, n)}
		hugepage.Advise(st.syms)
		hugepage.Advise(st.hashes)
		return st
	}
	st := &stream{mem: m}
	// The mapping's first huge page boundary (the bytes before it are
	// never touched).
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	m = m[int(uintptr(up(int(base)))-base):]
	st.syms = unsafe.Slice((*sym)(unsafe.Pointer(unsafe.SliceData(m))), n)
	st.hashes = unsafe.Slice((*uint32)(unsafe.Pointer(&m[hashesAt])), n)
	st.order = unsafe.Slice((*slot)(unsafe.Pointer(&m[orderAt])), n)
	st.block = unsafe.Slice((*slot)(unsafe.Pointer(&m[blockAt])), blockSlots)
	// Huge pages for every array, each in its own (AdviseWithin: those
	// it fills an eighth of at least, its last one included): on this
	// project's VM a 4 KiB page of fresh memory cost 4-16 us to fault in,
	// a huge page 0.45 ms. The hashes and the sorted runs are only read
	// while the index is built, and their pages are released then
	// (parser.keepStream). For the 122,000-line corpus file, 370 faults
	// fewer than with the records and tables alone advised: a one-shot
	// 'objects' 23.7 -> 21.1 ms, on its compact snapshot 30.5 -> 28.0 ms.
	// (The room kept for the objects' minimum table sizes, maxObjects*5
	// slots, is not advised for itself: a small input would fault in and
	// clear a whole huge page of it for a table of a few slots.)
	st.scratch = m[hashesAt:blockAt]
	symSize := int(unsafe.Sizeof(sym{}))
	hugepage.AdviseWithin(m[: symSize*n : hashesAt])
	hugepage.AdviseWithin(m[hashesAt : hashesAt+4*n : orderAt])
	hugepage.AdviseWithin(m[orderAt : orderAt+slotSize*n : blockAt])
	hugepage.AdviseWithin(m[blockAt : blockAt+slotSize*tableSlots(n)])
	return st
}

// keepStream hands the stream's mapping to ix (Index.anon) if ix uses it
// (it adopted the records, or laid its tables out in the block); the
// caller then has ix own it (Index.own). freeStream unmaps it otherwise,
// once no worker writes to it.
func (p *parser) keepStream(ix *Index) {
	st := p.st
	if st == nil || st.mem == nil {
		return
	}
	inBlock := len(ix.slots) > 0 && unsafe.SliceData(ix.slots) == unsafe.SliceData(st.block)
	adopted := len(ix.syms) > 0 && unsafe.SliceData(ix.syms) == unsafe.SliceData(st.syms)
	if !inBlock && !adopted {
		return
	}
	ix.anon = st.mem
	st.mem = nil
	// What only the build read goes back to the kernel.
	st.releaseScratch()
	if !adopted {
		hugepage.Release(st.syms) // copied to the heap
	}
}

func (p *parser) freeStream() {
	if p.st != nil && p.st.mem != nil {
		unmapFile(p.st.mem)
		p.st.mem = nil
	}
}

// elfMagic starts an ELF file: a module or vmlinux given for a symbol
// list, which the parser names as such.
const elfMagic = "\x7fELF"

// maxInput bounds one input: names are stored as 32-bit offsets, and on
// a 32-bit host a buffer must also fit an int with a byte to spare.
const maxInput = min(1<<32-1, math.MaxInt-1)

// ModuleNameLen is the kernel's MODULE_NAME_LEN on 64-bit kernels (64
// minus the size of a pointer): a module's name has at most 55 bytes.
const ModuleNameLen = 56

// DefaultMaxSymbols bounds the lines a streamed input may have (a
// compressed file, standard input, /proc/kallsyms): the largest real
// kallsyms, every module loaded, has about 1.2 million. A gzip of
// millions of copies of one line is 16 MB and would take gigabytes to
// index; it stops here instead, with ErrTooLarge (Options.MaxSymbols
// raises it).
const DefaultMaxSymbols = 4 << 20

var hexval = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = int8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = int8(c - 'a' + 10)
	}
	for c := 'A'; c <= 'F'; c++ {
		t[c] = int8(c - 'A' + 10)
	}
	return
}()

// parse reads the lines of c. Format (kernel/kallsyms.c s_show()):
//
//	ffffffff81000000 T _stext
//	ffffffffc0a01000 t ovl_show_options	[overlay]
//
// System.map has the first form only. CRLF and trailing blanks are
// accepted; blank lines are skipped. Lines of the exact 64-bit form take a
// fast path (scan.go); every other line, including every malformed one,
// goes through parseLine.
func (c *chunk) parse(file string, lto bool) {
	data := c.data
	if c.syms == nil { // not given a window of a presized array
		n := bytes.Count(data, []byte{'\n'})
		if len(data) > 0 && data[len(data)-1] != '\n' {
			n++
		}
		if !c.claim(n) {
			c.syms = make([]sym, 0, n)
			c.hashes = make([]uint32, 0, n)
		}
	}
	syms, hashes, base := c.syms, c.hashes, c.base
	var cur []byte // current object's name (nil = vmlinux)
	r := newRun()
	c.runs = make([]run, 0, 4) // vmlinux and a few modules, most chunks
	defer c.ownObjects()
	line := 0
	// Locals, stored into c once at the end: c sits on the heap, maybe
	// in the cache line of another worker's chunk, and a store to it per
	// line would bounce that line between the cores.
	vm := vmTrack{sorted: true}
	for pos := 0; pos < len(data); {
		if cur == nil {
			pos, line, syms, hashes = vmRun(data, pos, line, &vm, &r, syms, hashes, base, lto)
		} else {
			pos, line, syms, hashes = modRun(data, pos, line, cur, &r, syms, hashes, base)
		}
		if pos == len(data) {
			break
		}
		line++
		var (
			addr   uint64
			typ    byte
			ns, ne int
			mod    []byte
			next   = -1
		)
		if pos+20 <= len(data) && data[pos+16] == ' ' && data[pos+18] == ' ' && data[pos+17] > ' ' {
			var ok bool
			addr, ok = hex16(data[pos:])
			e := pos + 19 + firstCtl(data[pos+19:])
			if ok && e > pos+19 && e-(pos+19) < KSYMNameLen {
				typ, ns, ne = data[pos+17], pos+19, e
				switch {
				case e == len(data):
					next = e
				case data[e] == '\n':
					next = e + 1
				case data[e] == '\t' && e+2 < len(data) && data[e+1] == '[':
					// "\t[module]" and the line end.
					m := data[e+2:]
					if k := bytes.IndexByte(m, ']'); k > 0 && (k+1 == len(m) || m[k+1] == '\n') {
						mod = m[:k]
						if bytes.Equal(mod, cur) || validModule(mod) {
							next = e + 2 + k + 1
							if k+1 < len(m) {
								next++
							}
						}
					}
				}
			}
		}
		if next < 0 {
			// Slow path: the general form, or an error.
			end := bytes.IndexByte(data[pos:], '\n')
			next = pos + end + 1
			if end < 0 {
				end = len(data) - pos
				next = len(data)
			}
			l := data[pos : pos+end]
			for len(l) > 0 && (l[len(l)-1] == '\r' || l[len(l)-1] == ' ' || l[len(l)-1] == '\t') {
				l = l[:len(l)-1]
			}
			if len(l) == 0 {
				pos = next
				continue
			}
			var msg string
			addr, typ, ns, ne, mod, msg = parseLine(l)
			if msg != "" {
				c.err = &ParseError{File: file, Line: line, Msg: msg}
				return
			}
			ns, ne = pos+ns, pos+ne
		}
		pos = next
		if (mod == nil) != (cur == nil) || !bytes.Equal(mod, cur) {
			if r.count > 0 {
				c.runs = append(c.runs, r)
			}
			cur, r = mod, newRun()
			r.obj = borrowed(mod) // (ownObjects copies it)
		}
		r.add(addr, typ)
		if mod == nil {
			vm.add(addr)
		}
		syms = appendSym(syms, addr, uint32(base+ns), uint16(ne-ns), typ)
		hashes = append(hashes, hashKey(data[ns:ne], lto && mod == nil)) // vmlinux only: see Index.ltoSym
	}
	c.syms, c.hashes = syms, hashes
	c.touch()
	c.lines = line
	c.hasVm, c.vmSorted, c.vmFirst, c.vmLast = vm.has, vm.sorted, vm.first, vm.last
	if r.count > 0 {
		c.runs = append(c.runs, r)
	}
	c.sortVmlinux()
}

// borrowed is b as a string that shares b's memory, valid while b is.
func borrowed(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// ownObjects copies the object names of c's runs, which parse points into
// the input (borrowed), into one string of their own: a name outlives an
// input that is a mapping, and a chunk then allocates once for all its
// objects' names instead of once for each.
func (c *chunk) ownObjects() {
	ownStrings(c.runs, func(r *run) *string { return &r.obj })
}

// sortVmlinux sorts a chunk's vmlinux symbols by bucket for the table
// build (fillRuns) right after their parse, while their hashes are in
// this core's cache (and a stream's rest is still being read). They are
// its first run of lines: vmlinux comes first in kallsyms, and an index
// whose vmlinux lines come later copies its records instead of adopting
// them (build), which leaves the runs unused.
func (c *chunk) sortVmlinux() {
	if !c.window || c.order == nil || len(c.runs) == 0 || c.runs[0].obj != "" {
		return
	}
	n := c.runs[0].count
	out := c.order[c.at : c.at+n]
	c.vmRun = sortedRun{out, sortRun(c.hashes[:n], uint32(c.at), out)}
}

// claim gives a streamed input's chunk of n lines its window of the
// stream's arrays, the n records after the previous chunk's (so that
// build() adopts the arrays instead of copying every chunk's records into
// a new pair at the end, when the input is all read), and reports whether
// it did. Chunks claim in input order whatever worker parses them: each
// waits for the end of the previous window, which is known as soon as
// that chunk has counted its lines. Once a chunk does not fit, no later
// one gets a window.
func (c *chunk) claim(n int) bool {
	if c.claimIn == nil {
		return false
	}
	at := <-c.claimIn
	if at < 0 || at+n > len(c.whole) {
		c.claimOut <- -1
		return false
	}
	c.claimOut <- at + n
	c.syms, c.hashes = c.whole[at:at:at+n], c.wholeHashes[at:at:at+n]
	c.window, c.at = true, at
	return true
}

// touch faults in the pages of the stream's table block that the chunk's
// lines will need, on its worker, while the rest of the input is still
// being read (stream.touch).
func (c *chunk) touch() {
	if c.window && c.st != nil {
		c.st.touch(c.at, len(c.syms))
	}
}

// touch faults in the pages of the table block that the records [at,
// at+n) will need, writing the first word of each (a read would map the
// zero page, and the table build's first write would then be a
// copy-on-write fault that flushes every core's TLB). The tables are
// laid out from the block's start and grow with the symbol count, so
// those records need the slots [touchSlots(at), touchSlots(at+n)): the
// caller takes the pages that start there.
func (st *stream) touch(at, n int) {
	block := st.block
	if block == nil {
		return
	}
	const perPage = 4096 / int(unsafe.Sizeof(slot{}))
	from, to := touchSlots(at), min(touchSlots(at+n), len(block))
	for i := (from + perPage - 1) / perPage * perPage; i < to; i += perPage {
		block[i] = slot{}
	}
}

// appendSym appends a symbol record to syms. Field by field: a sym{...}
// literal is built in a stack temporary by narrow stores and copied by
// one 16-byte load, which the CPU cannot forward from them (perf put a
// third of the parse loop's time on that load).
func appendSym(syms []sym, addr uint64, off uint32, nlen uint16, typ byte) []sym {
	syms = append(syms, sym{})
	s := &syms[len(syms)-1]
	s.addr, s.off, s.nlen, s.typ = addr, off, nlen, typ
	return syms
}

// vmTrack follows a chunk's vmlinux addresses: whether they never
// decrease, and the first and last.
type vmTrack struct {
	has, sorted bool
	first, last uint64
}

func (v *vmTrack) add(addr uint64) {
	if addr < v.last {
		v.sorted = false
	}
	if !v.has {
		v.has, v.first = true, addr
	}
	v.last = addr
}

// vmRun parses the vmlinux lines of the exact 64-bit form with a line end,
// "%016lx %c %s\n", from data[pos:] on (most of any input), in a loop
// small enough to keep its state in registers, and returns where it
// stopped: at the first other line (a module's, the last one without a
// line end, any that parseLine must judge), which parse's loop takes. It
// records each line exactly as that loop's fast path would.
func vmRun(data []byte, pos, line int, vm *vmTrack, r *run, syms []sym, hashes []uint32, base int, lto bool) (int, int, []sym, []uint32) {
	v, rr := *vm, *r
	for pos+20 <= len(data) {
		l := data[pos:]
		if l[16] != ' ' || l[18] != ' ' || l[17] <= ' ' {
			break
		}
		addr, e, ok := lineHead(l)
		if !ok || e == 19 || e-19 >= KSYMNameLen || e == len(l) || l[e] != '\n' {
			break
		}
		typ := l[17]
		rr.add(addr, typ)
		v.add(addr)
		syms = appendSym(syms, addr, uint32(base+pos+19), uint16(e-19), typ)
		var h uint32
		switch {
		case lto:
			h = hashKey(l[19:e], lto)
		case e-19 < 32 && len(l) >= 19+32:
			h = uint32(hashShort(l[19:], e-19)) // hashKey, branch-free
		default:
			h = uint32(xxhash.Sum64(l[19:e])) // hashKey, one call fewer
		}
		hashes = append(hashes, h)
		line++
		pos += e + 1
	}
	*vm, *r = v, rr
	return pos, line, syms, hashes
}

// lineHead reads the head of a line of the exact 64-bit form,
// "%016lx %c NAME" (l[16] and l[18] being blanks, the caller checked): its
// address, and where its name ends (the first control byte or blank from
// l[19] on, len(l) if none). ok is false for an address that is not hex.
func lineHead(l []byte) (addr uint64, e int, ok bool) {
	if x := binary.LittleEndian.Uint64(l); x == 'f'*ones8 {
		// hex16's x86_64 case, without its call.
		var lo uint32
		lo, ok = hex8(binary.LittleEndian.Uint64(l[8:]))
		addr = 0xffffffff<<32 | uint64(lo)
	} else {
		addr, ok = hex16(l)
	}
	if len(l) >= 19+32 {
		// The name's end within its first 32 bytes (four names in five),
		// found without a branch; firstCtl after that.
		if m := ctlMask32(l[19:]); m != 0 {
			return addr, 19 + bits.TrailingZeros32(m), ok
		}
		return addr, 19 + 32 + firstCtl(l[19+32:]), ok
	}
	return addr, 19 + firstCtl(l[19:]), ok
}

// modRun is vmRun for the lines of module mod, "%016lx %c %s\t[%s]\n"
// (s_show()'s form for a module's symbol), from data[pos:] on: with
// every module loaded, four lines in five. It stops at the first other
// line (another module's, vmlinux's, the last one without a line end,
// any that parseLine must judge), which parse's loop takes, and records
// each line exactly as that loop's fast path would (a module's name is
// hashed as it is, in LTO mode too: see Index.ltoSym).
func modRun(data []byte, pos, line int, mod []byte, r *run, syms []sym, hashes []uint32, base int) (int, int, []sym, []uint32) {
	rr := *r
	tail := len(mod) + 4 // "\t[", mod, "]\n"
	for pos+20 <= len(data) {
		l := data[pos:]
		if l[16] != ' ' || l[18] != ' ' || l[17] <= ' ' {
			break
		}
		addr, e, ok := lineHead(l)
		if !ok || e == 19 || e-19 >= KSYMNameLen || len(l)-e < tail || l[e] != '\t' || l[e+1] != '[' ||
			l[e+tail-2] != ']' || l[e+tail-1] != '\n' || !bytes.Equal(l[e+2:e+tail-2], mod) {
			break
		}
		typ := l[17]
		rr.add(addr, typ)
		syms = appendSym(syms, addr, uint32(base+pos+19), uint16(e-19), typ)
		var h uint32
		if e-19 < 32 && len(l) >= 19+32 {
			h = uint32(hashShort(l[19:], e-19)) // hashKey, branch-free
		} else {
			h = uint32(xxhash.Sum64(l[19:e]))
		}
		hashes = append(hashes, h)
		line++
		pos += e + tail
	}
	*r = rr
	return pos, line, syms, hashes
}

// validModule reports whether a module name read by the fast path is one
// parseLine would accept (the fast path looked for ']' past the line end:
// a name with a line end in it is the next line's).
func validModule(m []byte) bool {
	if len(m) >= ModuleNameLen {
		return false
	}
	for _, b := range m {
		if b == ' ' || b == '\t' || b == '[' || b == '\n' || b == 0 {
			return false
		}
	}
	return true
}

// parseLine splits one trimmed, non-empty line into its address, type,
// name (l[ns:ne]) and module (nil for vmlinux). msg says what is wrong.
func parseLine(l []byte) (addr uint64, typ byte, ns, ne int, mod []byte, msg string) {
	k := 0
	for k < len(l) {
		v := hexval[l[k]]
		if v < 0 {
			break
		}
		addr = addr<<4 | uint64(v)
		k++
	}
	switch {
	case k == 0 && bytes.HasPrefix(l, []byte(elfMagic)):
		return 0, 0, 0, 0, nil, "an ELF file (a module?), not a symbol list: give /proc/kallsyms, a System.map, a kernel image (vmlinuz, vmlinux) or a snapshot"
	case k == 0:
		return 0, 0, 0, 0, nil, fmt.Sprintf("line does not start with a hex address: %q", clip(l))
	case k > 16:
		return 0, 0, 0, 0, nil, "address has more than 16 hex digits"
	case k == len(l) || l[k] != ' ':
		return 0, 0, 0, 0, nil, fmt.Sprintf("expected 'ADDRESS TYPE NAME', got %q", clip(l))
	}
	for k < len(l) && l[k] == ' ' {
		k++
	}
	// Type: one character, then blanks, then the name.
	if k+2 >= len(l) || l[k+1] != ' ' {
		return 0, 0, 0, 0, nil, fmt.Sprintf("expected a one-letter type and a name after the address, got %q", clip(l))
	}
	typ = l[k]
	k += 2
	for k < len(l) && l[k] == ' ' {
		k++
	}
	ns = k
	// A name ends at a blank. Other bytes are kept as they are: real
	// System.map files hold local labels with control bytes in them
	// (arm64 "__kvm_nvhe_.L14472\x021").
	for k < len(l) && l[k] != ' ' && l[k] != '\t' {
		k++
	}
	ne = k
	if ne == ns {
		return 0, 0, 0, 0, nil, "missing symbol name"
	}
	if ne-ns >= KSYMNameLen {
		return 0, 0, 0, 0, nil, fmt.Sprintf("symbol name of %d bytes is longer than KSYM_NAME_LEN-1 (%d)", ne-ns, KSYMNameLen-1)
	}
	if bytes.IndexByte(l[ns:ne], 0) >= 0 {
		return 0, 0, 0, 0, nil, fmt.Sprintf("a NUL byte in the symbol name %q: the kernel's names are C strings", clip(l[ns:ne]))
	}
	// A CR and an address after it: lines that end in CR alone. (Other
	// control bytes are names' own: see above.)
	if i := bytes.IndexByte(l[ns:ne], '\r'); i >= 0 && ns+i+1 < len(l) && hexval[l[ns+i+1]] >= 0 {
		return 0, 0, 0, 0, nil, "a carriage return inside the line: the file's lines end in CR alone, not LF or CR LF (convert them: tr '\\r' '\\n')"
	}
	if ne == len(l) {
		return addr, typ, ns, ne, nil, ""
	}
	rest := bytes.TrimLeft(l[ne:], " \t")
	if len(rest) < 3 || rest[0] != '[' || rest[len(rest)-1] != ']' {
		return 0, 0, 0, 0, nil, fmt.Sprintf("expected '[module]' after the name, got %q", clip(rest))
	}
	mod = rest[1 : len(rest)-1]
	if bytes.ContainsAny(mod, " \t[]\x00") {
		return 0, 0, 0, 0, nil, fmt.Sprintf("bad module name %q", clip(mod))
	}
	if len(mod) >= ModuleNameLen {
		return 0, 0, 0, 0, nil, fmt.Sprintf("module name of %d bytes is longer than MODULE_NAME_LEN-1 (%d)", len(mod), ModuleNameLen-1)
	}
	return addr, typ, ns, ne, mod, ""
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// hashKey is the table key of a name: its xxhash, of the name with its
// ".llvm.<digits>" suffix stripped in LTO mode.
func hashKey(name []byte, lto bool) uint32 {
	if lto {
		name = stripLLVM(name)
	}
	return uint32(xxhash.Sum64(name))
}

// hashKeyString is hashKey for a string, without converting it.
func hashKeyString(name string, lto bool) uint32 {
	if lto {
		name = stripLLVM(name)
	}
	return uint32(xxhash.Sum64String(name))
}

// stripLLVM removes a ".llvm.<digits>" suffix, as cleanup_symbol_name() of
// kernels 6.2-6.10 did for CONFIG_LTO_CLANG. (The kernel cut at the first
// ".llvm.", whatever followed; LLVM writes a decimal hash there.)
func stripLLVM[T string | []byte](name T) T {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] < '0' || name[i] > '9' {
			if i == len(name)-1 {
				return name
			}
			const suf = ".llvm."
			if i+1 >= len(suf) && string(name[i+1-len(suf):i+1]) == suf {
				return name[:i+1-len(suf)]
			}
			return name
		}
	}
	return name
}

// IsPlaceholder reports whether data begins as the one-line System.map
// that Debian's kernel image packages install in /boot (ErrPlaceholder):
// 64 bytes of a file tell. The prefix stops at a word, not at the blank
// after it, so that what follows "the" (a blank, the end of the line, or
// the end of the data) does not decide it.
func IsPlaceholder(data []byte) bool {
	return bytes.HasPrefix(data, []byte("ffffffffffffffff B The real System.map is in the"))
}

// finish waits for the workers and merges their chunks into an index.
func (p *parser) finish(buf []byte) (*Index, error) {
	p.drain()
	line := 0
	nonzero := false
	total := 0
	for _, c := range p.chunks {
		if c.err != nil {
			if line == 0 && IsPlaceholder(buf) {
				return nil, fmt.Errorf("%s: %w", p.name, ErrPlaceholder)
			}
			c.err.Line += line
			return nil, c.err
		}
		line += c.lines
		for _, r := range c.runs {
			nonzero = nonzero || r.hi != 0 || r.ahi != 0
		}
		total += len(c.syms)
	}
	if total == 0 {
		return nil, fmt.Errorf("%s: %w", p.name, ErrEmpty)
	}
	if !nonzero {
		return nil, fmt.Errorf("%s: %w", p.name, ErrRestricted)
	}
	var block []slot
	if p.st != nil {
		block = p.st.block
	}
	return build(p.name, buf, p.chunks, total, p.lto, block)
}

// firstLine judges the first non-blank line of a stream's bytes so far
// (ended, the stream has ended): a *ParseError if it is no symbol line,
// nil if it is one or is not whole yet.
func firstLine(name string, buf []byte, ended bool) error {
	for n := 1; len(buf) > 0; n++ {
		line, rest, whole := bytes.Cut(buf, []byte("\n"))
		if !whole && !ended {
			return nil
		}
		if line = bytes.TrimRight(line, " \t\r"); len(line) > 0 {
			if _, _, _, _, _, msg := parseLine(line); msg != "" {
				if n == 1 && IsPlaceholder(buf) {
					return fmt.Errorf("%s: %w", name, ErrPlaceholder) // as finish says it
				}
				return &ParseError{File: name, Line: n, Msg: msg}
			}
			return nil
		}
		buf = rest
	}
	return nil
}
