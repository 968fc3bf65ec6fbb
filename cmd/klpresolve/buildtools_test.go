// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// The build tools' modules (testdata/buildtools) through the main job
// with --link, against the kernel each was built for: every relocation
// of the module applied, none failed, no symbol unresolved; and check
// over both tools' kernels. (klp.TestBuildToolsOracle compares the
// answers with what the booted kernels did.)
func TestBuildToolModules(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "buildtools")
	kernels := map[string]string{}
	for _, tool := range []string{"klp-build", "kpatch-build"} {
		kernels[tool] = filepath.Join(dir, tool, "oracle", "kallsyms.xz")
		mods := []string{"cmdline", "ext4", "shadow", "sympos", "static-local"}
		if tool == "klp-build" {
			mods = append(mods, "meminfo")
		}
		for _, m := range mods {
			path := filepath.Join(dir, tool, "livepatch-"+m+".ko")
			t.Run(tool+"/"+m, func(t *testing.T) {
				code, out, stderr := runCLI(t, "--link", path, "--kallsyms", kernels[tool])
				require.Equal(t, 0, code, "%s%s", out, stderr)
				// Link applies every relocation of an allocated section,
				// the .klp.rela ones too.
				n := testutil.AllocRelocs(t, path)
				assert.Contains(t, out, fmt.Sprintf("link: %d relocations applied, 0 failed, 0 unresolved symbols", n))
				assert.Contains(t, out, "\nOK: ")
			})
		}
	}
	// klp-build's ext4 module over both kernels: on the 6.12 one, another
	// release, its module-object sympos is one too many (ext4 has four
	// ext4_blocks_count there, five in 7.2), and it needs a function 6.12
	// does not have.
	code, out, _ := runCLI(t, "check", filepath.Join(dir, "klp-build", "livepatch-ext4.ko"),
		"--kallsyms", kernels["klp-build"], "--kallsyms", kernels["kpatch-build"])
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "2 kernels: 1 OK, 1 failed")
	assert.Regexp(t, `kpatch-build/oracle/kallsyms.xz +6\.12 +2 +0 +1 +symbol position 5 for symbol 'ext4_blocks_count' in object 'ext4' not found\n`, out)
	assert.Contains(t, out, `(first: klp_find_section_by_name, "Unknown symbol")`)
	// The main job says what to change: the build.
	code, out, _ = runCLI(t, filepath.Join(dir, "klp-build", "livepatch-ext4.ko"), "--kallsyms", kernels["kpatch-build"])
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "  livepatch: symbol position 5 for symbol 'ext4_blocks_count' in object 'ext4' not found\n"+
		`  help: ext4 has only 4 symbols named "ext4_blocks_count" (valid sympos: 0 if unique, 1..4); a position counts the name's copies in the kernel the patch was built against, and this kernel has fewer: build the patch against this kernel's own build`+"\n")
}

// kpatch-build's intermediate output.o: the main job refuses it and
// says how to convert it; convert writes create-klp-module's sections,
// and the result resolves against the kernel it was built for.
func TestBuildToolIntermediate(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "buildtools", "kpatch-build")
	kernel := filepath.Join(dir, "oracle", "kallsyms.xz")
	obj := filepath.Join(dir, "livepatch-static-local.output.o")
	code, out, stderr := runCLI(t, obj, "--kallsyms", kernel)
	assert.Equal(t, 1, code, "%s%s", out, stderr)
	assert.Contains(t, out, "kernel: (missing .modinfo section or name field): No module found in object")
	assert.Contains(t, out, "its 3 relocations are in .kpatch.relocations, which no kernel reads")

	conv := filepath.Join(t.TempDir(), "livepatch-static-local.o")
	code, out, stderr = runCLI(t, "convert", obj, "-o", conv)
	require.Equal(t, 0, code, "%s%s", out, stderr)
	assert.Contains(t, out+stderr, "wrote "+conv+": 3 livepatch relocations in 1 .klp.rela section, as kpatch-build's create-klp-module writes them")
	code, out, stderr = runCLI(t, conv, "--kallsyms", kernel)
	require.Equal(t, 0, code, "%s%s", out, stderr)
	assert.Contains(t, out, ".klp.rela.vmlinux..text.get_next_ino  3 resolved")
	assert.Contains(t, out, "OK: 3 relocations: 3 resolved, 0 deferred, 0 errors; 1 patched function: 1 resolved")

	code, _, stderr = runCLI(t, "convert", obj, "-o", conv, "--symbol", "last_ino,1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "kpatch-build's intermediate object: its livepatch symbols are in .kpatch.symbols; convert it without --symbol")
}
