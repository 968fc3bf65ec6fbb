// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/internal/testutil/testelf"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// TestPatchedFuncs reads the functions each kind of module declares
// (testdata/klp/klp-patch.c, klp-build.c, kpatch.c) and looks them up in
// the corpus kernel as klp_init_object_loaded() does.
func TestPatchedFuncs(t *testing.T) {
	ix := amd64Index(t)
	type want struct {
		object, name string
		pos          uint64
		section      string
		status       Status
	}
	sample := func(section string) []want {
		return []want{
			{"vmlinux", "vfs_read", 0, section, Resolved},
			{"vmlinux", "type_show", 3, section, Resolved},
			{"ext4", "ext4_read_inode_bitmap", 0, section, Resolved},
			{"xfs", "xfs_iget", 0, section, Deferred},
		}
	}
	for _, tc := range []struct {
		file   string
		source FuncSource
		want   []want
	}{
		{"klp-patch.ko", FuncsStatic, sample(".data")},
		{"klp-build.ko", FuncsKlpBuild, sample(".init.klp_funcs")},
		{"kpatch-sample.ko", FuncsKpatch, []want{
			{"vmlinux", "vfs_read", 0, ".kpatch.funcs", Resolved},
			{"vmlinux", "type_show", 2, ".kpatch.funcs", Resolved},
		}},
		{"livepatch-sample.ko", FuncsNone, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m, err := Open(fixture(tc.file))
			require.NoError(t, err)
			assert.Equal(t, tc.source, m.FuncSource)
			res := m.Resolve(ix, ResolveOptions{})
			var got []want
			for i, f := range res.Funcs {
				assert.Equal(t, i, f.Index)
				got = append(got, want{f.Object, f.Name, f.Pos, f.Section, f.Status})
				if f.Status == Resolved {
					assert.Equal(t, wantAddr(t, ix, f.Object, f.Name, int(f.Pos)), f.Address, f.Name)
				}
				assert.Nil(t, f.Err)
			}
			assert.Equal(t, tc.want, got)
			deferred := 0
			for _, w := range tc.want {
				if w.status == Deferred {
					deferred++
				}
			}
			assert.Equal(t, []int{len(tc.want) - deferred, deferred, 0}, []int{res.FuncResolved, res.FuncDeferred, res.FuncErrors})
			if tc.file == "kpatch-sample.ko" {
				// Its external dynrela names vfs_read, which 6.1 does not
				// export: the kpatch core fails it (TestKpatchModule).
				assert.False(t, res.OK(false))
				return
			}
			assert.True(t, res.OK(false))
			assert.Equal(t, deferred == 0 && res.Deferred == 0, res.OK(true))
		})
	}

	// The static one's entries are where the struct layout puts them:
	// klp_func is 152 bytes in 6.1 x86_64, and the decoy struct (an
	// owner and a function pointer) is not taken for a klp_patch.
	m, err := Open(fixture("klp-patch.ko"))
	require.NoError(t, err)
	assert.Equal(t, m.Funcs[0].Offset+152, m.Funcs[1].Offset)
	// klp-build's: 24-byte klp_func_ext, in the objects' order whatever
	// the order of the arrays in the section.
	m, err = Open(fixture("klp-build.ko"))
	require.NoError(t, err)
	assert.Equal(t, m.Funcs[0].Offset+24, m.Funcs[1].Offset)
}

