// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// NewFile (an io.ReaderAt) describes what Open (a path) does; a size past
// the reader's end is an error that names the module.
func TestNewFile(t *testing.T) {
	p := fixture("livepatch-sample.ko")
	want, err := Open(p)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	got, err := NewFile("sample", bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, "sample", got.Path)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.Format, got.Format)
	require.Equal(t, want.NumRelocs(), got.NumRelocs())
	require.Equal(t, len(want.Sections), len(got.Sections))
	for i := range want.Sections {
		require.Equal(t, want.Sections[i].Name, got.Sections[i].Name)
		require.Equal(t, len(want.Sections[i].Relocs), len(got.Sections[i].Relocs))
	}

	_, err = NewFile("short.ko", bytes.NewReader(data), int64(len(data))+100)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.ErrorContains(t, err, "short.ko")
	_, err = NewFile("huge.ko", bytes.NewReader(data), 1<<40)
	require.ErrorIs(t, err, ErrTooLarge)
	require.EqualError(t, err, "huge.ko: input larger than the limit: size 1099511627776, more than 1073741824")
}

// What is wrong with a module file is an error kind a caller can test
// with errors.Is, naming the file: a cut or damaged ELF, a compressed
// module cut short or damaged, a bad symbol given to Convert.
func TestModuleErrorKinds(t *testing.T) {
	data, err := readFixture("livepatch-sample.ko")
	require.NoError(t, err)
	_, err = Parse("cut.ko", data[:1000])
	require.ErrorIs(t, err, ErrMalformed)
	shoff := binary.LittleEndian.Uint64(data[40:]) // e_shoff, where the cut file has nothing
	assert.EqualError(t, err, fmt.Sprintf("cut.ko: section header table at %#x is past the end of the file (1000 bytes)", shoff))

	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zst := enc.EncodeAll(data, nil)
	_, err = Parse("cut.ko.zst", zst[:len(zst)/2])
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.EqualError(t, err, "cut.ko.zst: zstd: unexpected EOF")
	damaged := slices.Clone(zst)
	for i := 20; i < len(damaged)-20; i++ {
		damaged[i] ^= 0xa5
	}
	_, err = Parse("damaged.ko.zst", damaged)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "damaged.ko.zst: zstd: ")

	obj, err := readFixture("patch.o")
	require.NoError(t, err)
	for _, syms := range [][]ConvertSymbol{
		{{Object: "vmlinux", Name: "not_referenced"}},
		{{Object: "zfs.ko", Name: "vfs_read"}},
		{{Object: "vmlinux", Name: "vfs,read"}},
		{{Object: "vmlinux", Name: "vfs_read"}, {Object: "ext4", Name: "vfs_read"}},
		{{Object: "xfs-tools", Name: "vfs_read"}},
	} {
		_, err = Convert("patch.o", obj, syms)
		require.ErrorIs(t, err, ErrBadConvertSymbol, "%v", syms)
		assert.ErrorContains(t, err, "patch.o: ")
	}
	// The one about a dashed object is ErrNeverLoads as well.
	assert.ErrorIs(t, err, ErrNeverLoads)
}

// A failing relocation's error reads as the kernel's line, placed in the
// module, with the explanation after it.
func TestRelocErrorText(t *testing.T) {
	m, err := Open(fixture("err-position.ko"))
	require.NoError(t, err)
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	require.Equal(t, 1, res.Errors)
	bad := failures(res)
	require.Len(t, bad, 1)
	re := bad[0].Err
	require.Equal(t, fixture("err-position.ko")+": .klp.rela.vmlinux..rodata.klp_show_table+0x0: "+re.Kernel+" ("+re.Hint+")", re.Error())
	require.Contains(t, re.Kernel, "symbol position 18 for symbol 'type_show'")
	require.NotEmpty(t, re.Hint)
}

