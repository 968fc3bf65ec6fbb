// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"cmp"
	"debug/elf"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Func is a function the patch replaces: a klp_func's old_name and
// old_sympos, in its klp_object (or a kpatch_patch_func's name, sympos and
// objname). When its object is loaded the kernel looks it up with
// klp_find_object_symbol(), as it does a livepatch symbol, and a failure
// fails the whole patch (klp_init_object_loaded()).
type Func struct {
	Index  int // in the order the module declares them
	Name   string
	Object string // "vmlinux" or a module's name
	Pos    uint64
	// Section and Offset are where the module declares it: its struct.
	Section string
	Offset  uint64
	// Err is set when the kernel refuses the function whatever the
	// kernel's symbols: klp_init_func() and klp_init_object() checks.
	Err *CheckError
}

// Callback is a function livepatch calls around patching an object
// (struct klp_callbacks).
type Callback struct {
	Object string // "vmlinux" or a module's name
	// When is the struct klp_callbacks field: "pre_patch", "post_patch",
	// "pre_unpatch" or "post_unpatch".
	When string
	Func string // the module's function, by its symbol's name
}

// callbackFields are struct klp_callbacks' pointers, in its order.
var callbackFields = []string{"pre_patch", "post_patch", "pre_unpatch", "post_unpatch"}

// FuncSource says where a module declares the functions it patches.
type FuncSource string

const (
	// FuncsNone: no declaration found (a module that builds its
	// klp_patch at run time, or one that patches nothing).
	FuncsNone FuncSource = ""
	// FuncsKpatch: .kpatch.funcs, kpatch-build's struct
	// kpatch_patch_func array (legacy kpatch modules, and the livepatch
	// modules whose patch hook builds the klp_patch from it).
	FuncsKpatch FuncSource = ".kpatch.funcs"
	// FuncsKlpBuild: .init.klp_objects and .init.klp_funcs, the struct
	// klp_object_ext and klp_func_ext arrays that objtool's klp-build
	// writes (Linux 6.19 and later).
	FuncsKlpBuild FuncSource = ".init.klp_funcs"
	// FuncsStatic: a struct klp_patch in the module's data, with its
	// klp_object and klp_func arrays (samples/livepatch, hand-written
	// modules), found by its shape: see readStaticPatch.
	FuncsStatic FuncSource = "klp_patch"
)

// checkFuncs marks what klp_init_object() and klp_init_func() refuse
// whatever the kernel: a name of KSYM_NAME_LEN bytes or more, a module
// name of MODULE_NAME_LEN or more, and two objects, or two functions of
// one object, with the same sysfs name (kobject_add() fails with -EEXIST:
// an object's directory is its name, a function's "<name>,<sympos or 1>",
// so sympos 0 and 1 of one name collide). A module name with a dash never
// loads (ErrNeverLoads).
func checkFuncs(fs []Func, static bool) {
	seen := map[string]bool{}
	for i := range fs {
		fn := &fs[i]
		pos := max(fn.Pos, 1)
		key := fmt.Sprintf("%s/%s,%d", fn.Object, fn.Name, pos)
		switch {
		case fn.Err != nil: // found while reading (namedVmlinux)
		case len(fn.Name) > SymbolNameMax:
			fn.Err = &CheckError{Kind: ErrNameTooLong, Hint: fmt.Sprintf("the function's name is %d bytes, longer than KSYM_NAME_LEN-1 (%d): klp_init_func() fails with -EINVAL", len(fn.Name), SymbolNameMax)}
		case fn.Object != kallsyms.Vmlinux && len(fn.Object) > ModuleNameMax:
			fn.Err = &CheckError{Kind: ErrNameTooLong, Hint: fmt.Sprintf("the object's name is %d bytes, longer than MODULE_NAME_LEN-1 (%d): klp_init_object() fails with -EINVAL", len(fn.Object), ModuleNameMax)}
		case neverLoads(fn.Object):
			fn.Err = neverLoadsError(fn.Object)
		case seen[key]:
			fn.Err = &CheckError{Kind: ErrDuplicate,
				Kernel: fmt.Sprintf("kobject_add_internal failed for %s,%d with -EEXIST, don't try to register things with the same name in the same directory.", fn.Name, pos),
				Hint:   fmt.Sprintf("%s patches %s,%d twice (sysfs names a function %s,<sympos or 1>, so positions 0 and 1 are one name): klp_init_func() fails, and the patch with it", fn.Object, fn.Name, pos, fn.Name)}
		}
		seen[key] = true
	}
	if !static {
		return
	}
	// A static klp_patch's objects are its own entries: two with one name
	// collide in sysfs (the other sources group functions by object).
	var objs []string
	last := ""
	for i, fn := range fs {
		if i > 0 && fn.Object == last {
			continue
		}
		last = fn.Object
		if slices.Contains(objs, fn.Object) && fs[i].Err == nil {
			fs[i].Err = &CheckError{Kind: ErrDuplicate,
				Kernel: fmt.Sprintf("kobject_add_internal failed for %s with -EEXIST, don't try to register things with the same name in the same directory.", fn.Object),
				Hint:   fmt.Sprintf("the klp_patch has two klp_objects for %s: klp_init_object() fails, and the patch with it; put their functions in one", fn.Object)}
		}
		objs = append(objs, fn.Object)
	}
}

