// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"bytes"
	"debug/elf"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

const (
	debian57 = "6.1.0-57-amd64 SMP preempt mod_unload modversions "
	debian47 = "6.1.0-47-amd64 SMP preempt mod_unload modversions "
	debianRT = "6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions "
	// A kernel without CONFIG_MODVERSIONS (no "modversions" word).
	plain57 = "6.1.0-57-amd64 SMP preempt mod_unload "
	plain47 = "6.1.0-47-amd64 SMP preempt mod_unload "
)

func TestModversions(t *testing.T) {
	assert.True(t, Modversions(debian57))
	assert.True(t, Modversions("6.1.0-57-arm64 SMP mod_unload modversions aarch64"))
	assert.False(t, Modversions(plain57))
	assert.False(t, Modversions("modversions"), "the release is not a configuration word")
	assert.False(t, Modversions(""))
}

// same_magic(): with __versions on a CONFIG_MODVERSIONS kernel, from the
// first space on; otherwise the whole strings, byte for byte.
func TestSameMagic(t *testing.T) {
	for _, c := range []struct {
		module, kernel string
		versions, same bool
	}{
		{debian57, debian57, true, true},
		{debian57, debian57, false, true},
		{debian57, debian47, true, true},   // the release skipped
		{debian57, debian47, false, false}, // no __versions: compared whole
		{debian57, debianRT, true, false},  // preempt against preempt_rt
		{plain57, plain47, true, false},    // the kernel has no MODVERSIONS: whole
		{plain57, plain57, true, true},
		{debian57, strings.TrimSuffix(debian57, " "), true, false}, // the trailing space counts
		{"6.1.0-57-amd64", "6.1.0-47-amd64 modversions", true, false},
		{"6.1.0-57-amd64", "6.1.0-47-amd64", true, false}, // kernel: no MODVERSIONS
		{"6.1.0-57-amd64", "6.1.0-57-amd64", true, true},
		{"", "", true, true},
		{"x modversions", "y modversions", true, true},
	} {
		assert.Equal(t, c.same, SameMagic(c.module, c.kernel, c.versions), "%q against %q, __versions %v", c.module, c.kernel, c.versions)
	}
}

func TestCheckVermagic(t *testing.T) {
	m := Module{Name: "fix", Vermagic: debian57, HasVermagic: true, HasVersions: true}
	g := CheckVermagic(m, debian47)
	assert.True(t, g.OK())
	assert.True(t, g.ReleaseSkipped)
	assert.False(t, g.Forced)
	assert.Equal(t, debian57, g.Module)
	assert.Equal(t, debian47, g.Kernel)

	g = CheckVermagic(m, debianRT)
	require.False(t, g.OK())
	assert.True(t, errors.Is(g.Problem, ErrVermagic))
	assert.Equal(t, "fix: version magic '"+debian57+"' should be '"+debianRT+"'", g.Problem.Error())
	d := g.Problem.Diagnostic()
	assert.Equal(t, diag.KindVermagic, d.Kind)
	assert.Equal(t, diag.Error, d.Severity)
	assert.Equal(t, g.Problem.Message, d.Kernel)
	assert.Empty(t, d.Location.Symbol, "the vermagic is not a symbol")
	assert.Equal(t, diag.KindSymbolVersion, (&Problem{Symbol: "seq_printf", Err: ErrVersionMismatch}).Diagnostic().Kind)

	m.HasVersions = false
	g = CheckVermagic(m, debian47)
	require.False(t, g.OK())
	assert.False(t, g.ReleaseSkipped)
	assert.Equal(t, "fix: version magic '"+debian57+"' should be '"+debian47+"'", g.Problem.Message)

	// No vermagic at all: through only by force, not a Problem.
	g = CheckVermagic(Module{Name: "fix", HasVersions: true}, debian57)
	assert.True(t, g.OK())
	assert.True(t, g.Forced)
	// An empty one is one: get_modinfo() finds it, same_magic() refuses it.
	g = CheckVermagic(Module{Name: "fix", HasVermagic: true}, debian57)
	assert.False(t, g.Forced)
	assert.False(t, g.OK())
}

// modinfoVermagic reads a module's vermagic as the tests see it: the
// first "vermagic=" string of its .modinfo.
func modinfoVermagic(t *testing.T, path string) string {
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	s := f.Section(".modinfo")
	require.NotNil(t, s, path)
	data, err := s.Data()
	require.NoError(t, err)
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("vermagic=")); ok {
			return string(v)
		}
	}
	t.Fatalf("%s: no vermagic", path)
	return ""
}

// Debian's own modules: every module of an architecture's corpus carries
// its kernel's vermagic, so each is taken with another's as the kernel's;
// another architecture's is refused; another release of the same
// configuration is taken only because the modules have __versions.
func TestCorpusVermagic(t *testing.T) {
	magic := map[string]string{}
	for _, arch := range []string{"amd64", "arm64", "armhf"} {
		dir := testutil.Corpus(t, arch+"/modules")
		kos, err := filepath.Glob(filepath.Join(dir, "*.ko"))
		require.NoError(t, err)
		require.NotEmpty(t, kos)
		first := modinfoVermagic(t, kos[0])
		for _, ko := range kos {
			v := modinfoVermagic(t, ko)
			g := CheckVermagic(Module{Name: filepath.Base(ko), Vermagic: v, HasVermagic: true, HasVersions: true}, first)
			assert.True(t, g.OK(), "%s: %v", ko, g.Problem)
			assert.Equal(t, first, v, ko)
		}
		magic[arch] = first
	}
	assert.True(t, strings.HasPrefix(magic["amd64"], "6.1.0-57-amd64 "), magic["amd64"])
	assert.True(t, strings.HasSuffix(magic["arm64"], " aarch64"), magic["arm64"])
	g := CheckVermagic(Module{Name: "m", Vermagic: magic["amd64"], HasVermagic: true, HasVersions: true}, magic["arm64"])
	require.False(t, g.OK())
	assert.ErrorIs(t, g.Problem, ErrVermagic)

	// 6.1.0-57's modules on a 6.1.0-47 kernel of the same configuration:
	// the release is skipped with __versions, and only then.
	other := strings.Replace(magic["amd64"], "-57-", "-47-", 1)
	require.NotEqual(t, magic["amd64"], other)
	m := Module{Name: "m", Vermagic: magic["amd64"], HasVermagic: true, HasVersions: true}
	assert.True(t, CheckVermagic(m, other).OK())
	m.HasVersions = false
	assert.False(t, CheckVermagic(m, other).OK())
}
