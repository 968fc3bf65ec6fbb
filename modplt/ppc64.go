// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"cmp"
	"debug/elf"
	"fmt"
	"slices"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kgen"
)

// ppc64 (ELFv2: ppc64le): arch/powerpc/kernel/module_64.c. A module's
// calls out of it (to the kernel, another module, a livepatch symbol) all
// go through stubs, which save the caller's TOC pointer (r2) and load the
// target's address from the stub's own data; the instruction after the
// call, a nop, becomes the load that restores r2. The stubs live in the
// module's .stubs section (asm/module.h declares it, NOBITS), which
// module_frob_arch_sections() sizes with get_stubs_size(): one stub per
// distinct (symbol, addend) of the REL24 relocations of each RELA section
// (counted on the section sorted in place), and fixed ones
// (ppc64FixedStubs): the two ftrace trampolines module_finalize_ftrace()
// makes (CONFIG_DYNAMIC_FTRACE_WITH_REGS, as Debian's ppc64el kernels are
// built), up to 6.12 one that stays zero to end stub_for_addr()'s search,
// from 7.2 the out-of-line ftrace stubs. stub_for_addr() gives each target
// address one stub, in the order relocations are applied.
const (
	ppc64StubEntry   = 40         // sizeof(struct ppc64_stub_entry), ELFv2: jump[7], magic, funcdata (8 bytes)
	ppc64StubMagic   = 0x73747562 // STUB_MAGIC, "stub"
	ppc64FtraceStubs = 2          // ftrace_caller, ftrace_regs_caller
	// ppc64OOLStub is sizeof(struct ftrace_ool_stub) (7.2, with
	// DYNAMIC_FTRACE_WITH_CALL_OPS: an ftrace_ops pointer and four
	// instructions); ppc64PatchableEntry the size of one
	// __patchable_function_entries entry (a pointer).
	ppc64OOLStub        = 24
	ppc64PatchableEntry = 8
	ppc64TOCBias        = 0x8000 // r2 points 32 KiB into the TOC
	// ppc64PacaKernelTOC is offsetof(struct paca_struct, kernel_toc) with
	// CONFIG_PPC_PSERIES (lppaca_ptr, then two u16, then kernel_toc).
	ppc64PacaKernelTOC = 16
	// ppc64VmallocStart is VMALLOC_START (RADIX_KERN_VIRT_START; the
	// hash MMU's H_KERN_VIRT_START is the same): module_alloc() takes
	// modules from the vmalloc area, where the first allocation starts.
	ppc64VmallocStart = 0xc008000000000000
)

// Instructions the loader writes (asm/ppc-opcode.h).
const (
	ppcNop       = 0x60000000 // nop (ori 0,0,0)
	ppcLdTOC     = 0xe8410018 // ld r2,24(r1): PPC_INST_LD_TOC, R2_STACK_OFFSET 24 (ELFv2)
	ppcLdR2R12   = 0xe84c0000 // ld r2,0(r12), the displacement masked
	ppcAddR2R12  = 0x7c426214 // add r2,r2,r12
	ppcAddisR2   = 0x3c4c0000 // addis r2,r12,0
	ppcAddiR2    = 0x38420000 // addi r2,r2,0
	ppcLIMask    = 0x03fffffc // an I-form branch's LI field
	ppcBranchAA  = 0x2        // BRANCH_ABSOLUTE
	ppcBranchLK  = 0x1        // BRANCH_SET_LINK
	ppcStubInsns = 6          // ELFv2 writes 6 of the 7 jump words
)

// ppc64StubInsns is ppc64_stub_insns (ELFv2): r11 = r2 + the stub's
// offset from it (patched in), save r2, load the target from funcdata,
// branch to it.
var ppc64StubInsns = [ppcStubInsns]uint32{
	0x3d620000, // addis r11,r2,0
	0x396b0000, // addi r11,r11,0
	0xf8410018, // std r2,24(r1)
	0xe98b0020, // ld r12,32(r11): funcdata
	0x7d8903a6, // mtctr r12
	0x4e800420, // bctr
}

