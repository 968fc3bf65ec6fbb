// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
)

// TestTellGeneration: what tells a kernel's generation, most certain
// first: the generation asked for, a kernel image's banner, the root's
// release, the configuration's header, the kernel's own symbols; and
// with none of them, 6.1's rules, assumed, with a note.
func TestTellGeneration(t *testing.T) {
	dir := t.TempDir()
	plain, err := kallsyms.Open(filepath.Join(testutil.RepoRoot(), "testdata/kallsyms/example.txt"), kallsyms.Options{})
	require.NoError(t, err)
	corpus61, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfgPath, []byte("#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.6.30 Kernel Configuration\n#\nCONFIG_LIVEPATCH=y\n"), 0o644))
	cfg, err := OpenConfig(cfgPath)
	require.NoError(t, err)

	e := TellGeneration(plain, GenerationHints{})
	assert.Equal(t, kgen.Evidence{Generation: kgen.Linux6_1, Source: kgen.Assumed}, e)
	assert.NotEmpty(t, e.Note())

	e = TellGeneration(corpus61, GenerationHints{})
	assert.Equal(t, kgen.Linux6_1, e.Generation)
	assert.Equal(t, kgen.FromKallsyms, e.Source)

	e = TellGeneration(corpus61, GenerationHints{Config: cfg})
	assert.Equal(t, kgen.Evidence{Generation: kgen.Linux6_12, Release: "6.6.30", Source: kgen.FromConfig, Detail: cfgPath}, e, "the header before the symbols")
	assert.Contains(t, e.Note(), "Linux 6.6.30 is not a generation klpresolve knows exactly (6.1, 6.12, 7.2): it is judged by Linux 6.12's rules, which span it")

	e = TellGeneration(corpus61, GenerationHints{Config: cfg, Release: "7.2.13+deb14-amd64", ReleaseFrom: "/roots/a"})
	assert.Equal(t, kgen.Evidence{Generation: kgen.Linux7_2, Release: "7.2.13+deb14-amd64", Source: kgen.FromRelease, Detail: "/roots/a", Exact: true}, e)

	e = TellGeneration(corpus61, GenerationHints{Config: cfg, Release: "7.2.13", Asked: kgen.Linux6_1})
	assert.Equal(t, kgen.Evidence{Generation: kgen.Linux6_1, Source: kgen.FromFlag, Exact: true}, e)

	testutil.LightKernel(t, "6.12", "amd64")
	_, img := testutil.DebianKernel(t, "6.12", "amd64")
	ix, err := kallsyms.Open(img, kallsyms.Options{})
	require.NoError(t, err)
	e = TellGeneration(ix, GenerationHints{Release: "7.2.13"})
	assert.Equal(t, kgen.Evidence{Generation: kgen.Linux6_12, Release: testutil.DebianKernelRelease("6.12", "amd64"), Source: kgen.FromImage, Exact: true}, e, "the image's banner first")
}

// TestKernelTree: a kernel build directory's files, found where kbuild
// leaves them; vmlinux's own table where there is no System.map.
func TestKernelTree(t *testing.T) {
	tree := t.TempDir()
	_, err := KernelTree(tree)
	require.ErrorIs(t, err, ErrNoKernels)
	_, img := testutil.DebianKernel(t, "7.2", "arm64")
	require.NoError(t, os.Symlink(img, filepath.Join(tree, "vmlinux"))) // an Image stands in
	require.NoError(t, os.WriteFile(filepath.Join(tree, ".config"), []byte("# Linux/arm64 7.2.13 Kernel Configuration\n"), 0o644))
	k, err := KernelTree(tree)
	require.NoError(t, err)
	assert.Equal(t, Kernel{Symbols: filepath.Join(tree, "vmlinux"), Config: filepath.Join(tree, ".config"), Ftrace: filepath.Join(tree, "vmlinux"), Modules: []string{tree}}, k)
	require.NoError(t, os.WriteFile(filepath.Join(tree, "System.map"), []byte("ffff800080000000 T _text\n"), 0o644))
	k, err = KernelTree(tree)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(tree, "System.map"), k.Symbols, "a System.map first")
}

// TestMixedFleetOwnVerdicts: klp_demo, built by Kbuild for Debian's 6.1,
// against Debian's 6.1, 6.12 and 7.2 kernels as installed (their
// modules tell their struct module's size and vermagic): 6.1 takes it;
// 6.12 and 7.2 refuse it first for its struct module (896 bytes, theirs
// 1280), before the vermagic, which 7.2 (no modversions: the whole
// string) refuses as well and 6.12 (modversions: from the first space
// on) takes.
func TestMixedFleetOwnVerdicts(t *testing.T) {
	var kernels []Kernel
	for _, gen := range []string{"6.1", "6.12", "7.2"} {
		testutil.LightKernel(t, gen, "amd64")
		testutil.DebianKernelModules(t, gen, "amd64")
		root, _ := testutil.DebianKernel(t, gen, "amd64")
		ks, err := KernelsUnder(t.Context(), root)
		require.NoError(t, err)
		require.Len(t, ks, 1)
		kernels = append(kernels, ks[0])
	}
	m, err := klp.Open(repoFile("kbuild", "klp-demo.ko"))
	require.NoError(t, err)
	rows, _ := Fleet(t.Context(), m, kernels, FleetOptions{Workers: 2})
	require.Len(t, rows, 3)
	for i, want := range []kgen.Generation{kgen.Linux6_1, kgen.Linux6_12, kgen.Linux7_2} {
		assert.Equal(t, want, rows[i].Generation.Generation)
	}
	assert.True(t, rows[0].OK, rows[0].FirstError)
	const size = "module klp_demo: .gnu.linkonce.this_module section size must match the kernel's built struct module size at run time"
	for _, r := range rows[1:] {
		assert.False(t, r.OK)
		assert.Equal(t, diag.Kind("bad_module_struct"), r.FirstErrorKind)
		assert.Equal(t, size, r.FirstError)
	}
	require.NotNil(t, rows[1].Magic)
	assert.Nil(t, rows[1].Magic.Problem, "6.12 has modversions: the release is not compared")
	require.NotNil(t, rows[2].Magic)
	require.NotNil(t, rows[2].Magic.Problem)
	assert.Equal(t, "klp_demo: version magic '6.1.0-57-amd64 SMP preempt mod_unload modversions ' should be '7.2.13+deb14-amd64 SMP preempt mod_unload '", rows[2].Magic.Problem.Message)
}
