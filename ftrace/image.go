// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Names of the table's bounds (MCOUNT_REC()) and of the image's start.
const (
	startSym = "__start_mcount_loc"
	stopSym  = "__stop_mcount_loc"
	textSym  = "_text"
	stextSym = "_stext"
)

// maxSites bounds the table: Debian's amd64 6.1 kernel has 40,521 call
// sites, allyesconfig kernels a few hundred thousand.
const maxSites = 16 << 20

// NewImage reads the call sites of a kernel image r against the kernel's
// symbols ix: the words of its __mcount_loc table, which
// ftrace_process_locs() makes its records from at boot.
//
// vmlinux (ELF, its symbols stripped or not): the table's bounds come from
// ix (a System.map, or a kallsyms with CONFIG_KALLSYMS_ALL), else from the
// image's own symbol table; zero words (arm64's) take the addends of the
// image's relative relocations; addresses are moved by the KASLR offset
// between ix's _text and the image's (its first executable segment), or
// between the two _stext where ix has no _text.
//
// arm64's Image (/boot/vmlinuz on Debian's arm64) has no symbols: ix must
// give _text, the table's bounds and .rela.dyn's (__rela_start,
// __rela_end), whose relocations fill the zero words and say where the
// table was linked, so ix's KASLR offset.
//
// Sites the table records before their functions (arm64's
// CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS) are moved into them, as
// ftrace_call_adjust() moves the kernel's records. A sample of the sites
// must then be at functions' starts in ix, or the error is ErrMismatch.
func NewImage(name string, r io.ReaderAt, ix *kallsyms.Index) (*Sites, error) {
	var head [kimage.ARM64HeaderSize]byte
	if n, _ := r.ReadAt(head[:], 0); kimage.IsARM64Image(head[:n]) {
		return arm64Image(r, name, ix, head[:])
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, &Error{File: name, Err: ErrMalformed, Msg: "not a kernel image: " + err.Error()}
	}
	im := &image{f: f}
	t, err := im.table(name, ix)
	if err != nil {
		return nil, err
	}
	return im.sites(r, name, ix, t)
}

// sites reads the call sites of the image's table t, whose bytes r holds
// (as far as the table's end at least).
func (im *image) sites(r io.ReaderAt, name string, ix *kallsyms.Index, t table) (*Sites, error) {
	f := im.f
	words, err := readTable(r, name, t.off, t.size, t.word, f.ByteOrder)
	if err != nil {
		return nil, err
	}
	// arm64 links vmlinux with --no-apply-dynamic-relocs: the words are
	// 0, their values the addends of R_AARCH64_RELATIVE relocations that
	// the kernel applies to itself at boot (__relocate_kernel).
	if slices.Contains(words, 0) {
		if err := relocated(f, name, t.start, words); err != nil {
			return nil, err
		}
	}
	return newSites(name, ix, words, t.slide)
}

// table is where an image's call-site table is.
type table struct {
	slide       uint64 // ix's KASLR offset
	start, size uint64 // its link-time address and size
	off         uint64 // its file offset
	word        int    // bytes per address
}

// table places the image's call-site table: its bounds (ix's, else the
// image's own), moved by ix's KASLR offset, within a loaded segment.
func (im *image) table(name string, ix *kallsyms.Index) (table, error) {
	f := im.f
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return table{}, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("an ELF file of type %s, not a kernel image (vmlinux is ET_EXEC, or ET_DYN where relocatable)", f.Type)}
	}
	t := table{word: 8}
	if f.Class == elf.ELFCLASS32 {
		t.word = 4
	}
	var err error
	if t.slide, err = im.slide(name, ix); err != nil {
		return table{}, err
	}
	start, stop, err := im.tableBounds(name, ix, t.slide)
	if err != nil {
		return table{}, err
	}
	if stop < start || (stop-start)%uint64(t.word) != 0 || (stop-start)/uint64(t.word) > maxSites {
		return table{}, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("%s..%s (%#x..%#x) is no table of %d-byte addresses", startSym, stopSym, start, stop, t.word)}
	}
	t.start, t.size = start, stop-start
	if t.off, err = fileOffset(f, name, start, t.size); err != nil {
		return table{}, err
	}
	return t, nil
}