// ppc64FtraceInsns is stub_insns (CONFIG_MPROFILE_KERNEL): the target
// relative to the kernel's TOC, taken from the paca (r13), since r2 may
// not be the module's at an _mcount call.
var ppc64FtraceInsns = [5]uint32{
	0xe98d0000 | ppc64PacaKernelTOC, // ld r12,kernel_toc(r13)
	0x3d8c0000,                      // addis r12,r12,0
	0x398c0000,                      // addi r12,r12,0
	0x7d8903a6,                      // mtctr r12
	0x4e800420,                      // bctr
}

var ppc64Arch = newArch(arch{
	noLookup:    ".TOC.",
	dedot:       true,
	pltSections: []string{".stubs"},
	pltMissing:  "doesn't contain .stubs.",
	name:        "ppc64",
	machine:     elf.EM_PPC64,
	is64:        true,
	relType:     elf.SHT_RELA,
	pltEntry:    0, // the stubs are .stubs, sized by ppc64Count
	pltSize:     func(int) uint64 { return 0 },
	moduleArea: func(uint64, uint64) uint64 {
		return ppc64VmallocStart
	},
	// Debian's ppc64el kernels have 64 KiB pages (CONFIG_PPC_64K_PAGES),
	// the default Link takes; 4 KiB ones exist.
	// module_init_section() is false: nothing goes to init ("We don't
	// handle .init for the moment").
	initPrefixes: nil,
	exitPrefixes: []string{".exit"},
	kind: func(t uint32) (relKind, uint8, uint8) {
		if elf.R_PPC64(t) == elf.R_PPC64_REL24 {
			return kindBranch, 0, 0
		}
		return kindOther, 0, 0
	},
	nslots: 1,
	addend: relaAddend,
	count:  (*Module).countPPC64,
	apply:  ppc64Apply,
	frob:   ppc64Frob,
	setup: func(l *linker, fr *frobbed) error {
		l.ppc64Setup(fr.ppc64)
		return nil
	},
	finalize: (*linker).ppc64Finalize,
})

// ppc64ELFv2 reports whether f uses the ELFv2 ABI (e_flags' ABI bits 2,
// or 0 on a little-endian file, which only ELFv2 ever was).
func ppc64ELFv2(f *elfobj.File) bool {
	switch f.Flags & 3 {
	case 2:
		return true
	case 0:
		return !elfobj.BigEndian(f.Order)
	}
	return false
}

// ppc64Order is an order equivalent to the one the kernel's sort() leaves
// a RELA section in (get_stubs_size() sorts each one in place, before
// any is applied). relacmp() compares its arguments the other way round:
// descending by the whole r_info, then by addend; among the REL24s,
// whose type is the same, that is by symbol, then addend. Only the
// REL24s' order matters: they alone take stubs, handed out in the order
// they are applied, and count_relocs() looks at nothing else; every
// other relocation writes its own place whenever it is applied. So the
// others keep the file's order and go first, and the REL24s follow,
// sorted (equal keys name the same target: they keep the file's order,
// for a result that does not depend on the sort).
func ppc64Order(t *elfobj.RelocTable) ([]int, []elfobj.Reloc, error) {
	rs := make([]elfobj.Reloc, t.Len())
	order := make([]int, 0, t.Len())
	// The REL24s are counting-sorted by symbol (descending; the file's
	// order within a symbol), then each symbol's run by addend: O(n) but
	// for the runs, where a comparison sort of every call took a third of
	// a whole link.
	var nsym uint32
	calls := 0
	for j := range rs {
		r, err := t.Reloc(j)
		if err != nil {
			return nil, nil, err
		}
		rs[j] = r
		if elf.R_PPC64(r.Type) == elf.R_PPC64_REL24 {
			nsym = max(nsym, r.Sym+1)
			calls++
		} else {
			order = append(order, j)
		}
	}
	if calls == 0 {
		return order, rs, nil
	}
	// start[s] is where symbol s's calls begin among the sorted ones:
	// after those of every higher symbol.
	start := make([]int, nsym+1)
	for _, r := range rs {
		if elf.R_PPC64(r.Type) == elf.R_PPC64_REL24 {
			start[r.Sym]++
		}
	}
	at := 0
	for s := int(nsym) - 1; s >= 0; s-- {
		n := start[s]
		start[s] = at
		at += n
	}
	sorted := make([]int, calls)
	next := slices.Clone(start)
	for j, r := range rs {
		if elf.R_PPC64(r.Type) == elf.R_PPC64_REL24 {
			sorted[next[r.Sym]] = j
			next[r.Sym]++
		}
	}
	for s := range nsym {
		if run := sorted[start[s]:next[s]]; len(run) > 1 {
			slices.SortStableFunc(run, func(a, b int) int { return cmp.Compare(rs[b].Addend, rs[a].Addend) })
		}
	}
	return append(order, sorted...), rs, nil
}

