// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"slices"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/par"
	"github.com/klpresolve/klpresolve/kgen"
)

// Mode selects how entries are counted.
type Mode uint8

const (
	// ModeKernel gives exactly what Linux 6.1's module_frob_arch_sections()
	// gives, quirks included.
	ModeKernel Mode = iota
	// ModeOptimal gives the smallest safe count for an emitter that shares
	// one entry per target across a region.
	ModeOptimal
)

func (m Mode) String() string {
	if m == ModeOptimal {
		return "optimal"
	}
	return "kernel"
}

// ParseMode reads "kernel" or "optimal".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "kernel":
		return ModeKernel, nil
	case "optimal":
		return ModeOptimal, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want kernel or optimal)", s)
}

// Options are the kernel configuration and the mode a count assumes.
// The zero value is Debian's 6.1 kernel in kernel mode.
type Options struct {
	Mode Mode
	// Erratum843419 counts as a kernel with ARM64_WORKAROUND_843419
	// active does: ADRP veneer slots and one slot of slack per 341
	// (arm64 only).
	Erratum843419 bool
	// NoModuleUnload counts as a kernel built without CONFIG_MODULE_UNLOAD,
	// which loads .exit* sections with init.
	NoModuleUnload bool
	// NoRandomizeBase counts as an arm64 kernel built without
	// CONFIG_RANDOMIZE_BASE (KASLR) does: Linux 6.1's count_plts() and
	// partition_branch_plt_relas() return early for branches, since such
	// a kernel loads modules in the 128 MiB below _etext, which every BL
	// reaches; ADRP veneers are still counted. (Linux 6.5 moved modules
	// out of that region and d35686444fc8 removed the early returns: a
	// later Generation counts every branch, KASLR or not.)
	NoRandomizeBase bool
	// Generation is the kernel's generation, whose rules the count
	// follows (kgen.Unknown: Linux 6.1's).
	Generation kgen.Generation
	// NoExpoline counts as an s390 kernel without expolines does
	// (CONFIG_EXPOLINE off, or turned off at boot): its PLT has no
	// __jump_r1 thunk entry. The default is a kernel with them, as
	// distributions build s390x kernels (CONFIG_EXPOLINE=y); with
	// CONFIG_EXPOLINE_AUTO a machine with etokens (z15 and later) turns
	// them off at boot, which a module cannot tell.
	NoExpoline bool

	// serial counts on one goroutine, and pieceRelocs overrides
	// optimalPiece (tests compare the parallel optimal-mode count with the
	// sequential one, with pieces small enough to cut every section).
	serial      bool
	pieceRelocs int
}

// SectionCount is the count for one relocation section (of the type the
// architecture's loader reads: RELA, or REL on arm).
type SectionCount struct {
	Name   string `json:"name"`   // ".rela.text"
	Target string `json:"target"` // ".text"
	Region Region `json:"region"`
	// Exec is set when the target is executable; only those sections
	// need entries (module_frob_arch_sections() skips the others).
	Exec   bool `json:"exec"`
	Relocs int  `json:"relocs"`

	// Branches are the calls and jumps (arm64 CALL26/JUMP26; arm CALL,
	// JUMP24, PC24, THM_CALL, THM_JUMP24; x86_64 PC32, PLT32).
	Branches      int `json:"branches"`
	Undef         int `json:"branches_undef"`          // to SHN_UNDEF symbols
	SameSection   int `json:"branches_same_section"`   // to a symbol of the target section itself: never a PLT
	NonZeroAddend int `json:"branches_nonzero_addend"` // as the kernel tests it
	// Candidates are the branches that may need a PLT entry (arm64, arm)
	// or the relocations that need a GOT entry (x86_64).
	Candidates int `json:"candidates"`

	// PLT is the entries this section adds to its region's PLT: in kernel
	// mode what count_plts() returns for it (veneers and slack included);
	// in optimal mode the targets first seen here, plus veneers.
	PLT int `json:"plt"`
	// Veneers are the erratum 843419 ADRP veneer slots (in PLT).
	Veneers int `json:"veneers,omitempty"`
	// Align is the alignment the erratum 843419 workaround gives the
	// target section (0: unchanged).
	Align uint64 `json:"align,omitempty"`
	// GOT is the GOT entries this section adds (x86_64).
	GOT int `json:"got,omitempty"`
}