// TestPatchedFuncErrors: klp-patch-broken.ko patches a function no kernel
// has, an ambiguous one without old_sympos, and vfs_read at old_sympos 1
// beside old_sympos 0 (one sysfs name): the patch fails, each with the
// kernel's message and kind.
func TestPatchedFuncErrors(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("klp-patch-broken.ko"))
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, []int{3, 1, 3}, []int{res.FuncResolved, res.FuncDeferred, res.FuncErrors})
	assert.False(t, res.OK(false))
	assert.Equal(t, 0, res.Errors, "the relocations resolve")
	var kinds, msgs []string
	for _, f := range res.Funcs {
		if f.Err != nil {
			kinds = append(kinds, f.Err.Kind())
			msgs = append(msgs, f.Err.Kernel)
		}
	}
	assert.Equal(t, []string{"not_found", "ambiguous", "duplicate"}, kinds)
	assert.Equal(t, "symbol 'no_such_function' not found in symbol table", msgs[0])
	assert.Equal(t, "unresolvable ambiguity for symbol 'type_show' in object '(null)'", msgs[1])
	assert.Equal(t, "kobject_add_internal failed for vfs_read,1 with -EEXIST, don't try to register things with the same name in the same directory.", msgs[2])
	assert.True(t, errors.Is(res.Funcs[4].Err, ErrDuplicate))
	assert.True(t, errors.Is(res.Funcs[2].Err, kallsyms.ErrNotFound))
}

// TestCheckFuncs: what klp_init_object() and klp_init_func() refuse
// whatever the kernel.
func TestCheckFuncs(t *testing.T) {
	fs := []Func{
		{Object: "vmlinux", Name: "a"},
		{Object: "vmlinux", Name: "a", Pos: 2},
		{Object: "vmlinux", Name: "a", Pos: 1}, // a,1 is a,0's sysfs name
		{Object: "vmlinux", Name: strings.Repeat("n", 512)},
		{Object: strings.Repeat("m", 56), Name: "b"},
		{Object: "nf-conntrack", Name: "c"},
		{Object: "ext4", Name: "a"},
		{Object: "xfs", Name: "d"},
		{Object: "ext4", Name: "e"}, // a second ext4 klp_object
	}
	checkFuncs(fs, true)
	var kinds []string
	for _, f := range fs {
		k := ""
		if f.Err != nil {
			k = (&RelocError{Err: f.Err}).Kind()
		}
		kinds = append(kinds, k)
	}
	assert.Equal(t, []string{"", "", "duplicate", "name_too_long", "name_too_long", "never_loads", "", "", "duplicate"}, kinds)
	assert.Contains(t, fs[8].Err.Kernel, "kobject_add_internal failed for ext4 with -EEXIST")
	assert.Contains(t, fs[3].Err.Hint, "512 bytes, longer than KSYM_NAME_LEN-1 (511)")
	assert.Empty(t, fs[3].Err.Kernel, "the kernel says nothing")
}