// ppc64CountRelocs is count_relocs() on a section in the kernel's order:
// a REL24 whose symbol or addend differs from the previous REL24's counts
// a stub. The previous values start at 0 and are held in unsigned ints,
// so a first REL24 against symbol 0 with addend 0 is not counted, and an
// addend outside 0..2^32-1 never equals the truncated previous one.
func ppc64CountRelocs(order []int, rs []elfobj.Reloc) int {
	n := 0
	var sym, addend uint32
	for _, j := range order {
		r := rs[j]
		if elf.R_PPC64(r.Type) == elf.R_PPC64_REL24 && (sym != r.Sym || int64(addend) != r.Addend) {
			n++
			sym, addend = r.Sym, uint32(r.Addend)
		}
	}
	return n
}

// ppc64Tables is module_frob_arch_sections()'s work: the stubs the
// module gets, what each RELA section added, and each section's
// application order.
type ppc64Tables struct {
	// stubsSec and tocSec are .stubs and .toc (nil: the module has
	// none; module_frob_arch_sections() finds them by name).
	stubsSec, tocSec *elfobj.Section
	stubs            int // entries, the terminator and the ftrace ones included
	optimal          int // distinct external REL24 targets (symbol, addend) + the same fixed entries
	// fixed are the entries get_stubs_size() adds to the relocations'
	// (ppc64FixedStubs): terminator is 1 where the last stays zero (up to
	// 6.12), ool the out-of-line ftrace stubs' entries (7.2).
	fixed, terminator, ool int
	sections               []ppc64Section
	order                  map[int][]int // by RELA section index
}

type ppc64Section struct {
	name, target     string
	exec             bool
	relocs, branches int
	undef, stubs     int // stubs: count_relocs()
	firstSeen        int // external targets first named here (optimal mode)
}

// ppc64FixedStubs is what get_stubs_size() adds to the relocations'
// stubs for generation g. Up to 6.12: one that stays zero, ending
// stub_for_addr()'s search, and the two ftrace trampolines. From 7.2
// (which counts the stubs in use instead): the trampolines, and the
// out-of-line ftrace stubs (CONFIG_PPC_FTRACE_OUT_OF_LINE), one struct
// ftrace_ool_stub for each entry of the module's
// __patchable_function_entries, rounded up to whole stub entries. A
// module has that section when it was built with patchable function
// entries, which is what the kernel's option follows.
func ppc64FixedStubs(f *elfobj.File, g kgen.Generation) (terminator, ool int) {
	if g < kgen.Linux7_2 {
		return 1, 0
	}
	if s := f.SectionByName("__patchable_function_entries"); s != nil {
		n := s.Size / ppc64PatchableEntry
		ool = int((n*ppc64OOLStub + ppc64StubEntry - 1) / ppc64StubEntry)
	}
	return 0, ool
}

