// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// info describes a module without a kernel, and fails on what every
// kernel refuses.
func TestInfo(t *testing.T) {
	code, out, _ := runCLI(t, "info", fixture("klp-build.ko"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "livepatch sections (1):\n  .klp.rela.vmlinux..text.livepatch_vfs_read  vmlinux  1 relocation\n")
	assert.Contains(t, out, "livepatch symbols (1): .klp.sym.vmlinux.vfs_read,0\nobjects (.init.klp_funcs): vmlinux, ext4, xfs\npatched functions (.init.klp_funcs, 4):\n  vmlinux:vfs_read,0             declared at .init.klp_funcs+0x30\n")
	assert.True(t, strings.HasSuffix(out, "OK: nothing refused on every kernel; resolve it against one to know the rest\n"))
	assert.NotContains(t, out, "depends on:")

	// A module that uses other modules' exports (modpost's depends=).
	top := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "deps", "klpdep-top.ko")
	code, out, _ = runCLI(t, "info", top)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\ndepends on: klpdep_base, klpdep_mid (modprobe loads them first; --modules lays them out from their files)\n")
	code, out, _ = runCLI(t, "info", top, "--format", "json")
	assert.Equal(t, 0, code, out)
	var dj struct{ Depends []string }
	require.NoError(t, json.Unmarshal([]byte(out), &dj))
	assert.Equal(t, []string{"klpdep_base", "klpdep_mid"}, dj.Depends)

	code, out, _ = runCLI(t, "info", fixture("err-vmlinux-from-module.ko"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: section .klp.rela.ext4..text.livepatch_vfs_read, relocation against .klp.sym.vmlinux.vfs_read,0\n  kernel: invalid access to vmlinux symbol 'vfs_read' from module-specific livepatch relocation section\n")
	assert.Contains(t, out, "patched functions: none found")
	assert.True(t, strings.HasSuffix(out, "FAILED: 1 problem on every kernel\n"))

	var j struct {
		Name, Format, FuncSource string
		Objects                  []string
		Funcs                    []struct {
			Object, Name, Declared string
			Sympos                 uint64
			Error                  *struct{ Kind string }
		}
		Errors int
	}
	code, out, _ = runCLI(t, "info", fixture("klp-patch-broken.ko"), "--format", "json")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, "klp_patch", j.Name)
	assert.Equal(t, []string{"vmlinux", "ext4", "xfs", "nfs"}, j.Objects)
	require.Len(t, j.Funcs, 7)
	require.NotNil(t, j.Funcs[4].Error)
	assert.Equal(t, "duplicate", j.Funcs[4].Error.Kind)
	assert.Nil(t, j.Funcs[2].Error, "not found is a kernel's answer, not every kernel's")
	assert.Equal(t, 1, j.Errors)

	// A built patch module without livepatch=Y: refused on every kernel.
	data, err := os.ReadFile(fixture("livepatch-sample.ko"))
	require.NoError(t, err)
	i := bytes.Index(data, []byte("livepatch=Y\x00"))
	require.Positive(t, i)
	copy(data[i:], "livepatcX=Y")
	mod := filepath.Join(t.TempDir(), "unmarked.ko")
	require.NoError(t, os.WriteFile(mod, data, 0o644))
	code, out, _ = runCLI(t, "info", mod)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: the kernel refuses the module\n  kernel: module livepatch_sample is not marked as a livepatch module\n")
}

// info says whether a module is signed: Debian's are, the fixtures not.
func TestInfoSignature(t *testing.T) {
	md4 := testutil.Corpus(t, "amd64/modules/md4.ko")
	code, out, _ := runCLI(t, "info", md4)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\nsignature: PKCS#7, 681 bytes (whether a kernel trusts its key, only that kernel can tell)\n")
	code, out, _ = runCLI(t, "info", md4, "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\"signature\": {\n    \"bytes\": 681\n  }")
	code, out, _ = runCLI(t, "info", fixture("livepatch-sample.ko"), "--format", "json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"signature": null`)
}
