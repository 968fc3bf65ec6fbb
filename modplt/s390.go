// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/klpresolve/klpresolve/internal/elfobj"
)

// s390x: arch/s390/kernel/module.c. The module loader gives a module one
// GOT and one PLT, not sections of its own: module_frob_arch_sections()
// walks every SHT_RELA section (check_rela()), gives each symbol that a
// GOT relocation names one 8-byte GOT slot and each symbol that a PLT
// relocation names one 22-byte PLT entry, in the order it meets them, and
// puts both at the start of the core allocation (GOT at offset 0, the PLT
// after it), before layout_sections() places the module's sections. With
// expolines (CONFIG_EXPOLINE, Spectre v2) the PLT has one more entry, the
// __jump_r1 thunk every entry branches through.
const (
	s390PLTEntry = 22 // PLT_ENTRY_SIZE
	s390GOTEntry = 8  // sizeof(void *)
)

// The kernel's (and binutils') names for types debug/elf names otherwise.
const (
	r390GOTOFF32 = elf.R_390_GOTOFF
	r390PLTOFF16 = elf.R_390_GOTPLTOFF16
	r390PLTOFF32 = elf.R_390_GOTPLTOFF32
	r390PLTOFF64 = elf.R_390_GOTPLTOFF64
)

// s390ModulesVaddr is a typical MODULES_VADDR: 6.1's boot code computes
// it (setup_kernel_memory_layout()) below the absolute lowcore mapping at
// the top of the kernel's address space, which depends on the machine's
// memory and NR_CPUS, so LinkOptions.Base should give the real one (a
// loaded module's address, from /proc/modules or /proc/kallsyms). This
// one is a 4 TiB address space's, 2 GiB below its top: modules far from
// the kernel image (at low addresses), so calls to it take PLT entries,
// as they do on real machines.
const s390ModulesVaddr = 0x3ff80000000

var s390Arch = newArch(arch{
	noLookup:     "_GLOBAL_OFFSET_TABLE_",
	name:         "s390",
	machine:      elf.EM_S390,
	is64:         true,
	relType:      elf.SHT_RELA,
	pltEntry:     0, // no .plt section: the PLT is part of core (s390Tables)
	pltSize:      func(int) uint64 { return 0 },
	moduleArea:   func(uint64, uint64) uint64 { return s390ModulesVaddr },
	initPrefixes: []string{".init"},
	exitPrefixes: []string{".exit"},
	kind: func(t uint32) (relKind, uint8, uint8) {
		switch {
		case s390GOTType(elf.R_390(t)):
			return kindGOT, 0, 0
		case s390PLTType(elf.R_390(t)):
			return kindBranch, 0, 1
		}
		return kindOther, 0, 0
	},
	nslots: 1,
	addend: relaAddend,
	count:  (*Module).countS390,
	apply:  s390Apply,
	frob:   s390Frob,
	setup: func(l *linker, fr *frobbed) error {
		l.s390Setup(fr.s390, l.opts.Base, !l.opts.NoExpoline)
		return nil
	},
})

// s390GOTType: the types check_rela() gives a GOT slot.
func s390GOTType(t elf.R_390) bool {
	switch t {
	case elf.R_390_GOT12, elf.R_390_GOT16, elf.R_390_GOT20, elf.R_390_GOT32, elf.R_390_GOT64, elf.R_390_GOTENT,
		elf.R_390_GOTPLT12, elf.R_390_GOTPLT16, elf.R_390_GOTPLT20, elf.R_390_GOTPLT32, elf.R_390_GOTPLT64, elf.R_390_GOTPLTENT:
		return true
	}
	return false
}

// s390PLTType: the types check_rela() gives a PLT entry.
func s390PLTType(t elf.R_390) bool {
	switch t {
	case elf.R_390_PLT16DBL, elf.R_390_PLT32DBL, elf.R_390_PLT32, elf.R_390_PLT64,
		r390PLTOFF16, r390PLTOFF32, r390PLTOFF64:
		return true
	}
	return false
}