// readTable reads the size bytes of the call-site table at file offset off
// as words of word bytes, in chunks: a table's claimed size allocates
// nothing until the file has the bytes.
func readTable(r io.ReaderAt, name string, off, size uint64, word int, order binary.ByteOrder) ([]uint64, error) {
	var words []uint64
	buf := make([]byte, min(size, 64<<10))
	for done := uint64(0); done < size; {
		chunk := buf[:min(uint64(len(buf)), size-done)]
		if _, err := r.ReadAt(chunk, int64(off+done)); err != nil {
			return nil, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("reading the call-site table at file offset %#x: %v", off+done, err)}
		}
		for i := 0; i+word <= len(chunk); i += word {
			if word == 8 {
				words = append(words, order.Uint64(chunk[i:]))
			} else {
				words = append(words, uint64(order.Uint32(chunk[i:])))
			}
		}
		done += uint64(len(chunk))
	}
	return words, nil
}

// newSites are the table's words moved by slide into ix's space, checked
// against ix. A zero word is a site no relocation gave a value.
func newSites(name string, ix *kallsyms.Index, words []uint64, slide uint64) (*Sites, error) {
	addrs := make([]uint64, 0, len(words))
	zero := 0
	for _, a := range words {
		if a == 0 {
			zero++
			continue
		}
		addrs = append(addrs, a+slide)
	}
	if len(addrs) == 0 && zero > 0 {
		return nil, &Error{File: name, Err: ErrUnsupported, Msg: fmt.Sprintf("its call-site table holds %d zero words, and no relative relocation gives them values; give the running kernel's tracefs available_filter_functions instead", zero)}
	}
	// Sorted at build time on x86 (CONFIG_BUILDTIME_MCOUNT_SORT), at boot
	// elsewhere (ftrace_process_locs()).
	if !slices.IsSorted(addrs) {
		slices.Sort(addrs)
	}
	if d := preEntry(ix, addrs); d != 0 {
		for i := range addrs {
			addrs[i] += d
		}
	}
	err := check(name, ix, len(addrs), func(i int) (uint64, string, string) { return addrs[i], "", "" })
	if err != nil {
		return nil, err
	}
	return &Sites{source: name, ix: ix, addrs: addrs, slide: slide, objects: map[string]bool{kallsyms.Vmlinux: true}}, nil
}

// preEntryBytes is how far before its function a pre-function call site
// is recorded: arm64's CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS (6.8 on)
// compiles with -fpatchable-function-entry=4,2, two NOPs (the ops
// pointer's literal) before each traced function and two at its start, and
// the table records the first NOP before it, 8-byte aligned.
const preEntryBytes = 8

// preEntry is what moves an image's sites into their functions when the
// table records them before each function (CALL_OPS): ftrace_call_adjust()
// moves each record 12 or 16 bytes on, to the BL it patches;
// preEntryBytes puts it at the function's start, which is all
// Sites.Function asks. 0 when three in four sampled sites are not exactly
// preEntryBytes before a symbol of ix (x86's -mfentry, arm64's
// -fpatchable-function-entry=2, powerpc's: sites in their functions).
func preEntry(ix *kallsyms.Index, addrs []uint64) uint64 {
	step := max(1, len(addrs)/sampleSize)
	tried, before := 0, 0
	for i := 0; i < len(addrs); i += step {
		tried++
		if at, ok := ix.Addr(addrs[i] + preEntryBytes); ok && at.Offset == 0 {
			if in, ok := ix.Addr(addrs[i]); !ok || in.Offset != 0 {
				before++
			}
		}
	}
	if tried > 0 && before*4 >= tried*3 {
		return preEntryBytes
	}
	return 0
}

// image is a kernel image and, once asked for, its own symbols.
type image struct {
	f       *elf.File
	syms    map[string]uint64
	symsErr error
}

// symbol is the link-time value of one of the image's own symbols (read
// once, and only the few names asked for are kept).
func (im *image) symbol(name string) (uint64, bool) {
	if im.syms == nil && im.symsErr == nil {
		var syms []elf.Symbol
		if syms, im.symsErr = im.f.Symbols(); im.symsErr == nil {
			im.syms = map[string]uint64{}
			for _, s := range syms {
				switch s.Name {
				case textSym, stextSym, startSym, stopSym:
					if _, dup := im.syms[s.Name]; !dup {
						im.syms[s.Name] = s.Value
					}
				}
			}
		}
	}
	v, ok := im.syms[name]
	return v, ok
}