// Counts is a module's count.
type Counts struct {
	Module        string `json:"module"`
	Path          string `json:"path"`
	Arch          string `json:"arch"`
	BigEndian     bool   `json:"big_endian,omitempty"` // a big-endian module
	Mode          string `json:"mode"`
	Erratum843419 bool   `json:"erratum_843419"`
	// NoRandomizeBase: counted as an arm64 kernel without KASLR
	// (Options.NoRandomizeBase): no branch gets a PLT entry.
	NoRandomizeBase bool `json:"no_randomize_base"`
	// NoExpoline: counted as an s390 kernel without expolines
	// (Options.NoExpoline).
	NoExpoline bool           `json:"no_expoline,omitempty"`
	Sections   []SectionCount `json:"sections"`

	// PLTCore and PLTInit are the entries of .plt and .init.plt (what the
	// kernel sets plt_max_entries to), fixed slots included.
	PLTCore int `json:"plt_core"`
	PLTInit int `json:"plt_init"`
	// FixedPLTs is the slots each PLT starts with (arm: 2 for ftrace).
	FixedPLTs int `json:"fixed_plts"`
	// PLTSizeCore and PLTSizeInit are the sh_size the kernel gives them.
	PLTSizeCore uint64 `json:"plt_sh_size_core"`
	PLTSizeInit uint64 `json:"plt_sh_size_init"`
	// GOT is the GOT entries a PIE x86_64 module needs.
	GOT int `json:"got"`

	Totals SectionCount `json:"totals"` // the sums over Sections (Name, Target empty)
	// Warnings are what the kernel would refuse or what is odd.
	Warnings []string `json:"warnings,omitempty"`
}

// candidate is a relocation that may need an entry.
type candidate struct {
	typ    uint32
	sym    uint32
	addend int64
	slot   uint8 // the type's dense index (arch.kind)
	entry  uint8 // the kind of entry it takes (arch.kind)
	zero   bool  // the kernel's zero-addend test
}

// sectionWork is one section being counted.
type sectionWork struct {
	table  elfobj.RelocTable
	text   []byte // the target section's bytes
	relocs int    // entries in the section
	cands  []candidate
	// from, to: the entries scan reads (to == 0: all of them).
	from, to int
}

// targetKey is an entry's identity in a dedupe scope.
type targetKey struct {
	scope  uint32 // a region (optimal) or a section serial (kernel)
	entry  uint8
	sym    uint32
	addend int64
}

// counter holds one count's scratch state. Nothing is shared between
// counts, so any number may run at once.
type counter struct {
	m       *Module
	opts    Options
	erratum bool // the erratum 843419 workaround applies (arm64)
	// noBranchPLT: branches get no entries (Options.NoRandomizeBase).
	noBranchPLT bool
	nsym        int

	serial uint32
	// stamps[slot*nsym+sym] holds the serial of the section that last saw
	// a zero-addend (slot, sym) candidate (kernel mode), shifted left by 2
	// with group flags for arm.
	stamps []uint32
	// seen[sym] has bit region*4+entry set once a zero-addend target has an
	// entry (optimal mode; entry kinds are below 4).
	seen []uint8
	// others holds the targets the two dense tables do not cover.
	others map[targetKey]struct{}
}

func (c *counter) nextSerial() uint32 {
	c.serial++
	return c.serial
}

// firstInSection reports whether x is the first zero-addend candidate of
// its (type, symbol) in the section numbered serial.
func (c *counter) firstInSection(x *candidate, serial uint32) bool {
	if c.stamps == nil {
		c.stamps = make([]uint32, c.m.arch.nslots*c.nsym)
	}
	i := int(x.slot)*c.nsym + int(x.sym)
	if c.stamps[i] == serial {
		return false
	}
	c.stamps[i] = serial
	return true
}

// firstInSectionAny is firstInSection for any addend.
func (c *counter) firstInSectionAny(x *candidate, serial uint32) bool {
	if x.addend == 0 {
		return c.firstInSection(x, serial)
	}
	return c.addOther(targetKey{serial, x.slot, x.sym, x.addend})
}

func (c *counter) addOther(k targetKey) bool {
	if c.others == nil {
		c.others = make(map[targetKey]struct{})
	}
	if _, ok := c.others[k]; ok {
		return false
	}
	c.others[k] = struct{}{}
	return true
}

type groupState uint8

const (
	groupNew   groupState = iota // first zero-addend or any non-zero-addend member seen
	groupSeen                    // a later member, group not mixed so far
	groupMixed                   // zero and non-zero addends in one group
)

