// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/symvers"
)

// writeSymvers writes a Module.symvers at path that exports vs, with the
// CRC of change (if any) one more than the module's, and returns path.
func writeSymvers(t *testing.T, path string, vs []symvers.Version, change string) string {
	var b strings.Builder
	for _, v := range vs {
		crc := v.CRC
		if v.Name == change {
			crc++
		}
		fmt.Fprintf(&b, "0x%08x\t%s\tvmlinux\tEXPORT_SYMBOL\t\n", crc, v.Name)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// --symvers: a Module.symvers written from klp_demo's own __versions
// (the loader takes it), then with seq_printf's CRC changed (it refuses
// that symbol: exit 1); a module without __versions (a warning); files
// that are not a Module.symvers (exit 2, before the kernel's symbols are
// read).
func TestSymversCLI(t *testing.T) {
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	m, err := klp.Open(ko)
	require.NoError(t, err)
	sm, err := m.Versions()
	require.NoError(t, err)
	dir := t.TempDir()
	// What klp_demo needs of a kernel: its livepatch symbols and the
	// functions it patches (xfs is not loaded).
	k := filepath.Join(dir, "kallsyms")
	require.NoError(t, os.WriteFile(k, []byte("ffffffff81000000 T start_kernel\n"+
		"ffffffff81000100 T klp_enable_patch\n"+
		"ffffffff81000200 T kallsyms_lookup_name\n"+
		"ffffffff81000300 t type_show\n"+
		"ffffffff81000400 t type_show\n"+
		"ffffffff81000500 t cmdline_proc_show\n"+
		"ffffffffc0000000 t ext4_has_free_clusters\t[ext4]\n"+
		"ffffffffc0000100 t ext4_statfs\t[ext4]\n"), 0o644))
	write := func(name, change string) string {
		return writeSymvers(t, filepath.Join(dir, name), sm.Versions, change)
	}
	good, bad := write("good.symvers", ""), write("bad.symvers", "seq_printf")

	code, out, _ := runCLI(t, ko, "--kallsyms", k, "--symvers", good)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("modversions: %d symbols checked against %s: the loader takes them all\n", len(sm.Versions), good))

	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--symvers", bad)
	assert.Equal(t, 1, code, out)
	var crc uint64
	for _, v := range sm.Versions {
		if v.Name == "seq_printf" {
			crc = v.CRC
		}
	}
	assert.Contains(t, out, "error: modversions: klp_demo: disagrees about version of symbol seq_printf\n"+
		fmt.Sprintf("  help: the module has %#08x for it, %s %#08x: ", crc, bad, crc+1))
	assert.Contains(t, out, "; the module loader refuses 1 symbol (modversions)\n")

	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--symvers", bad, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		Modversions struct {
			Symvers  string
			Checked  int
			Problems []struct {
				Symbol, Kind, Error string
				ModuleCRC           string `json:"module_crc"`
				KernelCRC           string `json:"kernel_crc"`
			}
		}
		Summary struct{ OK bool }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.Equal(t, bad, j.Modversions.Symvers)
	assert.Equal(t, len(sm.Versions), j.Modversions.Checked)
	require.Len(t, j.Modversions.Problems, 1)
	assert.Equal(t, "seq_printf", j.Modversions.Problems[0].Symbol)
	assert.Equal(t, "version_mismatch", j.Modversions.Problems[0].Kind)
	assert.Equal(t, "klp_demo: disagrees about version of symbol seq_printf", j.Modversions.Problems[0].Error)
	assert.Equal(t, fmt.Sprintf("%#08x", crc), j.Modversions.Problems[0].ModuleCRC)
	assert.Equal(t, fmt.Sprintf("%#08x", crc+1), j.Modversions.Problems[0].KernelCRC)
	assert.False(t, j.Summary.OK)

	// No __versions: loaded only by force.
	example := exampleKallsyms()
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", example, "--symvers", good)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "the loader takes them only by force\nwarning: modversions: the module has no __versions section")

	// info says what it was built for.
	code, out, _ = runCLI(t, "info", ko)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, fmt.Sprintf("built for: vermagic %q (check it with --vermagic, or --modules), %d symbol versions (check them with --symvers)\n", m.ModInfo("vermagic"), len(sm.Versions)))
	code, out, _ = runCLI(t, "info", ko, "--format", "json")
	assert.Equal(t, 0, code)
	var info struct {
		Vermagic       string
		SymbolVersions *int `json:"symbol_versions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.Contains(t, info.Vermagic, "6.1.0-57-amd64 SMP")
	require.NotNil(t, info.SymbolVersions)
	assert.Equal(t, len(sm.Versions), *info.SymbolVersions)
	code, out, _ = runCLI(t, "info", fixture("livepatch-sample.ko"))
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "built for")

	// Unusable: named, exit 2, whatever the kernel's symbols.
	code, _, errs := runCLI(t, ko, "--kallsyms", "/nonexistent", "--symvers", filepath.Join(dir, "none"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--symvers: open "+filepath.Join(dir, "none"))
	broken := filepath.Join(dir, "broken.symvers")
	require.NoError(t, os.WriteFile(broken, []byte("0x1\tseq_printf\tvmlinux\tEXPORT_SYMBOL\t\n0x1 x\n"), 0o644))
	code, _, errs = runCLI(t, ko, "--kallsyms", k, "--symvers", broken)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, broken+":2: 1 fields, not 5")
}

// link --symvers: Debian's md4.ko against a Module.symvers written from
// its own __versions (the loader takes it), then with one CRC changed.
func TestLinkSymvers(t *testing.T) {
	ko := testutil.Corpus(t, "amd64/modules/md4.ko")
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	m, err := klp.Open(ko)
	require.NoError(t, err)
	sm, err := m.Versions()
	require.NoError(t, err)
	require.NotEmpty(t, sm.Versions)
	dir := t.TempDir()
	write := func(name, change string) string {
		return writeSymvers(t, filepath.Join(dir, name), sm.Versions, change)
	}
	code, out, _ := runCLI(t, "link", ko, "--kallsyms", k, "--symvers", write("good", ""))
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("modversions: %d symbols checked against %s: the loader takes them all\nOK: md4 (x86_64) links: ", len(sm.Versions), filepath.Join(dir, "good")))

	bad := write("bad", "module_layout")
	code, out, _ = runCLI(t, "link", ko, "--kallsyms", k, "--symvers", bad)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "error: modversions: md4: disagrees about version of symbol module_layout\n")
	assert.Contains(t, out, "FAILED: md4 (x86_64) links: ")
	assert.Contains(t, out, "; the module loader refuses 1 symbol (modversions)\n")
	code, out, _ = runCLI(t, "link", ko, "--kallsyms", k, "--symvers", bad, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		OK          bool
		Modversions struct {
			Problems []struct{ Symbol, Kind string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	assert.False(t, j.OK)
	require.Len(t, j.Modversions.Problems, 1)
	assert.Equal(t, "module_layout", j.Modversions.Problems[0].Symbol)
	assert.Equal(t, "version_mismatch", j.Modversions.Problems[0].Kind)
}

// --vermagic, and the kernel's vermagic read from the --modules files:
// klp_demo (Debian 6.1.0-57's) against the corpus's modules of that build
// (taken), another release of that configuration (taken: it has
// __versions), the real-time flavour (refused: exit 1, in text and JSON);
// link --vermagic the same way.
func TestVermagicCLI(t *testing.T) {
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	m, err := klp.Open(ko)
	require.NoError(t, err)
	sm, err := m.Versions()
	require.NoError(t, err)
	magic := sm.Vermagic
	require.True(t, strings.HasPrefix(magic, "6.1.0-57-amd64 "), magic)
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	mods := testutil.Corpus(t, "amd64/modules")

	code, out, _ := runCLI(t, ko, "--kallsyms", k, "--modules", mods)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("vermagic: the kernel's is %q (from %s): the loader takes the module's\nOK: ", magic, filepath.Join(mods, "af_key.ko")))

	older := strings.Replace(magic, "-57-", "-47-", 1)
	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--vermagic", older)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("vermagic: the kernel's is %q (--vermagic): the loader takes the module's, %q: it compares what follows the release", older, magic))

	rt := strings.Replace(strings.Replace(magic, "-amd64", "-rt-amd64", 1), " preempt ", " preempt_rt ", 1)
	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--modules", mods, "--vermagic", rt)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, fmt.Sprintf("error: vermagic: klp_demo: version magic '%s' should be '%s'\n  help: the release is not compared", magic, rt))
	assert.Contains(t, out, "; the module loader refuses its vermagic\n")

	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--vermagic", rt, "--format", "json")
	assert.Equal(t, 1, code)
	var j struct {
		Summary  struct{ OK bool }
		Vermagic struct {
			Module, Kernel string
			ReleaseSkipped bool `json:"release_skipped"`
			Error          *string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.False(t, j.Summary.OK)
	assert.Equal(t, magic, j.Vermagic.Module)
	assert.Equal(t, rt, j.Vermagic.Kernel)
	assert.True(t, j.Vermagic.ReleaseSkipped)
	require.NotNil(t, j.Vermagic.Error)
	assert.Equal(t, fmt.Sprintf("klp_demo: version magic '%s' should be '%s'", magic, rt), *j.Vermagic.Error)

	code, out, _ = runCLI(t, ko, "--kallsyms", k, "--modules", mods, "--format", "json")
	assert.Equal(t, 0, code, out)
	var ok struct {
		Vermagic struct {
			KernelFrom string `json:"kernel_from"`
			Error      *string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ok), out)
	assert.Equal(t, filepath.Join(mods, "af_key.ko"), ok.Vermagic.KernelFrom)
	assert.Nil(t, ok.Vermagic.Error)

	code, out, _ = runCLI(t, "link", ko, "--kallsyms", k, "--vermagic", rt)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "error: vermagic: klp_demo: version magic ")
	assert.Contains(t, out, "; the module loader refuses its vermagic\n")
	code, out, _ = runCLI(t, "link", ko, "--kallsyms", k, "--vermagic", older)
	assert.Equal(t, 0, code, out)
}

// installedRoots lays two kernels out as installed, one folder each: the
// corpus's 6.1.0-57 with two of its modules (af_key.ko the first) and its
// headers' Module.symvers, and a 6.1.0-47 with that ABI's Module.symvers
// (its map borrowed from 6.1.0-57, which the corpus alone has) and no
// modules.
func installedRoots(t *testing.T) string {
	t.Helper()
	smap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	mods := testutil.Corpus(t, "amd64/modules")
	h57 := testutil.Headers(t, "6.1.0-57-amd64")
	h47 := testutil.Headers(t, "6.1.0-47-amd64")
	roots := t.TempDir()
	ln := func(target, rel string) {
		p := filepath.Join(roots, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	ln(smap, "57/boot/System.map-6.1.0-57-amd64")
	ln(filepath.Join(mods, "af_key.ko"), "57/lib/modules/6.1.0-57-amd64/kernel/net/key/af_key.ko")
	ln(filepath.Join(mods, "xfs.ko"), "57/lib/modules/6.1.0-57-amd64/kernel/fs/xfs/xfs.ko")
	ln(h57, "57/usr/src/linux-headers-6.1.0-57-amd64/Module.symvers")
	ln(smap, "47/boot/System.map-6.1.0-47-amd64")
	ln(h47, "47/usr/src/linux-headers-6.1.0-47-amd64/Module.symvers")
	return roots
}

// TestCheckRoot runs check --root on two kernels laid out as installed:
// the corpus's 6.1.0-57 with its modules and its headers' Module.symvers
// (the patch was built with them: taken), and one with 6.1.0-47's
// Module.symvers (its map borrowed from 6.1.0-57, which the corpus alone
// has) and no modules: the loader refuses module_layout's CRC there, and
// its vermagic goes unchecked.
func TestCheckRoot(t *testing.T) {
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	roots := installedRoots(t)
	k47 := filepath.Join(roots, "47/boot/System.map-6.1.0-47-amd64")
	k57 := filepath.Join(roots, "57/boot/System.map-6.1.0-57-amd64")

	code, out, _ := runCLI(t, "check", ko, "--root", filepath.Join(roots, "*"))
	assert.Equal(t, 1, code, out)
	assert.Regexp(t, `(?m)^`+k47+` +6\.1 +3 +4 +0 +klp_demo: disagrees about version of symbol module_layout$`, out)
	assert.Regexp(t, `(?m)^`+k57+` +6\.1 +3 +4 +0 +-$`, out)
	assert.Contains(t, out, "2 kernels: 1 OK, 1 failed")
	assert.Contains(t, out, "\nmodule loader: symbol versions checked on 2 of 2 kernels, vermagic on 1; it refuses the patch on 1 (rebuild the patch against that kernel's headers)\n")
	assert.Contains(t, out, "\nnote: vermagic not checked on 1 kernel without modules (lib/modules/RELEASE), which carry it: "+k47+"\n")
	assert.NotContains(t, out, "symbol versions not checked")

	code, out, _ = runCLI(t, "check", ko, "--root", filepath.Join(roots, "57"), "--format", "json")
	assert.Equal(t, 0, code, out)
	var j struct {
		Kernels []struct {
			Kernel      string
			Release     string
			OK          bool
			Modversions struct {
				Symvers  string
				Checked  int
				Problems []any
			}
			Vermagic struct {
				Kernel     string
				KernelFrom string `json:"kernel_from"`
				Error      *string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	require.Len(t, j.Kernels, 1)
	r := j.Kernels[0]
	assert.True(t, r.OK)
	assert.Equal(t, "6.1.0-57-amd64", r.Release)
	assert.Equal(t, filepath.Join(roots, "57/usr/src/linux-headers-6.1.0-57-amd64/Module.symvers"), r.Modversions.Symvers)
	assert.Equal(t, 6, r.Modversions.Checked)
	assert.Empty(t, r.Modversions.Problems)
	assert.Equal(t, "6.1.0-57-amd64 SMP preempt mod_unload modversions ", r.Vermagic.Kernel)
	assert.Equal(t, filepath.Join(roots, "57/lib/modules/6.1.0-57-amd64/kernel/net/key/af_key.ko"), r.Vermagic.KernelFrom)
	assert.Nil(t, r.Vermagic.Error)

	// JUnit: the loader's every refusal in the kernel's failure.
	code, out, _ = runCLI(t, "check", ko, "--root", filepath.Join(roots, "*"), "--format", "junit")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `<failure message="klp_demo: disagrees about version of symbol module_layout" type="symbol_version"><![CDATA[3 resolved, 4 deferred, 0 errors
error: symbol_version: klp_demo: disagrees about version of symbol module_layout
error: symbol_version: klp_demo: disagrees about version of symbol klp_enable_patch
error: symbol_version: klp_demo: disagrees about version of symbol seq_printf]]></failure>`)

	// A folder of roots given as one root; a pattern that matches none.
	code, _, errOut := runCLI(t, "check", ko, "--root", roots)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no kernel found")
	assert.Contains(t, errOut, "--root '"+filepath.Join(roots, "*")+"'")
	code, _, errOut = runCLI(t, "check", ko, "--root", filepath.Join(roots, "none*"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no kernel found in any folder it matches (0 matches)")
}

// TestLinkModules links klpdep_top (testdata/kbuild/deps) against a
// System.map, which lists no module: with --modules its two dependencies
// are laid out first, as modprobe loads them, and it links.
func TestLinkModules(t *testing.T) {
	smap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "deps")
	top := filepath.Join(dir, "klpdep-top.ko")

	code, out, _ := runCLI(t, "link", top, "--kallsyms", smap)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "FAILED: klpdep_top (x86_64): 16 relocations applied, 2 failed, 2 unresolved symbols\n")

	code, out, _ = runCLI(t, "link", top, "--kallsyms", smap, "--modules", dir)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "dependencies: 2 modules the kernel's symbols lack, laid out first from --modules, as modprobe loads them:\n")
	assert.Regexp(t, `(?m)^  klpdep_base +0xffffffffc0000000 +2 exports +links \(`+regexp.QuoteMeta(filepath.Join(dir, "klpdep-base.ko"))+`\)$`, out)
	assert.Regexp(t, `(?m)^  klpdep_mid +0xffffffffc00[0-9a-f]{5} +1 export +links \(`, out)
	assert.Contains(t, out, "vermagic: the kernel's is \"6.1.0-57-amd64 SMP preempt mod_unload modversions \" (from "+filepath.Join(dir, "klpdep-base.ko")+"): the loader takes the module's\n")
	assert.Contains(t, out, "OK: klpdep_top (x86_64) links: 18 relocations applied\n")

	// The note on dependencies the kernel lacks names only those not laid
	// out (the small example kallsyms lacks kernel functions too, so
	// something stays unresolved either way).
	example := exampleKallsyms()
	code, out, _ = runCLI(t, "link", top, "--kallsyms", example, "--modules", dir)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "unresolved: _printk\n")
	assert.NotContains(t, out, "the module depends on")
	code, out, _ = runCLI(t, "link", top, "--kallsyms", example, "--modules", filepath.Join(dir, "klpdep-mid.ko"))
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "(the module depends on klpdep_base (.modinfo depends=), which "+example+" does not have")

	code, out, _ = runCLI(t, "link", top, "--kallsyms", smap, "--modules", filepath.Join(dir, "klpdep-mid.ko"), "--format", "json")
	assert.Equal(t, 1, code, out)
	var j struct {
		OK           bool
		Unresolved   []string
		Dependencies []struct {
			Name, Path, Address string
			Exports             int
			Linked              bool
			Unresolved          []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.False(t, j.OK)
	assert.Equal(t, []string{"klpdep_base_secret"}, j.Unresolved)
	require.Len(t, j.Dependencies, 2)
	assert.Equal(t, "klpdep_base", j.Dependencies[0].Name)
	assert.Empty(t, j.Dependencies[0].Path, "no file of it")
	assert.Equal(t, "klpdep_mid", j.Dependencies[1].Name)
	assert.Equal(t, "0xffffffffc0000000", j.Dependencies[1].Address)
	assert.False(t, j.Dependencies[1].Linked)
	assert.Equal(t, []string{"klpdep_base_add"}, j.Dependencies[1].Unresolved)

	// The main job without --link: what insmod would refuse leaves out
	// what the dependencies export.
	code, out, _ = runCLI(t, top, "--kallsyms", smap)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "note: insmod would refuse 2 ordinary symbols (\"Unknown symbol\"); --link checks the whole module:\n  unresolved: klpdep_base_secret\n  unresolved: klpdep_mid_twice\n")
	code, out, _ = runCLI(t, top, "--kallsyms", smap, "--modules", dir)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "insmod would refuse")
	assert.Regexp(t, `(?m)^  klpdep_mid +0xffffffffc00[0-9a-f]{5} +1 export +links \(`, out)
}

// TestInstalledRoot runs the main job and link on one kernel as installed
// (--root): its map, modules, Module.symvers and the vermagic of its first
// module are used as --kallsyms, --modules, --symvers and --vermagic would
// be; flags given win; and the root's mistakes are usage errors that say
// what to give.
func TestInstalledRoot(t *testing.T) {
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	roots := installedRoots(t)
	r57, r47 := filepath.Join(roots, "57"), filepath.Join(roots, "47")
	sv57 := filepath.Join(r57, "usr/src/linux-headers-6.1.0-57-amd64/Module.symvers")
	sv47 := filepath.Join(r47, "usr/src/linux-headers-6.1.0-47-amd64/Module.symvers")
	afKey := filepath.Join(r57, "lib/modules/6.1.0-57-amd64/kernel/net/key/af_key.ko")
	const magic = "6.1.0-57-amd64 SMP preempt mod_unload modversions "

	code, out, _ := runCLI(t, ko, "--root", r57)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nkernel: 6.1.0-57-amd64 under "+r57+": modules "+filepath.Join(r57, "lib/modules/6.1.0-57-amd64")+"; Module.symvers "+sv57+"; no configuration (boot/config-RELEASE): the loader's defaults assumed"+noVmlinux+"\nkernel symbols: "+filepath.Join(r57, "boot/System.map-6.1.0-57-amd64")+"\n")
	assert.Contains(t, out, "  checked against "+filepath.Join(r57, "lib/modules/6.1.0-57-amd64/kernel/fs/xfs/xfs.ko")+": all 2 resolve")
	assert.Contains(t, out, "modversions: 6 symbols checked against "+sv57+": the loader takes them all\n")
	assert.Contains(t, out, "vermagic: the kernel's is \""+magic+"\" (from "+afKey+"): the loader takes the module's\n")

	code, out, _ = runCLI(t, ko, "--root", r47)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "kernel: 6.1.0-47-amd64 under "+r47+": no modules (lib/modules/RELEASE): what the patch defers to modules is not checked against their files, and they give no vermagic; Module.symvers "+sv47+"; no configuration (boot/config-RELEASE): the loader's defaults assumed"+noVmlinux+"\n")
	assert.Contains(t, out, "error: modversions: klp_demo: disagrees about version of symbol module_layout\n")
	assert.NotContains(t, out, "vermagic:")

	// Flags given win over the root's files.
	code, out, _ = runCLI(t, ko, "--root", r47, "--symvers", sv57, "--modules", filepath.Join(r57, "lib/modules"))
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "; Module.symvers "+sv57+"; no configuration (boot/config-RELEASE): the loader's defaults assumed"+noVmlinux+"\n")
	assert.Contains(t, out, "(from "+afKey+")")

	code, out, _ = runCLI(t, ko, "--root", r57, "--format", "json")
	assert.Equal(t, 0, code, out)
	var j struct {
		Kallsyms string
		Kernel   struct {
			Root, Release, Symbols, Symvers string
			Modules                         []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.Equal(t, filepath.Join(r57, "boot/System.map-6.1.0-57-amd64"), j.Kallsyms)
	assert.Equal(t, r57, j.Kernel.Root)
	assert.Equal(t, "6.1.0-57-amd64", j.Kernel.Release)
	assert.Equal(t, j.Kallsyms, j.Kernel.Symbols)
	assert.Equal(t, sv57, j.Kernel.Symvers)
	assert.Equal(t, []string{filepath.Join(r57, "lib/modules/6.1.0-57-amd64")}, j.Kernel.Modules)

	// link takes the same kernel.
	code, out, _ = runCLI(t, "link", ko, "--root", r57)
	assert.Equal(t, 0, code, out)
	assert.True(t, strings.HasPrefix(out, "kernel: 6.1.0-57-amd64 under "+r57+": "), out)
	assert.Contains(t, out, "modversions: 6 symbols checked against "+sv57+": the loader takes them all\n")
	assert.Contains(t, out, "(from "+afKey+")")
	code, out, _ = runCLI(t, "link", ko, "--root", r47, "--format", "json")
	assert.Equal(t, 1, code, out)
	var lj struct {
		OK     bool
		Kernel struct{ Release string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &lj), out)
	assert.False(t, lj.OK, "the loader refuses module_layout")
	assert.Equal(t, "6.1.0-47-amd64", lj.Kernel.Release)

	// Several kernels in one root: --release chooses.
	both := t.TempDir()
	for _, rel := range []string{"6.1.0-47-amd64", "6.1.0-57-amd64"} {
		require.NoError(t, os.MkdirAll(filepath.Join(both, "boot"), 0o755))
		require.NoError(t, os.Symlink(filepath.Join(r57, "boot/System.map-6.1.0-57-amd64"), filepath.Join(both, "boot", "System.map-"+rel)))
	}
	code, _, errOut := runCLI(t, ko, "--root", both)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "several kernels installed: 6.1.0-47-amd64, 6.1.0-57-amd64; choose one (--release)")
	code, out, _ = runCLI(t, ko, "--root", both, "--release", "6.1.0-47-amd64")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "kernel: 6.1.0-47-amd64 under "+both+": no modules")
	code, _, errOut = runCLI(t, ko, "--root", both, "--release", "6.1.0-99-amd64")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no kernel found of release 6.1.0-99-amd64; it has 6.1.0-47-amd64, 6.1.0-57-amd64")

	// Usage: a folder of roots; --kallsyms too; --release alone.
	code, _, errOut = runCLI(t, ko, "--root", roots)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "give one of them, such as --root "+r47+"; check --root '"+filepath.Join(roots, "*")+"' takes them all")
	code, _, errOut = runCLI(t, ko, "--root", r57, "--kallsyms", filepath.Join(r57, "boot/System.map-6.1.0-57-amd64"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--root and --kallsyms both give the kernel's symbols")
	code, _, errOut = runCLI(t, "link", ko, "--release", "6.1.0-57-amd64")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--release needs --root")
}

// TestKernelTree: a kernel build directory stands for the installed
// kernel: its System.map, Module.symvers, .config, release and modules.
func TestKernelTree(t *testing.T) {
	hdr := testutil.Headers(t, "6.1.0-57-amd64") // its Module.symvers
	tree := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "include/config"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "include/config/kernel.release"), []byte("6.1.0-57-amd64\n"), 0o644))
	require.NoError(t, os.Symlink(testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"), filepath.Join(tree, "System.map")))
	require.NoError(t, os.Symlink(hdr, filepath.Join(tree, "Module.symvers")))
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "fs/xfs"), 0o755))
	require.NoError(t, os.Symlink(testutil.Corpus(t, "amd64/modules/xfs.ko"), filepath.Join(tree, "fs/xfs/xfs.ko")))
	ko := filepath.Join(testutil.RepoRoot(), "testdata", "kbuild", "klp-demo.ko")
	code, out, _ := runCLI(t, ko, "--kernel-tree", tree)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "\nkernel: 6.1.0-57-amd64 built in "+tree+": modules "+tree+"; Module.symvers "+filepath.Join(tree, "Module.symvers")+"; no configuration")
	assert.Contains(t, out, "\nkernel symbols: "+filepath.Join(tree, "System.map")+"\n")
	assert.Contains(t, out, "\nkernel rules: Linux 6.1 (6.1.0-57-amd64, from the kernel's release)\n")
	assert.Contains(t, out, "checked against "+filepath.Join(tree, "fs/xfs/xfs.ko"))

	code, _, errs := runCLI(t, ko, "--kernel-tree", tree, "--root", "/")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--kernel-tree, --root and --kallsyms each give the kernel's symbols: give one")
	code, _, errs = runCLI(t, ko, "--kernel-tree", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "no System.map nor vmlinux (build the kernel first)")
}

// TestCheckKernelTree: check takes kernel build directories too.
func TestCheckKernelTree(t *testing.T) {
	tree := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tree, "System.map"), []byte("ffffffff81000000 T _text\nffffffff81000000 T vfs_read\n"), 0o644))
	code, out, _ := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernel-tree", tree)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, filepath.Join(tree, "System.map"))
	code, _, errs := runCLI(t, "check", fixture("livepatch-sample.ko"), "--kernel-tree", filepath.Join(tree, "nothing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--kernel-tree: ")
}