// s390Tables is module_frob_arch_sections()'s work: each symbol's GOT and
// PLT offsets (-1: none), the sizes, and what each RELA section added.
type s390Tables struct {
	got, plt         []int64 // by symbol index
	gotSize, pltSize uint64  // bytes; pltSize has the expoline thunk's entry
	gotN, pltN       int     // slots and entries (thunk included)
	sections         []s390Section
}

// s390Section is what one RELA section added (SectionCount's figures).
type s390Section struct {
	name, target            string
	exec                    bool
	relocs, cands, got, plt int
}

// s390Count walks every SHT_RELA section in section order, whatever its
// target, as check_rela() does: a symbol's first GOT relocation gives it
// the next GOT slot, its first PLT relocation the next PLT entry.
func s390Count(f *elfobj.File, expoline bool) (*s390Tables, error) {
	t := &s390Tables{got: make([]int64, len(f.Symbols)), plt: make([]int64, len(f.Symbols))}
	for i := range t.got {
		t.got[i], t.plt[i] = -1, -1
	}
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA {
			continue
		}
		rt, err := f.RelocTable(s)
		if err != nil {
			return nil, err
		}
		dst := rt.Target()
		sec := s390Section{name: s.Name, target: dst.Name, exec: dst.Flags&elf.SHF_EXECINSTR != 0, relocs: rt.Len()}
		for j := range rt.Len() {
			r, err := rt.Reloc(j)
			if err != nil {
				return nil, err
			}
			// (RelocTable checked each symbol index against the table.)
			switch typ := elf.R_390(r.Type); {
			case s390GOTType(typ):
				sec.cands++
				if t.got[r.Sym] < 0 {
					t.got[r.Sym] = int64(t.gotSize)
					t.gotSize += s390GOTEntry
					t.gotN++
					sec.got++
				}
			case s390PLTType(typ):
				sec.cands++
				if t.plt[r.Sym] < 0 {
					t.plt[r.Sym] = int64(t.pltSize)
					t.pltSize += s390PLTEntry
					t.pltN++
					sec.plt++
				}
			}
		}
		t.sections = append(t.sections, sec)
	}
	// "if (IS_ENABLED(CONFIG_EXPOLINE) && !nospec_disable) plt_size +=
	// PLT_ENTRY_SIZE": the __jump_r1 thunk, last.
	if t.pltSize > 0 && expoline {
		t.pltSize += s390PLTEntry
		t.pltN++
	}
	return t, nil
}

// countS390 is Count for s390: the module's one GOT and PLT, as
// module_frob_arch_sections() sizes them (both modes: the kernel's count
// is per symbol, for the whole module, already the smallest a table of
// one entry per target can be).
func (m *Module) countS390(opts Options) (*Counts, error) {
	f := m.f
	t, err := s390Count(f, !opts.NoExpoline)
	if err != nil {
		return nil, err
	}
	res := &Counts{Module: m.Name, Path: m.Path, Arch: m.arch.name, BigEndian: elfobj.BigEndian(f.Order), Mode: opts.Mode.String(),
		GOT: t.gotN, PLTCore: t.pltN, PLTSizeCore: t.pltSize, NoExpoline: opts.NoExpoline}
	for _, s := range t.sections {
		sc := SectionCount{Name: s.name, Target: s.target, Relocs: s.relocs, Exec: s.exec,
			Region: m.arch.region(s.target, !opts.NoModuleUnload), Candidates: s.cands, GOT: s.got, PLT: s.plt}
		res.Sections = append(res.Sections, sc)
		res.Totals.add(&sc)
	}
	if !opts.NoExpoline && t.pltN > 0 {
		res.FixedPLTs = 1 // the thunk
	}
	return res, nil
}

// s390Linker is one Link's GOT and PLT: where they are, and which slots
// have been written (got_initialized, plt_initialized).
type s390Linker struct {
	t              *s390Tables
	got, plt       *Placed
	gotSet, pltSet []bool
	expoline       bool
}

// s390CoreText: the GOT and PLT open core's text group (the loader
// maps it read-only and executable once they are written).
const s390CoreText = elf.SHF_ALLOC | elf.SHF_EXECINSTR