// ppc64Count is module_frob_arch_sections(): m must have .stubs, whose
// size is get_stubs_size() in entries, over every SHT_RELA section in
// section order, whatever its target (debug and livepatch ones too).
func ppc64Count(m *Module, g kgen.Generation) (*ppc64Tables, error) {
	f := m.f
	t := &ppc64Tables{stubsSec: f.SectionByName(".stubs"), tocSec: f.SectionByName(".toc"), order: map[int][]int{}}
	t.terminator, t.ool = ppc64FixedStubs(f, g)
	t.fixed = t.terminator + ppc64FtraceStubs + t.ool
	t.stubs = t.fixed
	if t.stubsSec == nil {
		return nil, ppc64NoStubs(m)
	}
	type target struct {
		sym    uint32
		addend int64
	}
	external := map[target]bool{}
	for i := range f.Sections {
		s := &f.Sections[i]
		if s.Type != elf.SHT_RELA {
			continue
		}
		rt, err := f.RelocTable(s)
		if err != nil {
			return nil, err
		}
		order, rs, err := ppc64Order(&rt)
		if err != nil {
			return nil, err
		}
		dst := rt.Target()
		sec := ppc64Section{name: s.Name, target: dst.Name, exec: dst.Flags&elf.SHF_EXECINSTR != 0, relocs: len(rs)}
		for _, r := range rs {
			if elf.R_PPC64(r.Type) != elf.R_PPC64_REL24 {
				continue
			}
			sec.branches++
			if sh := f.Symbols[r.Sym].Shndx; sh == uint16(elf.SHN_UNDEF) || sh == shnLivepatch {
				sec.undef++
				if k := (target{r.Sym, r.Addend}); !external[k] {
					external[k] = true
					sec.firstSeen++
				}
			}
		}
		sec.stubs = ppc64CountRelocs(order, rs)
		t.stubs += sec.stubs
		t.order[i] = order
		t.sections = append(t.sections, sec)
	}
	t.optimal = len(external) + t.fixed
	return t, nil
}

// countPPC64 is Count for ppc64: the stubs get_stubs_size() gives .stubs
// (kernel mode), or one for each distinct external branch target
// (symbol, addend) in the whole module, which is all stub_for_addr() can
// ever use (optimal mode: the kernel counts every REL24, local calls
// too, per section: "FIXME: Only count external ones").
func (m *Module) countPPC64(opts Options) (*Counts, error) {
	f := m.f
	t, err := ppc64Count(m, opts.Generation)
	if err != nil {
		return nil, err
	}
	res := &Counts{Module: m.Name, Path: m.Path, Arch: m.arch.name, BigEndian: elfobj.BigEndian(f.Order), Mode: opts.Mode.String(),
		PLTCore: t.stubs, FixedPLTs: t.fixed}
	if opts.Mode == ModeOptimal {
		res.PLTCore = t.optimal
	}
	res.PLTSizeCore = uint64(res.PLTCore) * ppc64StubEntry
	for _, s := range t.sections {
		n := s.stubs
		if opts.Mode == ModeOptimal {
			n = s.firstSeen
		}
		sc := SectionCount{Name: s.name, Target: s.target, Relocs: s.relocs, Exec: s.exec,
			Region: m.arch.region(s.target, !opts.NoModuleUnload), Branches: s.branches, Undef: s.undef, Candidates: s.branches, PLT: n}
		res.Sections = append(res.Sections, sc)
		res.Totals.add(&sc)
	}
	return res, nil
}

// ppc64NoStubs is module_frob_arch_sections()'s refusal of a module
// without .stubs (one not built with the kernel's asm/module.h).
func ppc64NoStubs(m *Module) error {
	_, says := m.arch.missingPLTSection(m.f.HasSection)
	return fmt.Errorf("%s: %w: no .stubs section (the module loader says \"%s: %s\")", m.f.Name, ErrNoPLT, m.Name, says)
}

// ppc64Linker is one Link's stubs and TOC.
type ppc64Linker struct {
	t      *ppc64Tables
	stubs  *Placed
	byAddr map[uint64]int // stub_for_addr(): one stub per target address
	next   int            // the next free entry (me->arch.stub_count)
	r2     uint64         // my_r2()
	// kernelTOC is the kernel's r2 (its .TOC.), for the mprofile ftrace
	// stubs; 0: not known.
	kernelTOC uint64
}

// ppc64Setup finds .stubs and the TOC section once the module is laid
// out: my_r2() is the TOC section's address rounded down to 256 bytes,
// plus 0x8000 (.toc, or .stubs for a module without one).
func (l *linker) ppc64Setup(t *ppc64Tables) {
	s := &ppc64Linker{t: t, byAddr: map[uint64]int{}, stubs: l.placed[t.stubsSec.Index]}
	toc := s.stubs
	if t.tocSec != nil && l.placed[t.tocSec.Index] != nil {
		toc = l.placed[t.tocSec.Index]
	}
	if toc != nil {
		s.r2 = toc.Addr&^0xff + ppc64TOCBias
	}
	if l.opts.Kernel != nil {
		s.kernelTOC, _ = l.opts.Kernel(".TOC.")
	}
	l.img.PLTCoreMax = t.stubs
	l.ppc64 = s
}

