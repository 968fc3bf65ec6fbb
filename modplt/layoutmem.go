// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"fmt"

	"github.com/klpresolve/klpresolve/kgen"
)

// MemType is a kind of module memory from Linux 6.4 on (enum
// mod_mem_type, include/linux/module.h): each is an allocation of its
// own, where 6.1 had one core and one init allocation.
type MemType uint8

// The kinds, in the enum's order, which is the order move_module()
// allocates them in.
const (
	MemText MemType = iota
	MemData
	MemRodata
	MemROAfterInit
	MemInitText
	MemInitData
	MemInitRodata
	memTypes
)

var memTypeNames = [memTypes]string{"MOD_TEXT", "MOD_DATA", "MOD_RODATA", "MOD_RO_AFTER_INIT", "MOD_INIT_TEXT", "MOD_INIT_DATA", "MOD_INIT_RODATA"}

func (t MemType) String() string {
	if t < memTypes {
		return memTypeNames[t]
	}
	return fmt.Sprintf("MemType(%d)", t)
}

// MarshalText names the kind as the kernel does (MOD_TEXT).
func (t MemType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Init: mod_mem_type_is_init().
func (t MemType) Init() bool { return t >= MemInitText }

// memTypeOf is __layout_sections()'s type for a section that pass i of
// layoutMasks takes (code, read-only, ro-after-init, writable), in core
// or in init; ok is false for MOD_INVALID (an init section marked
// ro-after-init, which the kernel warns of and does not lay out).
func memTypeOf(pass int, init bool) (t MemType, ok bool) {
	core := [...]MemType{MemText, MemRodata, MemROAfterInit, MemData}
	initT := [...]MemType{MemInitText, MemInitRodata, 0, MemInitData}
	if !init {
		return core[pass], true
	}
	return initT[pass], pass != 2
}

// memLayout is kernel/module/main.c's layout_sections() from Linux 6.4
// on (6.12, 7.2; g): each section, in section-header order per pass of
// layoutMasks, is appended to its type's block (module_get_offset_and_type():
// ALIGN(size, sh_addralign)); the blocks have no padding inside, and
// layout_symtab() appends to MOD_DATA the symbols kallsyms keeps
// (coreKallsymsEnd) and to MOD_INIT_DATA the whole symbol and string
// tables, a struct mod_kallsyms and a type byte a symbol. move_module()
// then allocates each block that is not empty, in the enum's order,
// whole pages each: vmalloc puts each past the previous one and its
// guard page (bases overrides where a block goes: a booted kernel's
// vmalloc may reuse freed space). s390's GOT and PLT (reserve) open
// MOD_TEXT. The returned size is the core blocks' pages, as
// /proc/modules counts them, and end where the last block's pages end.
func (m *Module) memLayout(g kgen.Generation, base, initBase, page, reserve uint64, sizes, aligns map[int]uint64, flagsOf map[int]elf.SectionFlag, at map[string]uint64, unload, kallsymsAll bool, bases map[MemType]uint64) (out []*Placed, coreSize, end uint64, err error) {
	f := m.f
	placed := make([]*Placed, len(f.Sections))
	var off [memTypes]uint64
	var typeOf []MemType
	off[MemText] = reserve
	for pass, mask := range layoutMasks {
		for i := range f.Sections {
			s := &f.Sections[i]
			flags, mapped := m.loaderFlags(i, g, flagsOf)
			if !mapped || placed[i] != nil || flags&mask[0] != mask[0] || flags&mask[1] != 0 {
				continue
			}
			t, ok := memTypeOf(pass, m.arch.region(s.Name, unload) == Init)
			if !ok {
				continue
			}
			size, align, err := m.extent(i, sizes, aligns)
			if err != nil {
				return nil, 0, 0, err
			}
			o := (off[t] + align - 1) &^ (align - 1)
			p := &Placed{Index: i, Name: s.Name, Region: Core, Addr: o, Size: size, Align: align, Flags: flags, Mem: t}
			if t.Init() {
				p.Region = Init
			}
			m.contents(p, sizes)
			placed[i] = p
			out = append(out, p)
			typeOf = append(typeOf, t)
			off[t] = o + size
		}
	}
	// layout_symtab(): what kallsyms keeps goes after MOD_DATA's
	// sections, the whole table after MOD_INIT_DATA's.
	off[MemData] = m.coreKallsyms(off[MemData], placed, kallsymsAll)
	off[MemInitData] = m.initKallsyms(off[MemInitData])

	// move_module(): one allocation a type, whole pages, in order, each
	// where its chain (execmemChain) has room next.
	var blockBase [memTypes]uint64
	rox := roxTextCache(g, m.arch.machine)
	var next [2]uint64
	next[0] = base
	next[1] = base
	if rox {
		// The first ROX cache chunk is at base; vmalloc puts the data
		// after it and its guard page.
		next[1] = base&^(roxChunk-1) + roxChunk + page
	}
	initStarted := false
	top := addressTop(f.Class)
	for t := range memTypes {
		if off[t] == 0 {
			continue
		}
		c, guard := execmemChain(t, rox)
		if t.Init() && !initStarted {
			initStarted = true
			if initBase != 0 {
				next[c] = initBase
			}
		}
		b := next[c]
		if v, ok := bases[t]; ok && v != 0 {
			b = v
		}
		if b%page != 0 {
			return nil, 0, 0, fmt.Errorf("%s: %w: %s at %#x is not on a %d-byte page", f.Name, ErrBadBase, t, b, page)
		}
		pages := (off[t] + page - 1) &^ (page - 1)
		if b > top || pages > top-b || page > top-b-pages {
			return nil, 0, 0, fmt.Errorf("%s: %w: %s at %#x, %#x bytes, runs past the end of the address space (%#x)", f.Name, ErrBadBase, t, b, pages, top)
		}
		blockBase[t] = b
		next[c] = b + pages
		if guard {
			next[c] += page // vmalloc's guard page
		}
		end = max(end, b+pages)
		if !t.Init() {
			coreSize += pages
		}
	}
	if !rox {
		end = max(end, next[0]-page)
	}
	for k, p := range out {
		p.Addr += blockBase[typeOf[k]]
		if a, ok := at[p.Name]; ok {
			p.Addr = a
		}
	}
	return out, coreSize, end, nil
}

// coreKallsyms is where MOD_DATA ends once layout_symtab() has appended
// the symbols kallsyms keeps after init (coreKallsymsEnd's count) to its
// sections, which end at off.
func (m *Module) coreKallsyms(off uint64, placed []*Placed, all bool) uint64 {
	f := m.f
	if f.Symtab == 0 {
		return off
	}
	n, names := m.keptSymbols(placed, all)
	align := max(f.Sections[f.Symtab].Addralign, 1)
	return (off+align-1)&^(align-1) + n*uint64(f.SymEntSize()) + names + n
}

// initKallsyms is where MOD_INIT_DATA ends once layout_symtab() has
// appended the whole symbol table, its strings, the temporary struct
// mod_kallsyms and a type byte a symbol, to its sections, which end at
// off.
func (m *Module) initKallsyms(off uint64) uint64 {
	f := m.f
	if f.Symtab == 0 {
		return off
	}
	sym := &f.Sections[f.Symtab]
	align := max(sym.Addralign, 1)
	off = (off+align-1)&^(align-1) + sym.Size
	if int(sym.Link) < len(f.Sections) {
		str := &f.Sections[sym.Link]
		salign := max(str.Addralign, 1)
		off = (off+salign-1)&^(salign-1) + str.Size
	}
	// struct mod_kallsyms: a symbol table pointer, its count, the string
	// and type table pointers.
	word := uint64(8)
	if f.Class == elf.ELFCLASS32 {
		word = 4
	}
	off = (off+word-1)&^(word-1) + 4*word
	return off + uint64(len(f.Symbols))
}

// roxChunk is what x86's ROX cache allocates from vmalloc at a time
// (execmem_cache_populate_alloc(): PMD_SIZE).
const roxChunk = 2 << 20

// roxTextCache: the kernel carves module text out of a cache of
// read-only executable huge pages (EXECMEM_ROX_CACHE: x86_64 from 7.x,
// with CONFIG_STRICT_MODULE_RWX and PSE, which Debian's kernels and qemu
// have), not from vmalloc.
func roxTextCache(g kgen.Generation, machine elf.Machine) bool {
	return g >= kgen.Linux7_2 && machine == elf.EM_X86_64
}

// execmemChain is where a kind of module memory is allocated
// (execmem_alloc_rw()): chain 0, or, for the ROX cache's text, chain 1
// for the rest; and whether vmalloc leaves a guard page after it. The
// ROX cache hands out whole pages one after another, first fit
// (execmem_cache_alloc_locked()), with no guard page between them.
func execmemChain(t MemType, rox bool) (chain int, guard bool) {
	text := t == MemText || t == MemInitText
	switch {
	case !rox:
		return 0, true
	case text:
		return 0, false
	}
	return 1, true
}

// usesMemTypes: a kernel of generation g lays modules out by type (6.4
// and later).
func usesMemTypes(g kgen.Generation) bool { return g > kgen.Linux6_1 }
