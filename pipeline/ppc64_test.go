package pipeline

import (
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// TestRunPPC64 links testdata/klp/ppc64le-fix.ko, a livepatch module
// built as Kbuild builds ppc64le ones, against its kernel's symbols: the
// kernel's TOC and ftrace entry points come from them (Kernel), the
// stubs in the kernel's order: the module's own relocations' (_mcount),
// then module_finalize()'s ftrace_caller and ftrace_regs_caller, then
// livepatch's (vfs_read, ext4's helper), each call's nop restoring r2.
func TestRunPPC64(t *testing.T) {
	ix, err := kallsyms.Open(repoFile("klp", "ppc64le-kallsyms.txt"), nil)
	require.NoError(t, err)
	arch, _ := ix.Arch()
	assert.Equal(t, "ppc64", arch)
	m, err := klp.Open(repoFile("klp", "ppc64le-fix.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true})
	require.NoError(t, err)
	img := rep.Image
	for _, e := range img.Errors {
		t.Errorf("%v", e)
	}
	require.True(t, img.Linked(), "%v", img.Unresolved)
	assert.Equal(t, uint64(64<<10), img.PageSize)
	assert.Equal(t, 5, img.PLTCoreUsed)
	assert.Equal(t, 6, img.PLTCoreMax, "_mcount, vfs_read, ext4_bitmap_helper; the terminator and two ftrace stubs")
	stubs := img.Section(".stubs")
	require.NotNil(t, stubs)
	le := binary.LittleEndian
	var funcdata []uint64
	for off := uint64(0); off+40 <= uint64(len(stubs.Data)); off += 40 {
		funcdata = append(funcdata, le.Uint64(stubs.Data[off+32:]))
	}
	assert.Equal(t, []uint64{0xc000000000071234, 0xc000000000071300, 0xc000000000071400, 0xc000000000500000, 0xc008000000100000, 0}, funcdata,
		"_mcount, ftrace_caller, ftrace_regs_caller, vfs_read, ext4_bitmap_helper; the last one zero")
	// The _mcount stub: ld r12,16(r13) (the kernel's TOC), then
	// addis/addi of _mcount's offset from .TOC. (0xc000000001f0a100).
	hi, lo := le.Uint32(stubs.Data[4:]), le.Uint32(stubs.Data[8:])
	assert.Equal(t, uint32(0xe98d0010), le.Uint32(stubs.Data))
	assert.Equal(t, uint64(0xc000000000071234), 0xc000000001f0a100+uint64(int64(int16(hi))<<16+int64(int16(lo))))

	// Each livepatch call reaches its stub, and the nop after it is
	// ld r2,24(r1).
	f := m.ELF()
	text := img.Section(".text.livepatch_vfs_read")
	require.NotNil(t, text)
	for obj, stub := range map[string]uint64{"vmlinux": 3, "ext4": 4} {
		s := f.SectionByName(".klp.rela." + obj + "..text.livepatch_vfs_read")
		require.NotNil(t, s, obj)
		rt, err := f.RelocTable(s)
		require.NoError(t, err)
		require.Equal(t, 1, rt.Len())
		r, err := rt.Reloc(0)
		require.NoError(t, err)
		require.Equal(t, elf.R_PPC64_REL24, elf.R_PPC64(r.Type))
		insn := le.Uint32(text.Data[r.Offset:])
		assert.Equal(t, uint32(0x48000001), insn&0xfc000003, "bl")
		assert.Equal(t, stubs.Addr+stub*40, text.Addr+r.Offset+uint64(int64(int32(insn<<6)>>6)&^3), obj)
		assert.Equal(t, uint32(0xe8410018), le.Uint32(text.Data[r.Offset+4:]), "%s: ld r2,24(r1)", obj)
	}
}
