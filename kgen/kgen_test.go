// SPDX-License-Identifier: GPL-2.0-only

package kgen_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]kgen.Generation{
		"6.1": kgen.Linux6_1, "6.12": kgen.Linux6_12, "7.2": kgen.Linux7_2,
		"6.1.0-57-amd64": kgen.Linux6_1, "6.12.117+deb13-arm64": kgen.Linux6_12, "7.2.13": kgen.Linux7_2,
	} {
		g, err := kgen.Parse(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, g, in)
	}
	for _, in := range []string{"6.6", "5.15", "7", "", "six"} {
		_, err := kgen.Parse(in)
		assert.True(t, errors.Is(err, kgen.ErrUnknown), "%q: %v", in, err)
		assert.ErrorContains(t, err, "klpresolve knows 6.1, 6.12, 7.2")
	}
}

func TestForRelease(t *testing.T) {
	for _, tc := range []struct {
		release string
		gen     kgen.Generation
		exact   bool
	}{
		{"5.15.0-100-generic", kgen.Linux6_1, false},
		{"6.1.0-57-amd64", kgen.Linux6_1, true},
		{"6.3.13", kgen.Linux6_1, false},
		{"6.4", kgen.Linux6_12, false},
		{"6.12.117+deb13-amd64", kgen.Linux6_12, true},
		{"6.14.11", kgen.Linux6_12, false},
		{"6.15.0-rc1", kgen.Linux7_2, false},
		{"6.18.44-firecracker", kgen.Linux7_2, false},
		{"7.2.13+deb14-arm64", kgen.Linux7_2, true},
		{"8.0", kgen.Linux7_2, false},
	} {
		e, err := kgen.ForReleaseString(tc.release, kgen.FromRelease, "")
		require.NoError(t, err)
		assert.Equal(t, tc.gen, e.Generation, tc.release)
		assert.Equal(t, tc.exact, e.Exact, tc.release)
		if tc.exact {
			assert.Empty(t, e.Note())
		} else {
			assert.Contains(t, e.Note(), "is not a generation klpresolve knows exactly (6.1, 6.12, 7.2): it is judged by Linux "+tc.gen.String()+"'s rules")
		}
	}
	_, err := kgen.ForReleaseString("vmlinuz", kgen.FromRelease, "")
	assert.ErrorContains(t, err, `"vmlinuz" is not a kernel release`)
	assert.Equal(t, "Linux 6.12 (6.12.117+deb13-amd64, from the kernel image's banner)",
		kgen.Evidence{Generation: kgen.Linux6_12, Release: "6.12.117+deb13-amd64", Source: kgen.FromImage, Exact: true}.String())
	assert.Equal(t, "Linux 6.1 (assumed: nothing tells)", kgen.Assume().String())
	assert.Equal(t, "nothing tells the kernel's generation (--kernel-version, a kernel image, --root, its configuration or its symbols): Linux 6.1's rules are applied", kgen.Assume().Note())
}

// TestFromSymbols: the telling symbols, on the real kernels of each
// generation (their images' own kallsyms) and the corpus's 6.18 host:
// every one is told its own generation's (the 6.18 host 7.2's, whose
// span holds it).
func TestFromSymbols(t *testing.T) {
	check := func(t *testing.T, path string, want kgen.Generation) {
		ix, err := kallsyms.Open(path, kallsyms.Options{})
		require.NoError(t, err)
		e, ok := kgen.FromSymbols(func(name string) bool { _, ok := ix.Find(kallsyms.Vmlinux, name, 1); return ok })
		require.True(t, ok)
		assert.Equal(t, want, e.Generation)
		assert.Equal(t, kgen.FromKallsyms, e.Source)
		assert.Empty(t, e.Note())
	}
	t.Run("6.1", func(t *testing.T) {
		for _, arch := range []string{"amd64", "arm64"} {
			check(t, testutil.Corpus(t, arch+"/kallsyms-6.1.0-57-"+arch+".txt"), kgen.Linux6_1)
		}
	})
	for _, gen := range []kgen.Generation{kgen.Linux6_12, kgen.Linux7_2} {
		for _, arch := range []string{"amd64", "arm64"} {
			t.Run(gen.String()+"/"+arch, func(t *testing.T) {
				testutil.LightKernel(t, gen.String(), arch)
				_, img := testutil.DebianKernel(t, gen.String(), arch)
				check(t, img, gen)
			})
		}
	}
	t.Run("6.18", func(t *testing.T) {
		check(t, testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt"), kgen.Linux7_2)
	})
	_, ok := kgen.FromSymbols(func(string) bool { return false })
	assert.False(t, ok)
}
