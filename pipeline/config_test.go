// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/kconfig"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// TestConfigLinkOptions: what each configuration decides of the link,
// where the options leave it at its default; what they give stays.
func TestConfigLinkOptions(t *testing.T) {
	cfg := cfg(t)
	for _, tc := range []struct {
		name string
		cfg  *Config
		in   modplt.LinkOptions
		want modplt.LinkOptions
	}{
		{"arm64 64K, no KASLR", cfg("CONFIG_ARM64=y", "CONFIG_ARM64_64K_PAGES=y", "# CONFIG_RANDOMIZE_BASE is not set", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{PageSize: 64 << 10, NoRandomizeBase: true, NoKallsymsAll: true}},
		{"arm64 16K, KASLR", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_ARM64=y", "CONFIG_ARM64_16K_PAGES=y", "CONFIG_RANDOMIZE_BASE=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{PageSize: 16 << 10}},
		{"arm64, a page size given", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_ARM64=y", "CONFIG_ARM64_64K_PAGES=y", "CONFIG_RANDOMIZE_BASE=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{PageSize: 4 << 10, NoRandomizeBase: true}, modplt.LinkOptions{PageSize: 4 << 10, NoRandomizeBase: true}},
		{"ppc64 4K, no module unload", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_PPC64=y", "CONFIG_PPC_4K_PAGES=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{PageSize: 4 << 10, NoModuleUnload: true}},
		{"ppc64 64K", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_PPC64=y", "CONFIG_PPC_64K_PAGES=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{PageSize: 64 << 10}},
		{"s390 without expolines", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_S390=y", "# CONFIG_EXPOLINE is not set", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{NoExpoline: true}},
		{"arm, unwind, 2G split", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_ARM=y", "CONFIG_ARM_UNWIND=y", "CONFIG_VMSPLIT_2G=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{ARMUnwindText: true}},
		{"arm, unwind, 3G split", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_ARM=y", "CONFIG_ARM_UNWIND=y", "CONFIG_VMSPLIT_3G=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{}},
		{"s390 with expolines", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_S390=y", "CONFIG_EXPOLINE=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{}, modplt.LinkOptions{}},
		{"x86_64 (no RANDOMIZE_BASE or EXPOLINE meaning)", cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_X86_64=y", "CONFIG_MODULE_UNLOAD=y"),
			modplt.LinkOptions{Base: 0xffffffffc0000000}, modplt.LinkOptions{Base: 0xffffffffc0000000}},
	} {
		assert.Equal(t, tc.want, tc.cfg.LinkOptions(tc.in), tc.name)
	}
	p := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(p, []byte("CONFIG_PPC64=y\nCONFIG_PPC_4K_PAGES=y\nCONFIG_MODULE_UNLOAD=y\n"), 0o644))
	c, err := OpenConfig(p)
	require.NoError(t, err)
	assert.Equal(t, p, c.File())
	assert.Equal(t, uint64(4<<10), c.LinkOptions(modplt.LinkOptions{}).PageSize)
	require.NoError(t, os.WriteFile(p, []byte("CONFIG_PPC64=y\nPPC_4K_PAGES=y\n"), 0o644))
	_, err = OpenConfig(p)
	assert.ErrorIs(t, err, ErrMalformedConfig)
	assert.ErrorContains(t, err, p+":2: not an option")
}

// cfg is a configuration of these lines.
func cfg(t *testing.T) func(lines ...string) *Config {
	return func(lines ...string) *Config {
		c, err := kconfig.Parse("config", strings.NewReader(strings.Join(lines, "\n")+"\n"))
		require.NoError(t, err)
		return &Config{c}
	}
}

// TestConfigApply: Apply sets the loader's checks from CONFIG_LIVEPATCH,
// CONFIG_STRICT_MODULE_RWX, arm's module PLTs and CONFIG_DYNAMIC_FTRACE, and the link options as LinkOptions does;
// Run then refuses (or not) as that kernel's loader would.
func TestConfigApply(t *testing.T) {
	cfg := cfg(t)
	o := cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_X86_64=y", "CONFIG_LIVEPATCH=y", "# CONFIG_STRICT_MODULE_RWX is not set").Apply(Options{Link: true})
	assert.True(t, o.Link)
	assert.Equal(t, &klp.KernelConfig{File: "config", Livepatch: true}, o.Config)
	assert.True(t, o.LinkOptions.NoModuleUnload, "no CONFIG_MODULE_UNLOAD")
	o = cfg("CONFIG_KALLSYMS_ALL=y", "CONFIG_ARM=y", "CONFIG_STRICT_MODULE_RWX=y", "CONFIG_MODULE_UNLOAD=y").Apply(Options{})
	assert.Equal(t, &klp.KernelConfig{File: "config", StrictModuleRWX: true}, o.Config)
	assert.False(t, o.LinkOptions.NoModuleUnload)
	o = cfg("CONFIG_ARM=y", "CONFIG_ARM_MODULE_PLTS=y").Apply(Options{})
	assert.Equal(t, &klp.KernelConfig{File: "config", ModulePLTs: true}, o.Config)
	o = cfg("CONFIG_ARM64=y", "CONFIG_ARM64_MODULE_PLTS=y", "CONFIG_RANDOMIZE_BASE=y").Apply(Options{})
	assert.True(t, o.Config.ModulePLTs)
	assert.False(t, o.Config.DynamicFtrace)
	o = cfg("CONFIG_ARM64=y", "CONFIG_ARM64_MODULE_PLTS=y", "CONFIG_DYNAMIC_FTRACE=y").Apply(Options{})
	assert.Equal(t, &klp.KernelConfig{File: "config", ModulePLTs: true, DynamicFtrace: true}, o.Config)
}

// TestS390ExpolinesFromSymbols: without the kernel's configuration, an
// s390 kernel's symbols say whether it has expolines: Debian's s390x
// (no CONFIG_EXPOLINE: the oracle's symbols, from its real System.map)
// has no thunk, so its modules' PLTs get none (the kernel oracle's
// layouts are 24 bytes off with one); a kernel with the thunks keeps the
// default.
func TestS390ExpolinesFromSymbols(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "oracle", "s390x", "kallsyms"))
	require.NoError(t, err)
	ix, err := kallsyms.ParseBytes("s390x kallsyms", text, kallsyms.Options{})
	require.NoError(t, err)
	assert.False(t, S390Expolines(ix))
	assert.True(t, kernelLinkOptions(elf.EM_S390, ix, modplt.LinkOptions{}).NoExpoline)
	assert.False(t, kernelLinkOptions(elf.EM_AARCH64, ix, modplt.LinkOptions{}).NoExpoline, "s390 only")

	with := append([]byte("0000000000abc000 T __s390_indirect_jump_r14\n0000000000abc100 t __s390_indirect_jump_r14\n"), text...)
	ix, err = kallsyms.ParseBytes("s390x kallsyms with expolines", with, kallsyms.Options{})
	require.NoError(t, err)
	assert.True(t, S390Expolines(ix), "two copies of the thunk count too")
	assert.False(t, kernelLinkOptions(elf.EM_S390, ix, modplt.LinkOptions{}).NoExpoline)
}