// s390Setup places the GOT and PLT at the start of core (the caller laid
// the sections out after them) and writes the expoline thunk.
func (l *linker) s390Setup(t *s390Tables, base uint64, expoline bool) {
	s := &s390Linker{t: t, gotSet: make([]bool, len(t.got)), pltSet: make([]bool, len(t.plt)), expoline: expoline}
	var pseudo []*Placed
	if t.gotSize > 0 {
		s.got = &Placed{Index: -1, Name: gotName, Region: Core, Addr: base, Size: t.gotSize, Align: 4, Flags: s390CoreText, Data: make([]byte, t.gotSize)}
		pseudo = append(pseudo, s.got)
	}
	if t.pltSize > 0 {
		s.plt = &Placed{Index: -1, Name: ".plt", Region: Core, Addr: base + t.gotSize, Size: t.pltSize, Align: 2, Flags: s390CoreText, Data: make([]byte, t.pltSize)}
		pseudo = append(pseudo, s.plt)
		if expoline {
			// module_finalize(): the __jump_r1 thunk.
			ij := s.plt.Data[t.pltSize-s390PLTEntry:]
			binary.BigEndian.PutUint32(ij[0:], 0xc6000000) // exrl %r0,.+10
			binary.BigEndian.PutUint32(ij[4:], 0x0005a7f4) // j .
			binary.BigEndian.PutUint32(ij[8:], 0x000007f1) // br %r1
		}
	}
	l.img.Sections = append(pseudo, l.img.Sections...)
	l.img.GOTMax, l.img.PLTCoreMax = t.gotN, t.pltN
	if l.img.Expoline = expoline && t.pltN > 0; l.img.Expoline {
		l.img.PLTCoreUsed = 1 // the thunk
	}
	l.s390 = s
}

// s390GOTSlot writes rc's symbol into its GOT slot, once, and returns the
// slot's offset from the GOT (info->got_offset).
func (l *linker) s390GOTSlot(rc *reloc) (uint64, error) {
	s := l.s390
	off := s.t.got[rc.r.Sym]
	if off < 0 || s.got == nil {
		return 0, &RelocError{Kind: ErrPLTFull, Detail: "no GOT slot counted for the symbol"}
	}
	if !s.gotSet[rc.r.Sym] {
		binary.BigEndian.PutUint64(s.got.Data[off:], rc.S)
		s.gotSet[rc.r.Sym] = true
		l.img.GOTUsed++
	}
	return uint64(off), nil
}

// s390PLTEntryAddr writes rc's symbol's PLT entry, once, and returns its
// address.
func (l *linker) s390PLTEntryAddr(rc *reloc) (uint64, error) {
	s := l.s390
	off := s.t.plt[rc.r.Sym]
	if off < 0 || s.plt == nil {
		return 0, &RelocError{Kind: ErrPLTFull, Detail: "no PLT entry counted for the symbol"}
	}
	ip := s.plt.Addr + uint64(off)
	if !s.pltSet[rc.r.Sym] {
		insn := s.plt.Data[off : off+s390PLTEntry]
		binary.BigEndian.PutUint32(insn[0:], 0x0d10e310) // basr %r1,0; lg ...
		binary.BigEndian.PutUint32(insn[4:], 0x100c0004) // ... %r1,12(%r1): the address below
		if s.expoline {
			jumpR1 := s.plt.Addr + s.t.pltSize - s390PLTEntry
			binary.BigEndian.PutUint16(insn[8:], 0xc0f4)                            // brcl 15,__jump_r1
			binary.BigEndian.PutUint32(insn[10:], uint32(int32((jumpR1-(ip+8))/2))) // (halfwords)
		} else {
			binary.BigEndian.PutUint32(insn[8:], 0x07f10000) // br %r1
		}
		binary.BigEndian.PutUint64(insn[14:], rc.S)
		s.pltSet[rc.r.Sym] = true
		l.img.PLTCoreUsed++
	}
	return ip, nil
}