// ppc64Finalize is module_finalize_ftrace(): the ftrace_caller and
// ftrace_regs_caller stubs, made after the module's relocations (and
// before livepatch's), when the kernel's symbols give them.
func (l *linker) ppc64Finalize() {
	if l.opts.Kernel == nil {
		return
	}
	for _, name := range []string{"ftrace_caller", "ftrace_regs_caller"} {
		if addr, ok := l.opts.Kernel(name); ok {
			_, _ = l.ppc64Stub(addr, name) // (failures show on the calls that need them)
		}
	}
	// setup_ftrace_ool_stubs() (7.2): the out-of-line ftrace stubs take
	// the next entries, which ftrace fills later; livepatch's stubs
	// come after them.
	l.ppc64.next += l.ppc64.t.ool
}

// ppc64MprofileCall is is_mprofile_ftrace_call() (CONFIG_MPROFILE_KERNEL
// with DYNAMIC_FTRACE_WITH_REGS).
func ppc64MprofileCall(name string) bool {
	return name == "_mcount" || name == "ftrace_caller" || name == "ftrace_regs_caller"
}

// ppc64Stub is stub_for_addr(): the stub for addr, made the first time
// (create_stub(), or create_ftrace_stub() for an mprofile call).
func (l *linker) ppc64Stub(addr uint64, name string) (uint64, error) {
	s := l.ppc64
	if s.stubs == nil {
		return 0, &RelocError{Kind: ErrNoPLT, Detail: "no .stubs section"}
	}
	if i, ok := s.byAddr[addr]; ok {
		return s.stubs.Addr + uint64(i)*ppc64StubEntry, nil
	}
	i := s.next
	// Up to 6.12 the last entry stays zero: stub_for_addr() searches
	// until a stub whose target is 0 (terminator).
	if i+s.t.terminator >= s.t.stubs || uint64(i+1)*ppc64StubEntry > uint64(len(s.stubs.Data)) {
		return 0, &RelocError{Kind: ErrPLTFull, Detail: fmt.Sprintf("all %d stubs in use", s.t.stubs-s.t.terminator)}
	}
	at := s.stubs.Addr + uint64(i)*ppc64StubEntry
	e := s.stubs.Data[uint64(i)*ppc64StubEntry:][:ppc64StubEntry]
	o := l.m.f.Order
	var rel uint64
	if ppc64MprofileCall(name) {
		// create_ftrace_stub(): relative to the kernel's TOC.
		if s.kernelTOC == 0 {
			return 0, &RelocError{Kind: ErrUnresolved, Detail: "the kernel's TOC (.TOC.) is not in its symbols (a System.map, or a CONFIG_KALLSYMS_ALL kallsyms, lists it): an mprofile " + name + " stub is relative to it"}
		}
		rel = addr - s.kernelTOC
		if int64(rel) != int64(int32(rel)) {
			return 0, rangeErr(rel, fmt.Sprintf("address of %s out of range of kernel_toc", name))
		}
		for k, insn := range ppc64FtraceInsns {
			o.PutUint32(e[4*k:], insn)
		}
		o.PutUint32(e[4:], ppc64FtraceInsns[1]|ppcHA(rel))
		o.PutUint32(e[8:], ppc64FtraceInsns[2]|ppcLO(rel))
	} else {
		// create_stub(): the stub relative to the module's r2.
		rel = at - s.r2
		if int64(rel) != int64(int32(rel)) {
			return 0, rangeErr(rel, fmt.Sprintf("stub %#x out of range of r2 %#x", at, s.r2))
		}
		for k, insn := range ppc64StubInsns {
			o.PutUint32(e[4*k:], insn)
		}
		o.PutUint32(e[0:], ppc64StubInsns[0]|ppcHA(rel))
		o.PutUint32(e[4:], ppc64StubInsns[1]|ppcLO(rel))
	}
	o.PutUint32(e[28:], ppc64StubMagic)
	o.PutUint64(e[32:], addr) // funcdata: func_desc(addr), the address itself on ELFv2
	s.byAddr[addr] = i
	s.next++
	l.img.PLTCoreUsed++
	return at, nil
}