// namedVmlinux is the error of a klp_object whose name is the string
// "vmlinux": livepatch takes an object with a name for a module
// (klp_is_module() tests the pointer), and no module can be called
// vmlinux ("vmlinux.ko: invalid module name"), so its functions would wait
// forever, silently. vmlinux's object leaves its name NULL.
func namedVmlinux(name string, named bool) *CheckError {
	if !named || name != kallsyms.Vmlinux {
		return nil
	}
	return &CheckError{Kind: ErrNeverLoads, // the kernel says nothing
		Hint: `the klp_object's name is the string "vmlinux": livepatch takes an object with a name for a module, and waits for a module called vmlinux, which cannot load ("vmlinux.ko: invalid module name"); vmlinux's klp_object leaves name NULL`}
}

// dataRelocs indexes a module's relocations by the section they apply to
// and their offset, for reading the structs its data declares (kpatch's,
// klp-build's, a static klp_patch). A section's are decoded on first use.
type dataRelocs struct {
	m *Module
	w uint64 // pointer size
	// relSecs are the module's ordinary relocation sections grouped by
	// target: section t's are relSecs[relStart[t]:relStart[t+1]] (one
	// allocation, not one per target).
	relSecs  []int
	relStart []int32
	rel      map[int]map[uint64]elfobj.Reloc
	// sizes are the sizes of the module's sized data objects, by
	// section and offset (made on first use).
	sizes map[[2]uint64]uint64
	// For readStaticPatch: each section's relocation offsets in order,
	// the klp_func arrays read, and how many more relocations it may
	// look at (64 per relocation of the module's data).
	sorted map[int][]uint64
	memo   map[[2]uint64]funcArray
	budget int
}

type funcArray struct {
	funcs []Func
	ok    bool
}

func (m *Module) newDataRelocs() *dataRelocs {
	f := m.elf
	d := &dataRelocs{m: m, w: 4, rel: map[int]map[uint64]elfobj.Reloc{},
		sorted: map[int][]uint64{}, memo: map[[2]uint64]funcArray{}}
	if f.Is64() {
		d.w = 8
	}
	ordinary := func(s *elfobj.Section) bool {
		return elfobj.IsReloc(s) && s.Info != 0 && int(s.Info) < len(f.Sections) && s.Flags&SHFRelaLivepatch == 0
	}
	d.relStart = make([]int32, len(f.Sections)+1)
	for i := range f.Sections {
		if s := &f.Sections[i]; ordinary(s) {
			d.relStart[s.Info+1]++
		}
	}
	for t := 1; t < len(d.relStart); t++ {
		d.relStart[t] += d.relStart[t-1]
	}
	d.relSecs = make([]int, d.relStart[len(f.Sections)])
	next := slices.Clone(d.relStart[:len(f.Sections)])
	for i := range f.Sections {
		s := &f.Sections[i]
		if !ordinary(s) {
			continue
		}
		d.relSecs[next[s.Info]] = i
		next[s.Info]++
		if isData(&f.Sections[s.Info]) {
			d.budget += 64 * (len(f.SectionData(s)) / f.RelocEntSize(s.Type == elf.SHT_RELA))
		}
	}
	return d
}

