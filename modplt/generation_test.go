package modplt

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kgen"
)

// TestARM64Generations: what arm64's loader does by generation.
// count_plts() skips branches without CONFIG_RANDOMIZE_BASE in 6.1 only;
// module_init_ftrace_plt() fills two ftrace PLT entries in
// .text.ftrace_trampoline in 6.1, one in it and one in
// .init.text.ftrace_trampoline from 6.12; a 6.1 module lacks the init
// one, which a 6.12 kernel refuses (MissingFtracePLT), and Debian's
// 6.12 modules have both.
func TestARM64Generations(t *testing.T) {
	m, err := Open(testutil.Corpus(t, "arm64/modules/btrfs.ko"))
	require.NoError(t, err)
	kaslr, err := m.Count(Options{})
	require.NoError(t, err)
	require.Greater(t, kaslr.PLTCore, 100)
	old, err := m.Count(Options{NoRandomizeBase: true})
	require.NoError(t, err)
	assert.True(t, old.NoRandomizeBase)
	assert.Zero(t, old.PLTCore, "6.1 without KASLR: no branch counted")
	for _, g := range []kgen.Generation{kgen.Linux6_12, kgen.Linux7_2} {
		c, err := m.Count(Options{NoRandomizeBase: true, Generation: g})
		require.NoError(t, err)
		assert.False(t, c.NoRandomizeBase, g)
		assert.Equal(t, kaslr.PLTCore, c.PLTCore, "%s counts every branch", g)
		assert.Equal(t, kaslr.PLTInit, c.PLTInit, g)
	}

	md4, err := Open(testutil.Corpus(t, "arm64/modules/md4.ko"))
	require.NoError(t, err)
	assert.Empty(t, MissingFtracePLT(md4.f, kgen.Linux6_1))
	assert.Equal(t, ".init.text.ftrace_trampoline", MissingFtracePLT(md4.f, kgen.Linux6_12))
	const base, caller = 0xffff800000d00000, 0xffff800008010000
	kernel := func(name string) (uint64, bool) {
		return caller, name == "ftrace_caller" || name == "ftrace_regs_caller"
	}
	resolve := func(string) (uint64, bool) { return base - 16<<20, true }
	for _, tc := range []struct {
		gen     kgen.Generation
		entries uint64
	}{{kgen.Linux6_1, 2}, {kgen.Linux6_12, 1}} {
		img, err := md4.Link(LinkOptions{Base: base, Resolve: resolve, Kernel: kernel, Generation: tc.gen})
		require.NoError(t, err)
		tramp := img.Section(".text.ftrace_trampoline")
		require.NotNil(t, tramp)
		assert.Equal(t, tc.entries*arm64PLTEntry, tramp.Size, "%s", tc.gen)
		// Each entry branches to ftrace_caller: ADRP x16 first.
		for i := range tc.entries {
			assert.Equal(t, uint32(0x90000010), binary.LittleEndian.Uint32(tramp.Data[12*i:])&0x9f00001f, "%s entry %d", tc.gen, i)
		}
	}

	mods, _ := filepath.Glob(filepath.Join(testutil.DebianKernelModules(t, "6.12", "arm64"), "fs/configfs/configfs.ko*"))
	require.Len(t, mods, 1)
	cfs, err := Open(mods[0])
	require.NoError(t, err)
	assert.Empty(t, MissingFtracePLT(cfs.f, kgen.Linux6_12), "Debian's 6.12 modules have both trampolines")
	img, err := cfs.Link(LinkOptions{Base: base, Resolve: resolve, Kernel: kernel, Generation: kgen.Linux6_12})
	require.NoError(t, err)
	for _, name := range []string{".text.ftrace_trampoline", ".init.text.ftrace_trampoline"} {
		s := img.Section(name)
		require.NotNil(t, s, name)
		assert.Equal(t, uint64(arm64PLTEntry), s.Size, name)
	}
}