// TestStaticPatchNeedsSizes: the arrays' strides come from their symbols'
// sizes; without them (a module stripped of its local symbols) nothing is
// guessed, and a struct that only starts like a klp_patch is no patch.
func TestStaticPatchNeedsSizes(t *testing.T) {
	data, err := readFixture("klp-patch.ko")
	require.NoError(t, err)
	f, err := elfobj.Parse("klp-patch.ko", data)
	require.NoError(t, err)
	symtab := f.Sections[f.Symtab]
	for _, s := range f.Symbols {
		if s.Name == "objs" {
			// Elf64_Sym: st_size at byte 16.
			at := symtab.Offset + uint64(s.Index)*24 + 16
			binary.LittleEndian.PutUint64(data[at:], 0)
		}
	}
	m, err := Parse("stripped.ko", data)
	require.NoError(t, err)
	assert.Equal(t, FuncsNone, m.FuncSource)
	assert.Empty(t, m.Funcs)

	// THIS_MODULE followed by a pointer to a sized array of (string,
	// code) pairs that is no klp_object array: its entries do not
	// point, one word in, at such arrays.
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	text := b.AddSection(elfobj.BuildSection{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 16})
	str := b.AddSection(elfobj.BuildSection{Name: ".rodata.str", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_MERGE | elf.SHF_STRINGS, Data: []byte("vfs_read\x00"), Addralign: 1})
	dat := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64), Addralign: 8})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("livepatch=Y\x00"), Addralign: 1})
	this := b.AddSymbol(elfobj.BuildSymbol{Name: "__this_module", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	fn := b.AddSymbol(elfobj.BuildSymbol{Name: "fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 16})
	ss := b.AddSymbol(elfobj.BuildSymbol{Name: "s", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT), Shndx: uint16(str), Size: 9})
	b.AddSymbol(elfobj.BuildSymbol{Name: "pairs", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT), Shndx: uint16(dat), Value: 16, Size: 48})
	dsym := b.AddSymbol(elfobj.BuildSymbol{Name: "d", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint16(dat)})
	b.AddRelocs(".rela.data", true, dat, []elfobj.Reloc{
		{Offset: 0, Sym: this, Type: uint32(elf.R_X86_64_64)},
		{Offset: 8, Sym: dsym, Type: uint32(elf.R_X86_64_64), Addend: 16},
		{Offset: 16, Sym: ss, Type: uint32(elf.R_X86_64_64)},
		{Offset: 24, Sym: fn, Type: uint32(elf.R_X86_64_64)},
	})
	m, err = Parse("decoy.ko", b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, FuncsNone, m.FuncSource)
}

// TestNoLivepatchSupport: a kernel without CONFIG_LIVEPATCH (no
// klp_enable_patch beside start_kernel) refuses every module marked
// livepatch, before livepatch sees it (check_modinfo_livepatch()).
func TestNoLivepatchSupport(t *testing.T) {
	index := func(text string) *kallsyms.Index {
		ix, err := kallsyms.Parse("k", strings.NewReader(text), kallsyms.Options{})
		require.NoError(t, err)
		return ix
	}
	lp, err := Open(fixture("klp-patch.ko"))
	require.NoError(t, err)
	kp, err := Open(fixture("kpatch-sample.ko"))
	require.NoError(t, err)
	const base = "ffffffff81000000 T start_kernel\nffffffff81010180 T vfs_read\n"
	res := lp.Resolve(index(base), ResolveOptions{})
	require.NotNil(t, res.LoadErr)
	assert.True(t, errors.Is(res.LoadErr, ErrNoLivepatch))
	assert.Equal(t, "no_livepatch", res.LoadErr.Kind())
	assert.Equal(t, "klp_patch: module is marked as livepatch module, but livepatch support is disabled", res.LoadErr.Kernel)
	assert.False(t, res.OK(false))
	assert.Equal(t, 1, res.Resolved, "the relocations are resolved all the same")

	assert.Nil(t, lp.Resolve(index(base+"ffffffff81020000 T klp_enable_patch\n"), ResolveOptions{}).LoadErr)
	assert.Nil(t, lp.Resolve(index("ffffffff81010180 T vfs_read\n"), ResolveOptions{}).LoadErr, "no start_kernel: no whole kernel's list")
	assert.Nil(t, kp.Resolve(index(base), ResolveOptions{}).LoadErr, "a legacy kpatch module is not marked livepatch")

	// The corpus: Debian's 6.1 has livepatch, the 6.18 firecracker
	// kernel does not.
	assert.Nil(t, lp.Resolve(amd64Index(t), ResolveOptions{}).LoadErr)
	fc, err := kallsyms.Open(testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt"), kallsyms.Options{})
	require.NoError(t, err)
	res = lp.Resolve(fc, ResolveOptions{})
	require.NotNil(t, res.LoadErr)
	assert.Equal(t, "no_livepatch", res.LoadErr.Kind())
	// Its kallsyms holds code only, which says so too; the made-up
	// kernel above lists too little to tell.
	assert.Contains(t, res.LoadErr.Hint, "and its kallsyms holds code only: no CONFIG_KALLSYMS_ALL, which CONFIG_LIVEPATCH depends on")
	assert.NotContains(t, lp.Resolve(index(base+"ffffffff82000000 D jiffies\n"), ResolveOptions{}).LoadErr.Hint, "KALLSYMS_ALL")
}

// TestInitMemory: vmlinux's init code and data are freed after boot. A
// patched init function cannot be patched (ftrace has forgotten it); a
// relocation to init memory is applied, and would use freed memory.
func TestInitMemory(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("klp-patch.ko"))
	require.NoError(t, err)
	m.Funcs = append([]Func(nil), m.Funcs...)
	m.Funcs[0].Name = "start_kernel" // __init, at 0xffffffff83079e46
	res := m.Resolve(ix, ResolveOptions{})
	require.NotNil(t, res.Funcs[0].Err)
	assert.Equal(t, "init_function", res.Funcs[0].Err.Kind())
	assert.Equal(t, "failed to find location for function 'start_kernel'", res.Funcs[0].Err.Kernel)
	assert.Contains(t, res.Funcs[0].Err.Hint, "0xffffffff83079e46, in vmlinux's init code (0xffffffff83079000-0xffffffff830e7c04)")
	assert.Equal(t, 1, res.FuncErrors)
	assert.Empty(t, res.InitRefs, "vfs_read is no init memory")

	// do_syscall_64 is noinstr (no ftrace call site), entry_SYSCALL_64
	// entry code: neither can be patched either.
	m.Funcs[0].Name, m.Funcs[1].Name, m.Funcs[1].Pos = "do_syscall_64", "entry_SYSCALL_64", 0
	res = m.Resolve(ix, ResolveOptions{})
	require.NotNil(t, res.Funcs[0].Err)
	require.NotNil(t, res.Funcs[1].Err)
	assert.Equal(t, []string{"not_traceable", "not_traceable"}, []string{res.Funcs[0].Err.Kind(), res.Funcs[1].Err.Kind()})
	assert.Equal(t, "failed to find location for function 'do_syscall_64'", res.Funcs[0].Err.Kernel)
	assert.Contains(t, res.Funcs[0].Err.Hint, "in vmlinux's noinstr code (__noinstr_text_start..__noinstr_text_end, 0xffffffff81a43c50-0xffffffff81a4903c)")
	assert.Contains(t, res.Funcs[1].Err.Hint, "in vmlinux's entry code (__entry_text_start..__entry_text_end")
	assert.True(t, errors.Is(res.Funcs[1].Err, ErrNotTraceable))

	// A call to start_kernel and a load of boot_command_line (__initdata,
	// 0xffffffff8312e920), beside vfs_read.
	names := []string{"vfs_read", "start_kernel", "boot_command_line"}
	var syms []ConvertSymbol
	for _, n := range names {
		syms = append(syms, ConvertSymbol{Object: "vmlinux", Name: n})
	}
	ko, err := Convert("obj.o", testelf.X86Calls(".text.fn", elf.R_X86_64_PC32, names...), syms)
	require.NoError(t, err)
	mm, err := Parse("init.ko", ko)
	require.NoError(t, err)
	res = mm.Resolve(ix, ResolveOptions{})
	assert.True(t, res.OK(false), "the kernel applies them")
	var refs []string
	for _, i := range res.InitRefs {
		refs = append(refs, res.Results[i].Name)
	}
	assert.Equal(t, []string{"start_kernel", "boot_command_line"}, refs)
}

// TestObjectsDeclared: the klp_objects a patch declares, and what a
// .klp.rela section for a module the patch has no klp_object for means:
// it is never applied.
func TestObjectsDeclared(t *testing.T) {
	for file, want := range map[string][]string{
		"klp-patch.ko":        {"vmlinux", "ext4", "xfs"},
		"klp-patch-broken.ko": {"vmlinux", "ext4", "xfs", "nfs"}, // nfs's funcs: empty, in .bss
		"klp-build.ko":        {"vmlinux", "ext4", "xfs"},
		"kpatch-sample.ko":    nil, // kpatch-build's hook builds them: unknown
		"livepatch-sample.ko": nil,
	} {
		m, err := Open(fixture(file))
		require.NoError(t, err)
		assert.Equal(t, want, m.Objects, file)
	}

	// klp-patch.c's vfs_read call made a relocation against nfs's
	// symbol: klp-patch.ko has no nfs object, the broken one has.
	ix := amd64Index(t)
	ix2, err := kallsyms.Parse("k", strings.NewReader("ffffffff81000000 T start_kernel\nffffffff81020000 T klp_enable_patch\nffffffffc0100000 t vfs_read\t[nfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	for file, kind := range map[string]string{"klp-patch.o": "no_klp_object", "klp-patch-broken.o": ""} {
		obj, err := readFixture(file)
		require.NoError(t, err)
		ko, err := Convert(file, obj, []ConvertSymbol{{Object: "nfs", Name: "vfs_read"}})
		require.NoError(t, err)
		m, err := Parse(file, ko)
		require.NoError(t, err)
		require.Len(t, m.Sections, 1)
		assert.Equal(t, "nfs", m.Sections[0].Object)
		res := m.Resolve(ix2, ResolveOptions{})
		if kind == "" {
			assert.Equal(t, 1, res.Resolved, file)
			continue
		}
		require.Len(t, res.Results, 1)
		require.NotNil(t, res.Results[0].Err)
		assert.Equal(t, kind, res.Results[0].Err.Kind())
		assert.True(t, errors.Is(res.Results[0].Err, ErrObjectNotInPatch))
		assert.Contains(t, res.Results[0].Err.Hint, "the patch declares no klp_object for nfs (its objects: vmlinux, ext4, xfs)")
		// Against a kernel without nfs it fails all the same: the
		// section would never be applied anywhere.
		assert.Equal(t, 1, m.Resolve(ix, ResolveOptions{}).Errors)
	}
}

// TestNamedVmlinux: a klp_object named "vmlinux" (a string, not NULL)
// waits for a module of that name, which cannot load.
func TestNamedVmlinux(t *testing.T) {
	assert.Nil(t, namedVmlinux("vmlinux", false), "NULL: vmlinux")
	assert.Nil(t, namedVmlinux("ext4", true))
	e := namedVmlinux("vmlinux", true)
	require.NotNil(t, e)
	assert.Equal(t, "never_loads", (&RelocError{Err: e}).Kind())
	fs := []Func{{Object: "vmlinux", Name: "a", Err: e}, {Object: "vmlinux", Name: "a", Pos: 1}}
	checkFuncs(fs, false)
	assert.Same(t, e, fs[0].Err, "kept")
	assert.Equal(t, "duplicate", (&RelocError{Err: fs[1].Err}).Kind(), "one sysfs directory, vmlinux, all the same")
}

// TestLoadTimeSection: a jump table entry for a module's static key
// would be read by the module loader long before livepatch relocates it;
// one for vmlinux's key is relocated first, at load.
func TestLoadTimeSection(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	jt := b.AddSection(elfobj.BuildSection{Name: "__jump_table", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 32), Addralign: 8})
	mk := b.AddSymbol(elfobj.BuildSymbol{Name: "ext4_key", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	vk := b.AddSymbol(elfobj.BuildSymbol{Name: "vmlinux_key", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela__jump_table", true, jt, []elfobj.Reloc{
		{Offset: 8, Sym: mk, Type: uint32(elf.R_X86_64_PC64)},
		{Offset: 24, Sym: vk, Type: uint32(elf.R_X86_64_PC64)},
	})
	// Convert refuses to make one.
	_, err := Convert("obj.o", b.Bytes(), []ConvertSymbol{{Object: "ext4", Name: "ext4_key"}, {Object: "vmlinux", Name: "vmlinux_key"}})
	require.ErrorIs(t, err, ErrLoadTimeSection)
	assert.ErrorContains(t, err, "obj.o: module-specific relocations of a section read at load: __jump_table refers to ext4's ext4_key")
	ko, err := convert("obj.o", b.Bytes(), []ConvertSymbol{{Object: "vmlinux", Name: "ext4_key"}, {Object: "vmlinux", Name: "vmlinux_key"}},
		&convertHooks{rawName: map[string]string{"ext4_key": ".klp.sym.ext4.ext4_key,0"}, sectionObj: map[string]string{"ext4_key": "ext4"}})
	require.NoError(t, err)
	m, err := Parse("jt.ko", ko)
	require.NoError(t, err)
	require.Len(t, m.Sections, 2)
	kinds := map[string]string{}
	for _, s := range m.Sections {
		k := ""
		if s.Err != nil {
			k = (&RelocError{Err: s.Err}).Kind()
			assert.True(t, errors.Is(s.Err, ErrLoadTimeSection))
		}
		kinds[s.Name] = k
	}
	assert.Equal(t, map[string]string{".klp.rela.ext4.__jump_table": "load_time_section", ".klp.rela.vmlinux.__jump_table": ""}, kinds)
	ix, err := kallsyms.Parse("k", strings.NewReader("ffffffff81000000 D vmlinux_key\nffffffffc0000000 d ext4_key\t[ext4]\n"), kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	assert.Equal(t, []int{1, 0, 1}, []int{res.Resolved, res.Deferred, res.Errors}, "failed, loaded or not")
}

// TestRELOffsetPastData: a REL entry's in-place addend is read only where
// the section has the bytes, whatever its offset (one near 2^64 wrapped a
// bounds check).
func TestRELOffsetPastData(t *testing.T) {
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
	dat := b.AddSection(elfobj.BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 16), Addralign: 8})
	b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("livepatch=Y\x00"), Addralign: 1})
	s := b.AddSymbol(elfobj.BuildSymbol{Name: "__this_module", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rel.data", false, dat, []elfobj.Reloc{{Offset: ^uint64(0) - 3, Sym: s, Type: uint32(elf.R_X86_64_64)}})
	m, err := Parse("rel.ko", b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, FuncsNone, m.FuncSource)
}

// TestKpatchBuildObjects: kpatch-build's livepatch hook makes one
// klp_object per objname of .kpatch.funcs; a .klp.rela section for a
// module without one is never applied.
func TestKpatchBuildObjects(t *testing.T) {
	build := func(name, objname string) *Module {
		t.Helper()
		b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Machine: elf.EM_X86_64}
		text := b.AddSection(elfobj.BuildSection{Name: ".text.fn", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 16), Addralign: 16})
		strs := []byte(name + "\x00" + objname + "\x00")
		str := b.AddSection(elfobj.BuildSection{Name: ".kpatch.strings", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: strs, Addralign: 1})
		funcs := b.AddSection(elfobj.BuildSection{Name: ".kpatch.funcs", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 56), Addralign: 8})
		b.AddSection(elfobj.BuildSection{Name: ".modinfo", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: []byte("livepatch=Y\x00"), Addralign: 1})
		ss := b.AddSymbol(elfobj.BuildSymbol{Name: "", Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint16(str)})
		fn := b.AddSymbol(elfobj.BuildSymbol{Name: "fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(text), Size: 16})
		xi := b.AddSymbol(elfobj.BuildSymbol{Name: "xfs_iget", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
		b.AddRelocs(".rela.text.fn", true, text, []elfobj.Reloc{{Offset: 1, Sym: xi, Type: uint32(elf.R_X86_64_PLT32), Addend: -4}})
		b.AddRelocs(".rela.kpatch.funcs", true, funcs, []elfobj.Reloc{
			{Offset: 0, Sym: fn, Type: uint32(elf.R_X86_64_64)},
			{Offset: 40, Sym: ss, Type: uint32(elf.R_X86_64_64)},
			{Offset: 48, Sym: ss, Type: uint32(elf.R_X86_64_64), Addend: int64(len(name) + 1)},
		})
		ko, err := Convert("kpatch.o", b.Bytes(), []ConvertSymbol{{Object: "xfs", Name: "xfs_iget"}})
		require.NoError(t, err)
		m, err := Parse("kpatch.ko", ko)
		require.NoError(t, err)
		require.Equal(t, FormatKLP, m.Format)
		require.Equal(t, FuncsKpatch, m.FuncSource)
		return m
	}
	m := build("vfs_read", "vmlinux")
	assert.Equal(t, []string{"vmlinux"}, m.Objects)
	require.Len(t, m.Sections, 1)
	require.NotNil(t, m.Sections[0].Err)
	assert.ErrorIs(t, m.Sections[0].Err, ErrObjectNotInPatch)

	m = build("xfs_iget", "xfs")
	assert.Equal(t, []string{"xfs"}, m.Objects)
	assert.Nil(t, m.Sections[0].Err)
}

// TestReadAtLoadS390: s390's module_finalize() rewrites its expoline
// sites (.s390_indirect_*, .s390_return_*) at load: Convert refuses a
// module's symbol there, as it does a jump table's.
func TestReadAtLoadS390(t *testing.T) {
	for _, sec := range []string{".s390_indirect_call", ".s390_return_reg", ".s390_indirect_jump"} {
		assert.True(t, readAtLoad(sec), sec)
	}
	assert.False(t, readAtLoad(".s390_other"))
	// powerpc's fixup tables (module_finalize()).
	for _, sec := range []string{"__ftr_fixup", "__mmu_ftr_fixup", "__fw_ftr_fixup", "__spec_barrier_fixup", "__lwsync_fixup"} {
		assert.True(t, readAtLoad(sec), sec)
	}
	b := &elfobj.Builder{Class: elf.ELFCLASS64, Order: binary.BigEndian, Machine: elf.EM_S390}
	ic := b.AddSection(elfobj.BuildSection{Name: ".s390_indirect_call", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Data: make([]byte, 8), Addralign: 4})
	mk := b.AddSymbol(elfobj.BuildSymbol{Name: "ext4_fn", Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)})
	b.AddRelocs(".rela.s390_indirect_call", true, ic, []elfobj.Reloc{{Offset: 0, Sym: mk, Type: uint32(elf.R_390_PC32)}})
	_, err := Convert("obj.o", b.Bytes(), []ConvertSymbol{{Object: "ext4", Name: "ext4_fn"}})
	require.ErrorIs(t, err, ErrLoadTimeSection)
}

// TestFtraceSites: with the kernel's ftrace call sites, a patched function
// of vmlinux or of a loaded module with none in it fails as
// klp_patch_func() fails it; one the sites cannot tell about (a
// names-only list, one line for several functions of a name) stays
// resolved; a deferred one is not theirs to judge.
func TestFtraceSites(t *testing.T) {
	ix := amd64Index(t)
	m, err := Open(fixture("klp-patch.ko"))
	require.NoError(t, err)
	addr := func(object, name string, pos uint64) uint64 {
		s, ok := ix.Find(object, name, pos)
		require.True(t, ok, name)
		return s.Address
	}
	// Sites in type_show,3 and ext4_read_inode_bitmap (4 bytes in, as
	// an ENDBR puts them), none in vfs_read.
	text := fmt.Sprintf("%x type_show\n%x ext4_read_inode_bitmap [ext4]\n",
		addr("vmlinux", "type_show", 3), addr("ext4", "ext4_read_inode_bitmap", 1)+4)
	sites, err := ftrace.ParseTracefs("available_filter_functions_addrs", strings.NewReader(text), ix)
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{Ftrace: sites})
	var got []string
	for _, f := range res.Funcs {
		got = append(got, f.Name+" "+string(f.Status))
	}
	assert.Equal(t, []string{"vfs_read error", "type_show resolved", "ext4_read_inode_bitmap resolved", "xfs_iget deferred"}, got)
	e := res.Funcs[0].Err
	require.ErrorIs(t, e, ErrNotTraceable)
	assert.Equal(t, "failed to find location for function 'vfs_read'", e.Kernel)
	assert.Contains(t, e.Hint, fmt.Sprintf("vfs_read is at %#x in vmlinux, and the kernel's ftrace call sites (available_filter_functions_addrs) have none in it", addr("vmlinux", "vfs_read", 1)))
	assert.Equal(t, 1, res.FuncErrors)

	// Names only: type_show is listed once, for 17 functions of the name.
	sites, err = ftrace.ParseTracefs("available_filter_functions", strings.NewReader("type_show\next4_read_inode_bitmap [ext4]\n"), ix)
	require.NoError(t, err)
	res = m.Resolve(ix, ResolveOptions{Ftrace: sites})
	got = nil
	for _, f := range res.Funcs {
		got = append(got, f.Name+" "+string(f.Status))
	}
	assert.Equal(t, []string{"vfs_read error", "type_show resolved", "ext4_read_inode_bitmap resolved", "xfs_iget deferred"}, got)
}