// ppcHA and ppcLO are PPC_HA() and PPC_LO(): the high half adjusted for
// the low half's sign, and the low half.
func ppcHA(v uint64) uint32 { return uint32((v>>16)+(v>>15&1)) & 0xffff }
func ppcLO(v uint64) uint32 { return uint32(v) & 0xffff }

// ppc64LocalEntry is PPC64_LOCAL_ENTRY_OFFSET(st_other): how far a
// function's local entry point (past its TOC setup) is from its start.
func ppc64LocalEntry(other uint8) uint64 {
	return uint64(1<<(other>>5&7)) >> 2 << 2
}

// ppc64RestoreR2 is restore_r2(): after a call (a relative branch with
// the link bit) through a stub, the nop after it becomes ld r2,24(r1).
// An mprofile call (_mcount) and a sibling call (no link) are left alone.
// 6.1 refuses anything but a nop there; 6.12 and later also take the
// ld r2 itself.
func (l *linker) ppc64RestoreR2(rc *reloc, name string) error {
	if ppc64MprofileCall(name) {
		return nil
	}
	o := l.m.f.Order
	// instr_is_relative_link_branch(): I-form (b, opcode 18) or B-form
	// (bc, 16), not absolute, with LK. (The caller checked 4 bytes.)
	insn := o.Uint32(rc.loc)
	if op := insn >> 26; (op != 18 && op != 16) || insn&ppcBranchAA != 0 || insn&ppcBranchLK == 0 {
		return nil
	}
	if len(rc.loc) < 8 {
		return &RelocError{Kind: ErrBadTarget, Detail: "the call is the section's last instruction: no nop after it"}
	}
	next := o.Uint32(rc.loc[4:])
	if next == ppcLdTOC && l.opts.Generation > kgen.Linux6_1 {
		// 6.12 and later take an ld r2 already written: a livepatch
		// relocation applied again when its module loads again.
		return nil
	}
	if next != ppcNop {
		return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("expected nop after call, got %08x (the module loader says \"Expected nop after call\")", next)}
	}
	o.PutUint32(rc.loc[4:], ppcLdTOC)
	return nil
}