// relocSections are the ordinary relocation sections that apply to
// section sec, in section order.
func (d *dataRelocs) relocSections(sec int) []int {
	if sec < 0 || sec+1 >= len(d.relStart) {
		return nil
	}
	return d.relSecs[d.relStart[sec]:d.relStart[sec+1]]
}

// isData: an allocated section that is neither code nor NOBITS, where a
// module's structs are.
func isData(t *elfobj.Section) bool {
	return t.Flags&elf.SHF_ALLOC != 0 && t.Flags&elf.SHF_EXECINSTR == 0 && t.Type != elf.SHT_NOBITS
}

// relocsOf returns the relocations that apply to section sec, by offset
// (a REL entry's addend read from its place).
func (d *dataRelocs) relocsOf(sec int) (map[uint64]elfobj.Reloc, error) {
	if byOff, ok := d.rel[sec]; ok {
		return byOff, nil
	}
	f := d.m.elf
	byOff := map[uint64]elfobj.Reloc{}
	tdata := f.SectionData(&f.Sections[sec])
	for _, i := range d.relocSections(sec) {
		s := &f.Sections[i]
		rs, err := f.Relocs(s)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if s.Type == elf.SHT_REL && r.Offset <= uint64(len(tdata)) && uint64(len(tdata))-r.Offset >= d.w {
				r.Addend = int64(d.word(tdata[r.Offset:])) // REL: the addend is in place
				if d.w == 4 {
					r.Addend = int64(int32(r.Addend))
				}
			}
			byOff[r.Offset] = r
		}
	}
	d.rel[sec] = byOff
	return byOff, nil
}

// relocsOrNone is relocsOf for the shape searches, where a section whose
// relocations do not decode holds nothing they can use.
func (d *dataRelocs) relocsOrNone(sec int) map[uint64]elfobj.Reloc {
	byOff, err := d.relocsOf(sec)
	if err != nil {
		return nil
	}
	return byOff
}

func (d *dataRelocs) word(b []byte) uint64 {
	if d.w == 8 {
		return d.m.elf.Order.Uint64(b)
	}
	return uint64(d.m.elf.Order.Uint32(b))
}

// at returns the relocation at sec+off, if any.
func (d *dataRelocs) at(sec int, off uint64) (elfobj.Reloc, bool) {
	r, ok := d.relocsOrNone(sec)[off]
	return r, ok
}

// target is where a pointer relocation points: its symbol's section and
// the offset in it (ok false for an undefined or absolute symbol).
func (d *dataRelocs) target(r elfobj.Reloc) (sec int, off uint64, ok bool) {
	f := d.m.elf
	sym := &f.Symbols[r.Sym]
	if sym.Shndx == uint16(elf.SHN_UNDEF) || int(sym.Shndx) >= len(f.Sections) {
		return 0, 0, false
	}
	return int(sym.Shndx), sym.Value + uint64(r.Addend), true
}

// pointsTo reports whether r points into an allocated section whose
// executable flag is exec.
func (d *dataRelocs) pointsTo(r elfobj.Reloc, exec bool) (sec int, off uint64, ok bool) {
	sec, off, ok = d.target(r)
	if !ok {
		return 0, 0, false
	}
	s := &d.m.elf.Sections[sec]
	if s.Flags&elf.SHF_ALLOC == 0 || (s.Flags&elf.SHF_EXECINSTR != 0) != exec {
		return 0, 0, false
	}
	return sec, off, true
}

// str reads the string r points to.
func (d *dataRelocs) str(r elfobj.Reloc, sec int) (string, error) {
	return d.m.relocString(r, d.m.elf.Sections[sec].Name)
}

// wordAt reads the word at sec+off (0 past the section's data).
func (d *dataRelocs) wordAt(sec int, off uint64) uint64 {
	data := d.m.elf.SectionData(&d.m.elf.Sections[sec])
	if off+d.w > uint64(len(data)) || off+d.w < off {
		return 0
	}
	return d.word(data[off:])
}