// s390Apply: apply_rela(). Each case computes the value, then
// s390Bits range-checks and encodes it as apply_rela_bits() does.
func s390Apply(l *linker, rc *reloc) error {
	t := elf.R_390(rc.r.Type)
	val := rc.S
	A, P := uint64(rc.A), rc.P
	base := l.opts.Base // core_layout.base: the GOT, at offset 0
	switch t {
	case elf.R_390_NONE:
		return nil
	case elf.R_390_8, elf.R_390_12, elf.R_390_16, elf.R_390_20, elf.R_390_32, elf.R_390_64: // S + A
		val += A
		switch t {
		case elf.R_390_8:
			return s390Bits(rc.loc, val, false, 8, 0)
		case elf.R_390_12:
			return s390Bits(rc.loc, val, false, 12, 0)
		case elf.R_390_16:
			return s390Bits(rc.loc, val, false, 16, 0)
		case elf.R_390_20:
			return s390Bits(rc.loc, val, true, 20, 0)
		case elf.R_390_32:
			return s390Bits(rc.loc, val, false, 32, 0)
		}
		return s390Bits(rc.loc, val, false, 64, 0)
	case elf.R_390_PC16, elf.R_390_PC16DBL, elf.R_390_PC32DBL, elf.R_390_PC32, elf.R_390_PC64: // S + A - P
		val += A - P
		switch t {
		case elf.R_390_PC16:
			return s390Bits(rc.loc, val, true, 16, 0)
		case elf.R_390_PC16DBL: // bras, brc: halfwords
			return s390Bits(rc.loc, val, true, 16, 1)
		case elf.R_390_PC32DBL: // larl, brasl, brcl: halfwords
			return s390Bits(rc.loc, val, true, 32, 1)
		case elf.R_390_PC32:
			return s390Bits(rc.loc, val, true, 32, 0)
		}
		return s390Bits(rc.loc, val, true, 64, 0)
	case elf.R_390_GOT12, elf.R_390_GOT16, elf.R_390_GOT20, elf.R_390_GOT32, elf.R_390_GOT64, elf.R_390_GOTENT,
		elf.R_390_GOTPLT12, elf.R_390_GOTPLT16, elf.R_390_GOTPLT20, elf.R_390_GOTPLT32, elf.R_390_GOTPLT64, elf.R_390_GOTPLTENT:
		off, err := l.s390GOTSlot(rc)
		if err != nil {
			return err
		}
		val = off + A // G + A: the slot's offset from the GOT
		switch t {
		case elf.R_390_GOT12, elf.R_390_GOTPLT12:
			return s390Bits(rc.loc, val, false, 12, 0)
		case elf.R_390_GOT16, elf.R_390_GOTPLT16:
			return s390Bits(rc.loc, val, false, 16, 0)
		case elf.R_390_GOT20, elf.R_390_GOTPLT20:
			return s390Bits(rc.loc, val, true, 20, 0)
		case elf.R_390_GOT32, elf.R_390_GOTPLT32:
			return s390Bits(rc.loc, val, false, 32, 0)
		case elf.R_390_GOT64, elf.R_390_GOTPLT64:
			return s390Bits(rc.loc, val, false, 64, 0)
		}
		// GOTENT, GOTPLTENT: larl/lgrl of the slot, GOT + G + A - P, in
		// halfwords.
		return s390Bits(rc.loc, val+base-P, true, 32, 1)
	case elf.R_390_PLT16DBL, elf.R_390_PLT32DBL, elf.R_390_PLT32, elf.R_390_PLT64,
		r390PLTOFF16, r390PLTOFF32, r390PLTOFF64:
		ip, err := l.s390PLTEntryAddr(rc)
		if err != nil {
			return err
		}
		switch t {
		case r390PLTOFF16, r390PLTOFF32, r390PLTOFF64:
			// The entry's offset from the GOT.
			val = ip - base + A
		default:
			// A DBL branch whose target is in reach goes straight to it
			// (the kernel's test is on S - P, before the addend); any
			// other goes through the entry.
			d := val - P
			if !(t == elf.R_390_PLT16DBL && d+0xffff < 0x1fffe || t == elf.R_390_PLT32DBL && d+0xffffffff < 0x1fffffffe) {
				val = ip
			}
			val += A - P
		}
		switch t {
		case elf.R_390_PLT16DBL:
			return s390Bits(rc.loc, val, true, 16, 1)
		case r390PLTOFF16:
			return s390Bits(rc.loc, val, false, 16, 0)
		case elf.R_390_PLT32DBL:
			return s390Bits(rc.loc, val, true, 32, 1)
		case elf.R_390_PLT32, r390PLTOFF32:
			return s390Bits(rc.loc, val, false, 32, 0)
		}
		return s390Bits(rc.loc, val, false, 64, 0)
	case elf.R_390_GOTOFF16, r390GOTOFF32, elf.R_390_GOTOFF64: // S + A - GOT
		val += A - base
		switch t {
		case elf.R_390_GOTOFF16:
			return s390Bits(rc.loc, val, false, 16, 0)
		case r390GOTOFF32:
			return s390Bits(rc.loc, val, false, 32, 0)
		}
		return s390Bits(rc.loc, val, false, 64, 0)
	case elf.R_390_GOTPC, elf.R_390_GOTPCDBL: // GOT + A - P
		val = base + A - P
		if t == elf.R_390_GOTPC {
			return s390Bits(rc.loc, val, true, 32, 0)
		}
		return s390Bits(rc.loc, val, true, 32, 1)
	}
	// COPY, GLOB_DAT, JMP_SLOT, RELATIVE (modules linked -shared) and
	// every other type: "unknown relocation".
	return &RelocError{Kind: ErrUnsupported}
}