// markGroup records x in its (type, symbol) group of the section numbered
// serial: groupNew for a zero-addend candidate that opens the group's
// zero entries, groupSeen otherwise, groupMixed once the group has both.
func (c *counter) markGroup(x *candidate, serial uint32) groupState {
	if c.stamps == nil {
		c.stamps = make([]uint32, c.m.arch.nslots*c.nsym)
	}
	const hasZero, hasNonZero = 1, 2
	i := int(x.slot)*c.nsym + int(x.sym)
	st := c.stamps[i]
	if st>>2 != serial {
		st = serial << 2
	}
	flag, other := uint32(hasNonZero), uint32(hasZero)
	if x.zero {
		flag, other = hasZero, hasNonZero
	}
	if st&other != 0 {
		return groupMixed
	}
	first := st&flag == 0
	c.stamps[i] = st | flag
	if first && x.zero {
		return groupNew
	}
	return groupSeen
}

// Count counts the PLT (and GOT) entries m needs.
func (m *Module) Count(opts Options) (*Counts, error) {
	a := m.arch
	if a.count != nil {
		return a.count(m, opts)
	}
	f := m.f
	c := &counter{m: m, opts: opts, nsym: len(f.Symbols)}
	res := &Counts{Module: m.Name, Path: m.Path, Arch: a.name, BigEndian: elfobj.BigEndian(f.Order), Mode: opts.Mode.String(),
		Erratum843419: opts.Erratum843419 && a.machine == elf.EM_AARCH64, FixedPLTs: a.fixedPLTs}
	c.erratum = res.Erratum843419
	res.NoRandomizeBase = opts.NoRandomizeBase && a.machine == elf.EM_AARCH64 && opts.Generation <= kgen.Linux6_1
	c.noBranchPLT = res.NoRandomizeBase
	var plt [2]int // by region, before the optimal slack and the fixed slots

	// module_frob_arch_sections(): every section of the loader's
	// relocation type whose target is executable. Each section's count
	// (and entries) first, in section order, then the totals.
	var secs []sectionWork
	var scs []SectionCount
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != a.relType {
			continue
		}
		t, err := f.RelocTable(s)
		if err != nil {
			return nil, err
		}
		dst := t.Target()
		// Only sections that apply to executable ones need entries; the
		// others are counted in the statistics.
		scs = append(scs, SectionCount{Name: s.Name, Target: dst.Name, Relocs: t.Len(),
			Exec: dst.Flags&elf.SHF_EXECINSTR != 0, Region: a.region(dst.Name, !opts.NoModuleUnload)})
		secs = append(secs, sectionWork{table: t, text: f.SectionData(dst), relocs: t.Len()})
	}
	var ns []int
	var err error
	if opts.Mode == ModeOptimal && runtime.GOMAXPROCS(0) > 1 && !opts.serial {
		ns, err = c.optimalParallel(secs, scs, runtime.GOMAXPROCS(0))
	} else {
		ns, err = c.sequential(secs, scs)
	}
	if err != nil {
		return nil, err
	}
	for k := range scs {
		sc, n := &scs[k], ns[k]
		switch {
		case !sc.Exec:
		case a.pltEntry == 0:
			sc.GOT = n
			res.GOT += n
		default:
			n += sc.Veneers
			if c.erratum && opts.Mode == ModeKernel {
				// count_plts(): DIV_ROUND_UP(ret, SZ_4K / sizeof(plt_entry)).
				n += (n + arm64ErratumSlackEvery - 1) / arm64ErratumSlackEvery
			}
			sc.PLT = n
			plt[sc.Region] += n
		}
		res.Sections = append(res.Sections, *sc)
		res.Totals.add(sc)
	}
	if a.pltEntry != 0 {
		for r := range plt {
			if c.erratum && opts.Mode == ModeOptimal {
				plt[r] += (plt[r] + arm64ErratumSlackEvery - 1) / arm64ErratumSlackEvery
			}
			plt[r] += a.fixedPLTs
		}
		res.PLTCore, res.PLTInit = plt[Core], plt[Init]
		res.PLTSizeCore, res.PLTSizeInit = a.pltSize(res.PLTCore), a.pltSize(res.PLTInit)
		missing, says := a.missingPLTSection(f.HasSection)
		switch {
		case missing == "":
			if tramp := a.missingFtracePLT(f.HasSection, opts.Generation); tramp != "" {
				res.Warnings = append(res.Warnings, "no "+tramp+" section: a kernel with dynamic ftrace refuses the module (module_finalize(), without a message); it was not linked with the kernel's module.lds")
			}
		case f.SectionByName(".plt") == nil && f.SectionByName(".init.plt") == nil && res.NoRandomizeBase:
			// Without KASLR, ARM64_MODULE_PLTS may be off (only
			// RANDOMIZE_BASE and ARM64_ERRATUM_843419 select it), and a
			// kernel without it links its modules without PLT sections
			// (module.lds.h) and never looks for them.
		default:
			res.Warnings = append(res.Warnings, "no "+missing+" section: the kernel refuses the module (\""+says+"\"); it was not linked with the kernel's module.lds")
		}
	}
	return res, nil
}