// arraySize is the size of the array that starts at sec+off, from the
// symbol that names it (an STT_OBJECT with its size; gcc refers to static
// arrays through the section symbol, but keeps theirs).
func (d *dataRelocs) arraySize(sec int, off uint64) (uint64, bool) {
	if d.sizes == nil {
		d.sizes = map[[2]uint64]uint64{}
		for i := range d.m.elf.Symbols {
			s := &d.m.elf.Symbols[i]
			if s.Type() == elf.STT_OBJECT && s.Size > 0 {
				d.sizes[[2]uint64{uint64(s.Shndx), s.Value}] = s.Size
			}
		}
	}
	size, ok := d.sizes[[2]uint64{uint64(sec), off}]
	// An array lies within its section's data (or its size, for a
	// zeroed array that the compiler put in .bss).
	n := uint64(len(d.m.elf.SectionData(&d.m.elf.Sections[sec])))
	if s := &d.m.elf.Sections[sec]; s.Type == elf.SHT_NOBITS {
		n = s.Size
	}
	if !ok || off > n || size > n-off {
		return 0, false
	}
	return size, true
}

func (d *dataRelocs) secName(sec int) string { return d.m.elf.Sections[sec].Name }

// readKlpBuild reads the functions of a module that objtool's klp-build
// made (include/linux/livepatch_external.h): .init.klp_objects holds
// struct klp_object_ext { const char *name; struct klp_func_ext *funcs;
// ... }, and .init.klp_funcs struct klp_func_ext { const char *old_name;
// void *new_func; unsigned long sympos; }, three words. An object's
// functions run from where its funcs points to the next object's (or the
// section's end), which does not depend on the layout of the rest of
// klp_object_ext (its callbacks come and go between versions).
func (m *Module) readKlpBuild(d *dataRelocs) ([]Func, []string, []Callback, error) {
	f := m.elf
	objs, funcs := f.SectionByName(".init.klp_objects"), f.SectionByName(".init.klp_funcs")
	if objs == nil || funcs == nil {
		return nil, nil, nil, nil
	}
	type object struct {
		name  string
		named bool   // name is a string, not NULL
		start uint64 // its first function's offset in .init.klp_funcs
		at    uint64 // its own offset in .init.klp_objects
	}
	var list []object
	orel, err := d.relocsOf(objs.Index)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := d.relocsOf(funcs.Index); err != nil {
		return nil, nil, nil, err
	}
	offs := make([]uint64, 0, len(orel))
	for off := range orel {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	for _, off := range offs {
		r := orel[off]
		sec, start, ok := d.target(r)
		if !ok || sec != funcs.Index || off < d.w {
			continue // a callback, or the name
		}
		o := object{name: kallsyms.Vmlinux, start: start, at: off - d.w}
		if nr, ok := d.at(objs.Index, off-d.w); ok {
			s, err := d.str(nr, objs.Index)
			if err != nil {
				return nil, nil, nil, err
			}
			o.name, o.named = s, true
		}
		list = append(list, o)
	}
	// An object's functions end where the next one's (in the section)
	// begin; they are listed in the objects' order.
	starts := make([]uint64, 0, len(list))
	for _, o := range list {
		starts = append(starts, o.start)
	}
	slices.Sort(starts)
	stride := 3 * d.w
	var out []Func
	for _, o := range list {
		end := uint64(len(f.SectionData(funcs)))
		if i, _ := slices.BinarySearch(starts, o.start+1); i < len(starts) {
			end = starts[i]
		}
		for off := o.start; off+stride <= end; off += stride {
			r, ok := d.at(funcs.Index, off)
			if !ok {
				return nil, nil, nil, &elfobj.FormatError{File: m.Path, Section: funcs.Name, Msg: fmt.Sprintf("klp_func_ext at %#x has no old_name", off)}
			}
			name, err := d.str(r, funcs.Index)
			if err != nil {
				return nil, nil, nil, err
			}
			out = append(out, Func{Index: len(out), Name: name, Object: o.name, Pos: d.wordAt(funcs.Index, off+2*d.w), Section: funcs.Name, Offset: off,
				Err: namedVmlinux(o.name, o.named)})
		}
	}
	names := make([]string, len(list))
	var cbs []Callback
	for i, o := range list {
		names[i] = o.name
		// struct klp_object_ext: name, funcs, then struct klp_callbacks
		for k, when := range callbackFields {
			if r, ok := d.at(objs.Index, o.at+uint64(2+k)*d.w); ok {
				cbs = append(cbs, Callback{Object: o.name, When: when, Func: d.funcName(r)})
			}
		}
	}
	return out, names, cbs, nil
}

// funcName names the function a code pointer r points to: its symbol,
// or for a section symbol the function at that offset of the section.
func (d *dataRelocs) funcName(r elfobj.Reloc) string {
	f := d.m.elf
	sym := &f.Symbols[r.Sym]
	if sym.Type() != elf.STT_SECTION {
		return sym.Name
	}
	sec, off, ok := d.target(r)
	if ok {
		for i := range f.Symbols {
			if s := &f.Symbols[i]; s.Type() == elf.STT_FUNC && int(s.Shndx) == sec && s.Value == off {
				return s.Name
			}
		}
	}
	return fmt.Sprintf("%s+%#x", d.secName(sec), off)
}

// readStaticPatch finds a static struct klp_patch in the module's data and
// reads its objects' functions. Only the leading, "external" fields of the
// structs are read, which every kernel since 4.x lays out alike:
//
//	struct klp_patch  { struct module *mod; struct klp_object *objs; ... }
//	struct klp_object { const char *name; struct klp_func *funcs; ... }
//	struct klp_func   { const char *old_name; void *new_func; unsigned long old_sympos; ... }
//
// The rest (kobjects, lists) depends on the kernel's configuration, so
// the arrays' strides come from their symbols' sizes: each array ends
// with a zeroed entry, so a stride is the size over the entries plus one.
// A klp_patch is a pointer to __this_module (THIS_MODULE) followed by one
// to data whose entries point, one word in, to arrays of (string, code)
// pointer pairs; a struct file_operations, whose owner is also
// THIS_MODULE, is followed by a function pointer instead.
func (m *Module) readStaticPatch(d *dataRelocs) ([]Func, []string) {
	f := m.elf
	for sec := range f.Sections {
		if !isData(&f.Sections[sec]) || len(d.relocSections(sec)) == 0 {
			continue
		}
		rel := d.relocsOrNone(sec)
		offs := make([]uint64, 0, len(rel))
		for off, r := range rel {
			if f.Symbols[r.Sym].Name == "__this_module" {
				offs = append(offs, off)
			}
		}
		slices.Sort(offs)
		for _, off := range offs {
			or, ok := d.at(sec, off+d.w)
			if !ok {
				continue
			}
			osec, ooff, ok := d.pointsTo(or, false)
			if !ok {
				continue
			}
			if fs, objs, ok := d.readObjects(osec, ooff); ok {
				return fs, objs
			}
		}
	}
	return nil, nil
}

// readObjects reads a klp_object array at sec+off (see readStaticPatch);
// ok is false when it is not one.
func (d *dataRelocs) readObjects(sec int, off uint64) (out []Func, objs []string, ok bool) {
	size, sized := d.arraySize(sec, off)
	if !sized {
		return nil, nil, false
	}
	// The objects' funcs fields: pointers, one word into an entry, to
	// arrays that read as klp_func arrays.
	type entry struct {
		at    uint64
		funcs []Func
	}
	var entries []entry
	for _, o := range d.offsetsIn(sec, off+d.w, off+size) {
		fsec, foff, ok := d.pointsTo(d.relocsOrNone(sec)[o], false)
		if !ok {
			continue
		}
		if fs, ok := d.readFuncArray(fsec, foff); ok {
			entries = append(entries, entry{o - d.w, fs})
		}
	}
	n := uint64(len(entries))
	if n == 0 || entries[0].at != off || size%(n+1) != 0 {
		return nil, nil, false
	}
	stride := size / (n + 1)
	for i, e := range entries {
		if e.at != off+uint64(i)*stride {
			return nil, nil, false
		}
	}
	for _, e := range entries {
		name, named := kallsyms.Vmlinux, false // "name being NULL means vmlinux"
		if r, ok := d.at(sec, e.at); ok {
			s, err := d.str(r, sec)
			if err != nil {
				return nil, nil, false
			}
			name, named = s, true
		}
		objs = append(objs, name)
		for _, fn := range e.funcs {
			fn.Index, fn.Object, fn.Err = len(out), name, namedVmlinux(name, named)
			out = append(out, fn)
		}
	}
	return out, objs, true
}

// readFuncArray reads a klp_func array at sec+off: entries of a string
// pointer and a code pointer (old_name, new_func), then old_sympos, at a
// stride that the array's size gives, up to the zeroed last entry. ok is
// false when it is not one. Each array is read once (memo), and all of
// them together look at no more entries than a budget the module's
// relocations set, however its symbols overlap.
func (d *dataRelocs) readFuncArray(sec int, off uint64) ([]Func, bool) {
	key := [2]uint64{uint64(sec), off}
	if a, ok := d.memo[key]; ok {
		return a.funcs, a.ok
	}
	fs, ok := d.readFuncArrayOnce(sec, off)
	d.memo[key] = funcArray{fs, ok}
	return fs, ok
}

func (d *dataRelocs) readFuncArrayOnce(sec int, off uint64) ([]Func, bool) {
	size, sized := d.arraySize(sec, off)
	if !sized || size < 3*d.w {
		return nil, false
	}
	isEntry := func(o uint64) bool {
		n, _ := d.at(sec, o)
		if _, _, ok := d.pointsTo(n, false); !ok {
			return false
		}
		c, ok := d.at(sec, o+d.w)
		if !ok {
			return false
		}
		_, _, ok = d.pointsTo(c, true)
		return ok
	}
	var starts []uint64
	for _, o := range d.offsetsIn(sec, off, off+size-2*d.w+1) {
		if isEntry(o) {
			starts = append(starts, o)
		}
	}
	n := uint64(len(starts))
	if n == 0 {
		// An object that patches no function (klp_enable_patch() wants
		// funcs set, not filled): a zeroed array, the terminator alone.
		return nil, len(d.offsetsIn(sec, off, off+size)) == 0
	}
	if starts[0] != off || size%(n+1) != 0 || size/(n+1) < 3*d.w {
		return nil, false
	}
	stride := size / (n + 1)
	var out []Func
	for i, o := range starts {
		if o != off+uint64(i)*stride {
			return nil, false
		}
		r, _ := d.at(sec, o)
		name, err := d.str(r, sec)
		if err != nil {
			return nil, false
		}
		out = append(out, Func{Name: name, Pos: d.wordAt(sec, o+2*d.w), Section: d.secName(sec), Offset: o})
	}
	return out, true
}

// offsetsIn returns the offsets of sec's relocations in [from, to), in
// order, charging them to the budget (nil once it is spent).
func (d *dataRelocs) offsetsIn(sec int, from, to uint64) []uint64 {
	offs, ok := d.sorted[sec]
	if !ok {
		for o := range d.relocsOrNone(sec) {
			offs = append(offs, o)
		}
		slices.Sort(offs)
		d.sorted[sec] = offs
	}
	i, _ := slices.BinarySearch(offs, from)
	j, _ := slices.BinarySearch(offs, to)
	if j < i {
		return nil
	}
	if d.budget < j-i {
		d.budget = 0
		return nil
	}
	d.budget -= j - i
	return offs[i:j]
}

// readFuncs finds the functions the module patches, when kpatch's
// .kpatch.funcs did not give them: klp-build's sections, else, in a
// livepatch module, a static klp_patch.
func (m *Module) readFuncs(d *dataRelocs) error {
	if m.FuncSource != FuncsNone {
		return nil
	}
	f := m.elf
	klpBuild := f.SectionByName(".init.klp_funcs") != nil
	if !klpBuild && !m.marked && len(m.Sections) == 0 && !m.callsKlpEnablePatch() {
		return nil // not a livepatch module: its data is not searched
	}
	var err error
	if klpBuild {
		if m.Funcs, m.Objects, m.Callbacks, err = m.readKlpBuild(d); err != nil {
			return err
		}
		m.FuncSource = FuncsKlpBuild
		return nil
	}
	if m.Funcs, m.Objects = m.readStaticPatch(d); m.Objects != nil {
		m.FuncSource = FuncsStatic
	}
	return nil
}

// kpatchCallbacks reads kpatch-build's callbacks: each
// .kpatch.callbacks.WHEN section is an array of struct
// kpatch_WHEN_callback { callback; objname } (NULL objname: vmlinux).
// ok is false when a section does not read so.
func (m *Module) kpatchCallbacks(d *dataRelocs) (cbs []Callback, ok bool) {
	for i := range m.elf.Sections {
		s := &m.elf.Sections[i]
		if !strings.HasPrefix(s.Name, ".kpatch.callbacks.") || s.Type == elf.SHT_NOBITS {
			continue
		}
		rel, err := d.relocsOf(s.Index)
		if err != nil {
			return nil, false
		}
		when := strings.TrimPrefix(s.Name, ".kpatch.callbacks.")
		for _, x := range sortedRelocs(rel) {
			if x.Offset%(2*d.w) != 0 {
				continue // an objname: read with its callback
			}
			o := kallsyms.Vmlinux
			if n, named := rel[x.Offset+d.w]; named {
				if o, err = m.relocString(n, s.Name); err != nil {
					return nil, false
				}
			}
			cbs = append(cbs, Callback{Object: o, When: when, Func: d.funcName(x)})
		}
	}
	return cbs, true
}

// kpatchObjects are the klp_objects that kpatch-build's livepatch hook
// (kmod/patch/livepatch-patch-hook.c, patch_init()) makes at run time:
// one per object of .kpatch.funcs and of the callbacks
// (add_callbacks_to_patch_objects(), vmlinux's for a NULL objname), in
// that order.
func kpatchObjects(funcs []Func, cbs []Callback) []string {
	var objs []string
	add := func(o string) {
		if !slices.Contains(objs, o) {
			objs = append(objs, o)
		}
	}
	for _, fn := range funcs {
		add(fn.Object)
	}
	for _, c := range cbs {
		add(c.Object)
	}
	return objs
}

// callsKlpEnablePatch reports whether the module refers to
// klp_enable_patch(), as a patch module's init does: one that is not
// marked livepatch is a patch module all the same (checkMarked).
func (m *Module) callsKlpEnablePatch() bool {
	for i := range m.elf.Symbols {
		if s := &m.elf.Symbols[i]; s.Name == "klp_enable_patch" && s.Shndx == uint16(elf.SHN_UNDEF) {
			return true
		}
	}
	return false
}

// checkObjects marks the .klp.rela sections of modules the patch declares
// no klp_object for, when its objects are known (Objects): livepatch
// applies a module's sections only while it initializes one of the
// patch's objects (klp_init_object_loaded() calls
// klp_apply_object_relocs() for klp_objects alone), so theirs are never
// applied, and the patched code would use what the relocations left in
// place (zero, plus the addend). vmlinux's are applied at load, whatever
// the objects.
func (m *Module) checkObjects(d *dataRelocs) {
	if m.FuncSource == FuncsKpatch {
		cbs, ok := m.kpatchCallbacks(d)
		m.Callbacks = cbs
		// (a livepatch module of kpatch-build's, relocations or none;
		// a legacy kpatch module has no klp_objects)
		if ok && m.Objects == nil && m.Format != FormatKpatch {
			m.Objects = kpatchObjects(m.Funcs, cbs)
		}
	}
	if m.Objects == nil {
		return
	}
	for _, s := range m.Sections {
		if s.Err == nil && s.Object != kallsyms.Vmlinux && !slices.Contains(m.Objects, s.Object) {
			s.Err = &CheckError{Kind: ErrObjectNotInPatch, // the kernel says nothing
				Hint: fmt.Sprintf("the patch declares no klp_object for %s (its objects: %s), and livepatch applies %s's sections only for one: never applied, the patched code would use unrelocated addresses; add a klp_object for %s", s.Object, strings.Join(m.Objects, ", "), s.Object, s.Object)}
		}
	}
}

// sortedRelocs are a section's relocations by offset, in its order.
func sortedRelocs(byOff map[uint64]elfobj.Reloc) []elfobj.Reloc {
	out := slices.Collect(maps.Values(byOff))
	slices.SortFunc(out, func(a, b elfobj.Reloc) int { return cmp.Compare(a.Offset, b.Offset) })
	return out
}