// s390Bits is apply_rela_bits(): val, which must be a multiple of
// 1<<shift, shifted right by shift, must fit in bits bits, signed or
// not; it is written big-endian in the field's place (12 bits: the low
// 12 of a halfword; 20 bits: an RXY displacement's DL (12) and DH (8)
// fields, low byte first, in a word whose other bits stay).
func s390Bits(loc []byte, val uint64, signed bool, bits, shift uint) error {
	if val&(1<<shift-1) != 0 {
		return &RelocError{Kind: ErrOutOfRange, Value: val, Detail: fmt.Sprintf("not a multiple of %d (an odd halfword offset)", 1<<shift)}
	}
	if signed {
		v := int64(val) >> shift
		lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
		if v < lo || v > hi {
			return rangeErr(val, fmt.Sprintf("does not fit in %d signed bits", bits))
		}
		val = uint64(v)
	} else {
		val >>= shift
		if bits < 64 && val > 1<<bits-1 {
			return rangeErr(val, fmt.Sprintf("does not fit in %d unsigned bits", bits))
		}
	}
	size := map[uint]int{8: 1, 12: 2, 16: 2, 20: 4, 32: 4, 64: 8}[bits]
	if len(loc) < size {
		return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("%d bytes needed, %d left in the section", size, len(loc))}
	}
	be := binary.BigEndian
	switch bits {
	case 8:
		loc[0] = byte(val)
	case 12:
		be.PutUint16(loc, uint16(val&0xfff)|be.Uint16(loc)&0xf000)
	case 16:
		be.PutUint16(loc, uint16(val))
	case 20:
		be.PutUint32(loc, uint32(val&0xfff)<<16|uint32(val&0xff000)>>4|be.Uint32(loc)&0xf00000ff)
	case 32:
		be.PutUint32(loc, uint32(val))
	case 64:
		be.PutUint64(loc, val)
	}
	return nil
}

// s390Frob is s390's module_frob_arch_sections(): core grows by the GOT
// and the PLT (core_layout.size, 0 so far: ALIGN(0, 4)) before the
// sections are laid out after them; no PLT section is sized.
func s390Frob(m *Module, opts *LinkOptions, fr *frobbed) error {
	t, err := s390Count(m.f, !opts.NoExpoline)
	if err != nil {
		return err
	}
	fr.s390, fr.reserve = t, t.gotSize+t.pltSize
	return nil
}