// sequential counts the sections one after the other: each section's
// entries (kernel mode: its own; optimal mode: the targets first seen in
// it).
func (c *counter) sequential(secs []sectionWork, scs []SectionCount) ([]int, error) {
	ns := make([]int, len(secs))
	var cands []candidate // one array, grown for the largest section
	for k := range secs {
		w := &secs[k]
		w.cands = cands[:0]
		n, err := c.scan(w, &scs[k])
		if err != nil {
			return nil, err
		}
		if scs[k].Exec && c.opts.Mode == ModeKernel {
			if n, err = c.m.arch.kernel(c, w); err != nil {
				return nil, err
			}
		}
		ns[k], cands = n, w.cands
	}
	return ns, nil
}

// optimalPiece is the relocations an optimal-mode count hands one worker.
const optimalPiece = 16 << 10

// optimalParallel is the optimal-mode count on workers goroutines: the
// sections are cut into pieces of at most optimalPiece relocations, each
// counted into its own target set (a bitmap and a hash set, as scan
// keeps), and the sets are then merged in section order, so that each
// section is credited with the targets first seen in it, exactly as the
// sequential count does (TestOptimalParallelMatchesSequential).
func (c *counter) optimalParallel(secs []sectionWork, scs []SectionCount, workers int) ([]int, error) {
	type piece struct {
		sec    int
		w      sectionWork
		sc     SectionCount // the piece's statistics
		seen   []uint8
		others map[targetKey]struct{}
		err    error
	}
	size := optimalPiece
	if c.opts.pieceRelocs > 0 {
		size = c.opts.pieceRelocs
	}
	var pieces []*piece
	for k := range secs {
		for from := 0; from < max(secs[k].relocs, 1); from += size {
			w := secs[k]
			w.from, w.to = from, min(from+size, w.relocs)
			if w.relocs == 0 {
				w.to = 0
			}
			pieces = append(pieces, &piece{sec: k, w: w, sc: scs[k]})
		}
	}
	par.For(workers, len(pieces), func(i int) {
		p := pieces[i]
		pc := &counter{m: c.m, opts: c.opts, erratum: c.erratum, noBranchPLT: c.noBranchPLT, nsym: c.nsym}
		if p.w.to == 0 && p.w.relocs == 0 {
			return
		}
		_, p.err = pc.scan(&p.w, &p.sc)
		p.seen, p.others = pc.seen, pc.others // nil unless the target is executable
	})
	// Merge in order: a target is new to the section whose piece holds
	// it first.
	c.seen = make([]uint8, c.nsym)
	ns := make([]int, len(secs))
	for k := range scs {
		scs[k].Branches, scs[k].Undef, scs[k].SameSection, scs[k].NonZeroAddend, scs[k].Candidates = 0, 0, 0, 0, 0
		scs[k].Veneers, scs[k].Align = 0, 0
	}
	for _, p := range pieces {
		if p.err != nil {
			return nil, p.err
		}
		sc := &scs[p.sec]
		sc.Branches += p.sc.Branches
		sc.Undef += p.sc.Undef
		sc.SameSection += p.sc.SameSection
		sc.NonZeroAddend += p.sc.NonZeroAddend
		sc.Candidates += p.sc.Candidates
		sc.Veneers += p.sc.Veneers
		sc.Align = max(sc.Align, p.sc.Align)
		n := 0
		if p.seen != nil {
			n += orNew(c.seen, p.seen)
		}
		for k := range p.others {
			if c.addOther(k) {
				n++
			}
		}
		ns[p.sec] += n
	}
	return ns, nil
}

// orNew ORs src into dst and returns how many bits were new, a word at a
// time.
func orNew(dst, src []uint8) int {
	n, i := 0, 0
	for ; i+8 <= len(src); i += 8 {
		d := binary.LittleEndian.Uint64(dst[i:])
		s := binary.LittleEndian.Uint64(src[i:])
		n += bits.OnesCount64(s &^ d)
		binary.LittleEndian.PutUint64(dst[i:], d|s)
	}
	for ; i < len(src); i++ {
		n += bits.OnesCount8(src[i] &^ dst[i])
		dst[i] |= src[i]
	}
	return n
}