// A module's symbol in a .klp.rela.vmlinux section is looked up when the
// patch loads: with that module not loaded, the kernel finds nothing, and
// the help says where the relocation belongs.
func TestModuleSymbolInVmlinuxSection(t *testing.T) {
	obj, err := readFixture("patch.o")
	require.NoError(t, err)
	out, err := convert("patch.o", obj, sampleSymbols, &convertHooks{sectionObj: map[string]string{"xfs_iget": "vmlinux"}})
	require.NoError(t, err)
	m, err := Parse("vmlinux-section.ko", out)
	require.NoError(t, err)
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	require.NoError(t, err)
	require.False(t, ix.HasObject("xfs"))
	res := m.Resolve(ix, ResolveOptions{})
	bad := failures(res)
	require.Len(t, bad, 1)
	require.Equal(t, "xfs_iget", bad[0].Name)
	require.Equal(t, Failed, bad[0].Status)
	require.ErrorIs(t, bad[0].Err, kallsyms.ErrNoObject)
	require.Equal(t, "object_not_loaded", bad[0].Err.Kind())
	require.Equal(t, "symbol 'xfs_iget' not found in symbol table", bad[0].Err.Kernel)
	require.Equal(t, "module xfs is not loaded in this kernel; a .klp.rela.vmlinux section is applied when the patch loads, so a module symbol must be in a .klp.rela.xfs.* section", bad[0].Err.Hint)
	require.NotContains(t, res.DeferredObjects, "xfs")
}

// failures are the results of res that failed, in order.
func failures(res *Resolution) []Result {
	var bad []Result
	for _, r := range res.Results {
		if r.Err != nil {
			bad = append(bad, r)
		}
	}
	return bad
}

// An object named with a dash is a module that never loads: kbuild names
// modules with underscores. The kernel would defer the section forever
// and say nothing; Resolve fails it with ErrNeverLoads, naming the
// module meant, and Convert will not write such a name.
func TestDashedObjectNeverLoads(t *testing.T) {
	obj, err := readFixture("patch.o")
	require.NoError(t, err)
	out, err := convert("patch.o", obj, sampleSymbols, &convertHooks{sectionObj: map[string]string{"xfs_iget": "xfs-tools"}})
	require.NoError(t, err)
	m, err := Parse("dashed.ko", out)
	require.NoError(t, err)
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	require.NoError(t, err)
	res := m.Resolve(ix, ResolveOptions{})
	bad := failures(res)
	require.Len(t, bad, 1)
	assert.Equal(t, ".klp.rela.xfs-tools..text.livepatch_xfs", bad[0].Section)
	require.ErrorIs(t, bad[0].Err, ErrNeverLoads)
	assert.Equal(t, "never_loads", bad[0].Err.Kind())
	assert.Equal(t, "(no message: the kernel fails silently)", bad[0].Err.Kernel)
	assert.Contains(t, bad[0].Err.Hint, `no module is named "xfs-tools"`)
	assert.Contains(t, bad[0].Err.Hint, `so the object is "xfs_tools"`)
	assert.Empty(t, res.DeferredObjects, "not deferred: it would never load")
	assert.Equal(t, 1, res.Errors)

	syms := append(slices.Clone(sampleSymbols[:4]), ConvertSymbol{Object: "xfs-tools", Name: "xfs_iget"})
	_, err = Convert("patch.o", obj, syms)
	require.ErrorIs(t, err, ErrNeverLoads)
	assert.ErrorContains(t, err, `object name "xfs-tools"`)
	assert.ErrorContains(t, err, `"xfs_tools"`)
}

// KernelName: .modinfo's name, else kbuild's name for the file (dashes as
// underscores, compression and .ko off), else the base name to its dot.
func TestKernelName(t *testing.T) {
	for _, c := range []struct{ name, path, want string }{
		{"livepatch_fix", "/x/other-name.ko", "livepatch_fix"},
		{"", "/lib/modules/6.1/livepatch-fix.ko.xz", "livepatch_fix"},
		{"", "fix.ko", "fix"},
		{"", "patch.o", "patch"},
		{"", "-", "-"},
	} {
		m := &Module{Name: c.name, Path: c.path}
		assert.Equal(t, c.want, m.KernelName(), c.path)
	}
}
