// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func TestPLTCommand(t *testing.T) {
	thumb := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "thumb.o")
	code, out, _ := runCLI(t, "plt", thumb)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "thumb (arm), kernel mode")
	assert.Regexp(t, `\.rel\.text\s+core\s+8\s+8\s+6\s+1\s+2\s+6`, out)
	assert.Contains(t, out, ".plt:      9 entries, sh_size 128 (2 fixed ftrace slots included)")
	assert.Contains(t, out, ".init.plt: 5 entries, sh_size 128")

	// Flags after the positional argument; JSON with the expected-plt.tsv
	// meanings.
	code, out, _ = runCLI(t, "plt", thumb, "--mode", "optimal", "--format", "json")
	require.Equal(t, 0, code)
	var j struct {
		Module, Arch, Mode string
		PLTCore            int    `json:"plt_core"`
		PLTInit            int    `json:"plt_init"`
		SizeCore           uint64 `json:"plt_sh_size_core"`
		Sections           []struct{ Name, Region string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "thumb", j.Module)
	assert.Equal(t, "optimal", j.Mode)
	assert.Equal(t, []int{6, 5}, []int{j.PLTCore, j.PLTInit})
	assert.Equal(t, uint64(128), j.SizeCore)
	assert.Equal(t, "init", j.Sections[2].Region)

	code, out, _ = runCLI(t, "plt", filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o"), "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"got": 7`)

	// A big-endian module says so (its Arch is the little-endian one's);
	// it counts what its little-endian build counts.
	for _, c := range []struct{ obj, head, json string }{
		{"arm64be.o", "arm64be (arm64 big-endian), kernel mode", `"big_endian": true`},
		{"arm64.o", "arm64 (arm64), kernel mode", ""},
	} {
		obj := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "link", c.obj)
		code, out, _ = runCLI(t, "plt", obj)
		require.Equal(t, 1, code, "ld's objects have no PLT sections: refused")
		assert.Contains(t, out, c.head)
		assert.Contains(t, out, ".plt:      3 entries")
		code, out, _ = runCLI(t, "plt", obj, "--format", "json")
		require.Equal(t, 1, code)
		if c.json != "" {
			assert.Contains(t, out, c.json)
		} else {
			assert.NotContains(t, out, "big_endian")
		}
		code, out, _ = runCLI(t, "info", obj, "--format", "json")
		require.Equal(t, 1, code, "and info says the loader refuses them")
		assert.Contains(t, out, `"no_plt_section"`)
		assert.Contains(t, out, "module PLT section(s) missing")
		assert.Equal(t, c.json != "", strings.Contains(out, `"big_endian": true`), out)
	}

	code, _, errs := runCLI(t, "plt", thumb, "--mode", "fast")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `unknown mode "fast"`)
	code, _, errs = runCLI(t, "plt", fixture("patch.c"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "patch.c: not an ELF file")
}

func TestPLTCommandCorpus(t *testing.T) {
	md4 := testutil.Corpus(t, "arm64/modules/md4.ko")
	code, out, _ := runCLI(t, "plt", md4, "--erratum-843419")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "md4 (arm64), kernel mode, erratum 843419 workaround")
	assert.Contains(t, out, ".plt:      6 entries, sh_size 84") // expected-plt.tsv: plt_core_erratum 6

	// Without KASLR: no branch entry, and so no erratum slack either (md4
	// has no ADRP that needs a veneer); the spare slot stays.
	code, out, _ = runCLI(t, "plt", md4, "--no-kaslr", "--erratum-843419")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "md4 (arm64), kernel mode, erratum 843419 workaround, no KASLR: no branch PLT entries")
	assert.Contains(t, out, ".plt:      0 entries, sh_size 12")
	assert.Contains(t, out, ".init.plt: 0 entries, sh_size 12")
	assert.Regexp(t, `all sections +24 +7 +7 +0 +0 +0`, out) // the 7 branches are still listed
}