// slide is the KASLR offset of ix's addresses against the image's: ix's
// _text against the image's first executable segment, which starts
// there; or, for a kallsyms without _text (arm64's without
// CONFIG_KALLSYMS_ALL lists [_stext, _etext) only), _stext against the
// image's own symbol.
func (im *image) slide(name string, ix *kallsyms.Index) (uint64, error) {
	if text, ok := ix.Find(kallsyms.Vmlinux, textSym, 1); ok {
		for _, p := range im.f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
				return text.Address - p.Vaddr, nil
			}
		}
		return 0, &Error{File: name, Err: ErrMalformed, Msg: "no executable PT_LOAD segment: not a kernel image"}
	}
	if stext, ok := ix.Find(kallsyms.Vmlinux, stextSym, 1); ok {
		if v, ok := im.symbol(stextSym); ok {
			return stext.Address - v, nil
		}
	}
	return 0, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("%s has no _text, nor an _stext the image's symbols have too, to place the image by", ix.Source())}
}

// tableBounds are __start_mcount_loc and __stop_mcount_loc at link time:
// ix's, less slide, else the image's own symbols'.
func (im *image) tableBounds(name string, ix *kallsyms.Index, slide uint64) (start, stop uint64, err error) {
	s1, ok1 := ix.Find(kallsyms.Vmlinux, startSym, 1)
	s2, ok2 := ix.Find(kallsyms.Vmlinux, stopSym, 1)
	if ok1 && ok2 {
		return s1.Address - slide, s2.Address - slide, nil
	}
	start, ok1 = im.symbol(startSym)
	stop, ok2 = im.symbol(stopSym)
	switch {
	case im.symsErr != nil:
		return 0, 0, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("%s lists no %s and %s (a kallsyms without CONFIG_KALLSYMS_ALL: give the kernel's System.map), and the image has no symbol table (%v)", ix.Source(), startSym, stopSym, im.symsErr)}
	case !ok1 || !ok2:
		return 0, 0, &Error{File: name, Err: ErrNoTable, Msg: fmt.Sprintf("neither %s nor the image's symbols have %s and %s: a kernel without CONFIG_DYNAMIC_FTRACE, which livepatch depends on", ix.Source(), startSym, stopSym)}
	}
	return start, stop, nil
}

// fileOffset is where the n bytes at link-time address addr are in the
// file: within one PT_LOAD segment's file bytes.
func fileOffset(f *elf.File, name string, addr, n uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr-p.Vaddr >= p.Filesz {
			continue
		}
		if n > p.Filesz-(addr-p.Vaddr) {
			break
		}
		return p.Off + (addr - p.Vaddr), nil
	}
	return 0, &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("the call-site table (%#x, %d bytes) is not within a loaded segment's file bytes: another kernel's image?", addr, n)}
}

// relocated fills the zero words of the table at start from the image's
// relative relocations (64-bit RELA sections, as .rela.dyn), read in
// entries, not whole.
func relocated(f *elf.File, name string, start uint64, words []uint64) error {
	typ, ok := elfobj.RelativeReloc(f.Machine) // R_*_RELATIVE
	if !ok || f.Class != elf.ELFCLASS64 {
		return nil
	}
	end := start + uint64(len(words))*8
	var ent [24]byte
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_RELA {
			continue
		}
		rd := bufio.NewReaderSize(sec.Open(), 64<<10)
		for {
			if _, err := io.ReadFull(rd, ent[:]); err == io.EOF {
				break
			} else if err != nil {
				return &Error{File: name, Err: ErrMalformed, Msg: fmt.Sprintf("reading %s: %v", sec.Name, err)}
			}
			off, info := f.ByteOrder.Uint64(ent[0:]), f.ByteOrder.Uint64(ent[8:])
			if uint32(info) != typ || off < start || off >= end || (off-start)%8 != 0 {
				continue
			}
			if i := (off - start) / 8; words[i] == 0 {
				words[i] = f.ByteOrder.Uint64(ent[16:])
			}
		}
	}
	return nil
}