// scan is the relocation loop, written once for every architecture: it
// fills sc's statistics and, for an executable target, either collects the
// candidates in w (kernel mode) or adds them to their region's targets at
// once (optimal mode), returning how many were new.
func (c *counter) scan(w *sectionWork, sc *SectionCount) (int, error) {
	m, a := c.m, c.m.arch
	t := &w.table
	info := t.Section.Info
	shndxOf := m.shndx
	optimal := c.opts.Mode == ModeOptimal
	erratum := c.erratum && sc.Exec
	scope := sc.Region
	if a.pltEntry == 0 {
		scope = Core // the GOT is one table, in core
	}
	if sc.Exec && !optimal {
		w.cands = slices.Grow(w.cands, w.relocs) // one allocation, for the largest section
	}
	fast := t.IsRelaLE64()
	if optimal && sc.Exec && c.seen == nil {
		c.seen = make([]uint8, c.nsym)
	}
	seen := c.seen
	var branches, undef, same, nonzero, cands, entries int
	to := w.to
	if to == 0 {
		to = w.relocs
	}
	for j := w.from; j < to; j++ {
		kind, slot, entry := a.classify(t.Type(j))
		ki := kindInfo{kind, slot, entry}
		if ki.kind == kindOther || ki.kind == kindADRP && !erratum {
			continue
		}
		r, ok := elfobj.Reloc{}, false
		if fast {
			r, ok = t.RelaLE64(j)
		}
		if !ok {
			var err error
			if r, err = t.Reloc(j); err != nil {
				return 0, err
			}
		}
		if ki.kind == kindADRP {
			if erratum {
				veneer, align := arm64ADRP(r.Offset)
				if veneer {
					sc.Veneers++
				} else {
					sc.Align = max(sc.Align, align)
				}
			}
			continue
		}
		shndx := shndxOf[r.Sym]
		// The kernel compares st_shndx with the relocation section's
		// sh_info: a branch into its own section never gets a PLT.
		isSame := uint32(shndx) == info
		addend, zero := r.Addend, r.Addend == 0
		if a.relType == elf.SHT_REL {
			var err error
			if addend, zero, err = a.addend(m, w.text, r); err != nil {
				return 0, &elfobj.FormatError{File: m.f.Name, Section: t.Section.Name, Msg: fmt.Sprintf("relocation %d: %v", j, err)}
			}
		}
		if ki.kind != kindGOT {
			// Branch-free: these outcomes are as good as random.
			branches++
			undef += b2i(shndx == uint16(elf.SHN_UNDEF))
			same += b2i(isSame)
			nonzero += b2i(!zero)
			if ki.kind != kindBranch || isSame || c.noBranchPLT {
				continue
			}
		}
		if !sc.Exec {
			continue
		}
		cands++
		if optimal {
			// The region's target set: a bit per (region, entry kind) in
			// seen for a zero addend, branch-free; a hash set otherwise.
			if addend == 0 && ki.entry < 4 {
				bit := uint8(1) << (uint(scope)*4 + uint(ki.entry))
				old := seen[r.Sym]
				seen[r.Sym] = old | bit
				entries += b2i(old&bit == 0)
			} else if c.addOther(targetKey{uint32(scope), ki.entry, r.Sym, addend}) {
				entries++
			}
		} else {
			// Field by field, not append(candidate{...}): the literal's
			// stack copy would be reloaded with 16-byte loads that cannot
			// be forwarded from its narrow stores (see applySection).
			w.cands = w.cands[:len(w.cands)+1]
			cd := &w.cands[len(w.cands)-1]
			cd.typ, cd.sym, cd.addend, cd.slot, cd.entry, cd.zero = r.Type, r.Sym, addend, ki.slot, ki.entry, zero
		}
	}
	sc.Branches, sc.Undef, sc.SameSection, sc.NonZeroAddend, sc.Candidates = branches, undef, same, nonzero, cands
	return entries, nil
}

func (t *SectionCount) add(s *SectionCount) {
	t.Relocs += s.Relocs
	t.Branches += s.Branches
	t.Undef += s.Undef
	t.SameSection += s.SameSection
	t.NonZeroAddend += s.NonZeroAddend
	t.Candidates += s.Candidates
	t.PLT += s.PLT
	t.Veneers += s.Veneers
	t.GOT += s.GOT
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