// ppc64Apply: apply_relocate_add() for ELFv2. Each case computes the
// value (S + A, "everything is relative"), range-checks it as the kernel
// does, and writes the field in the module's byte order.
func ppc64Apply(l *linker, rc *reloc) error {
	o := l.m.f.Order
	s := l.ppc64
	val := rc.S + uint64(rc.A)
	P := rc.P
	field16 := func(v uint64, mask uint16) error {
		if len(rc.loc) < 2 {
			return &RelocError{Kind: ErrBadTarget, Detail: "2 bytes needed"}
		}
		o.PutUint16(rc.loc, o.Uint16(rc.loc)&^mask|uint16(v)&mask)
		return nil
	}
	need := func(n int) error {
		if len(rc.loc) < n {
			return &RelocError{Kind: ErrBadTarget, Detail: fmt.Sprintf("%d bytes needed, %d left in the section", n, len(rc.loc))}
		}
		return nil
	}
	switch t := elf.R_PPC64(rc.r.Type); t {
	case elf.R_PPC64_ADDR32: // S + A, truncated: the kernel checks nothing
		if err := need(4); err != nil {
			return err
		}
		o.PutUint32(rc.loc, uint32(val))
	case elf.R_PPC64_ADDR64: // S + A
		if err := need(8); err != nil {
			return err
		}
		o.PutUint64(rc.loc, val)
	case elf.R_PPC64_TOC: // the module's r2
		if err := need(8); err != nil {
			return err
		}
		o.PutUint64(rc.loc, s.r2)
	case elf.R_PPC64_TOC16: // S + A - r2, 16 bits signed
		val -= s.r2
		if val+0x8000 > 0xffff {
			return rangeErr(val, "bad TOC16 relocation: more than 32 KiB from r2")
		}
		return field16(val, 0xffff)
	case elf.R_PPC64_TOC16_LO: // #lo(S + A - r2)
		return field16(val-s.r2, 0xffff)
	case elf.R_PPC64_TOC16_DS: // ld/std: S + A - r2, 16 bits signed, a multiple of 4
		val -= s.r2
		if val&3 != 0 || val+0x8000 > 0xffff {
			return rangeErr(val, "bad TOC16_DS relocation: more than 32 KiB from r2, or not a multiple of 4")
		}
		return field16(val, 0xfffc)
	case elf.R_PPC64_TOC16_LO_DS: // ld/std: #lo(S + A - r2), a multiple of 4
		val -= s.r2
		if val&3 != 0 {
			return rangeErr(val, "bad TOC16_LO_DS relocation: not a multiple of 4")
		}
		return field16(val, 0xfffc)
	case elf.R_PPC64_TOC16_HA: // addis: #ha(S + A - r2)
		return field16((val-s.r2+0x8000)>>16, 0xffff)
	case elf.R_PPC64_REL24: // bl/b: (S + A - P) >> 2 in 24 bits
		if err := need(4); err != nil {
			return err
		}
		sym := &l.m.f.Symbols[rc.r.Sym]
		if sym.Shndx == uint16(elf.SHN_UNDEF) || sym.Shndx == shnLivepatch {
			// External: through a stub, which the nop after the call
			// makes room to come back from (r2 restored).
			name := sym.Name
			if sym.Shndx == uint16(elf.SHN_UNDEF) {
				name, _ = l.m.arch.lookupName(name) // dedotify()
			}
			stub, err := l.ppc64Stub(val, name)
			if err != nil {
				return err
			}
			if err := l.ppc64RestoreR2(rc, name); err != nil {
				return err
			}
			val = stub
		} else {
			val += ppc64LocalEntry(sym.Other)
		}
		val -= P
		if val+0x2000000 > 0x3ffffff || val&3 != 0 {
			return rangeErr(val, "REL24 out of range: more than 32 MiB away, or not a multiple of 4")
		}
		o.PutUint32(rc.loc, o.Uint32(rc.loc)&^ppcLIMask|uint32(val)&ppcLIMask)
	case elf.R_PPC64_REL64: // S + A - P
		if err := need(8); err != nil {
			return err
		}
		o.PutUint64(rc.loc, val-P)
	case elf.R_PPC64_REL32: // S + A - P, 32 bits signed
		if err := need(4); err != nil {
			return err
		}
		val -= P
		if val+0x80000000 > 0xffffffff {
			return rangeErr(val, "REL32 out of range: more than 2 GiB away")
		}
		o.PutUint32(rc.loc, uint32(val))
	case elf.R_PPC64_TOCSAVE:
		// A marker: the kernel does not use it.
	case elf.R_PPC64_ENTRY:
		// The large code model's prologue, ld r2,x(r12); add r2,r2,r12,
		// becomes addis r2,r12,#ha(r2 - P); addi r2,r2,#lo(r2 - P)
		// when the TOC is within 2 GiB; anything else stays.
		val = s.r2 - P
		if val+0x80008000 > 0xffffffff || len(rc.loc) < 8 {
			return nil
		}
		if o.Uint32(rc.loc)&^0xfffc != ppcLdR2R12 || o.Uint32(rc.loc[4:]) != ppcAddR2R12 {
			return nil
		}
		o.PutUint32(rc.loc, ppcAddisR2|ppcHA(val))
		o.PutUint32(rc.loc[4:], ppcAddiR2|ppcLO(val))
	case elf.R_PPC64_REL16_HA: // addis: #ha(S + A - P)
		return field16((val-P+0x8000)>>16, 0xffff)
	case elf.R_PPC64_REL16_LO: // addi: #lo(S + A - P)
		return field16(val-P, 0xffff)
	default:
		// "Unknown ADD relocation"
		return &RelocError{Kind: ErrUnsupported}
	}
	return nil
}

// ppc64Frob is powerpc's module_frob_arch_sections(): .stubs gets
// get_stubs_size()'s size, and .toc an alignment of at least 8.
func ppc64Frob(m *Module, opts *LinkOptions, fr *frobbed) error {
	t, err := ppc64Count(m, opts.Generation)
	if err != nil {
		return err
	}
	fr.ppc64 = t
	fr.sizes[t.stubsSec.Index] = uint64(t.stubs) * ppc64StubEntry
	if t.tocSec != nil {
		fr.aligns[t.tocSec.Index] = 8
	}
	return nil
}
