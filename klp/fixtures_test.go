// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the fixtures in testdata/klp from the objects testdata/klp/Makefile compiles")

// The symbols of testdata/klp/patch.c, converted for the Debian
// 6.1.0-57-amd64 kernel of the corpus.
var sampleSymbols = []ConvertSymbol{
	{Object: "vmlinux", Name: "vfs_read", Pos: 0},
	{Object: "vmlinux", Name: "jiffies", Pos: 0},
	{Object: "vmlinux", Name: "type_show", Pos: 3},
	{Object: "ext4", Name: "ext4_read_inode_bitmap", Pos: 0},
	{Object: "xfs", Name: "xfs_iget", Pos: 0},
}

// fixtureVariants: one module per kernel error, each a small change of the
// sample.
var fixtureVariants = []struct {
	file  string
	syms  []ConvertSymbol
	hooks *convertHooks
	obj   string // the object converted; patch.o when empty
}{
	{"livepatch-sample.ko", sampleSymbols, nil, ""},
	{"err-not-livepatch.ko", sampleSymbols, &convertHooks{keepUndef: map[string]bool{"vfs_read": true}}, ""},
	{"err-bad-name.ko", sampleSymbols, &convertHooks{rawName: map[string]string{"vfs_read": ".klp.sym.vmlinux.vfs_read"}}, ""},
	{"err-ambiguous.ko", replace(sampleSymbols, ConvertSymbol{Object: "vmlinux", Name: "type_show", Pos: 0}), nil, ""},
	{"err-position.ko", replace(sampleSymbols, ConvertSymbol{Object: "vmlinux", Name: "type_show", Pos: 18}), nil, ""},
	{"err-vmlinux-from-module.ko", sampleSymbols, &convertHooks{sectionObj: map[string]string{"vfs_read": "ext4"}}, ""},
	{"err-not-found.ko", append(append([]ConvertSymbol(nil), sampleSymbols...), ConvertSymbol{Object: "vmlinux", Name: "no_such_function"}), nil, ""},
	{"err-object-name-too-long.ko", sampleSymbols, &convertHooks{sectionObj: map[string]string{"xfs_iget": "a_module_name_that_is_longer_than_fifty_five_bytes_xxxxxxx"}}, ""},
	// Patched functions (klp-patch.c, klp-build.c).
	{"klp-patch.ko", vfsRead, nil, "klp-patch.o"},
	{"klp-patch-broken.ko", vfsRead, nil, "klp-patch-broken.o"},
	{"klp-build.ko", vfsRead, nil, "klp-build.o"},
	// Relocations into the made-up module xfs (modules/xfs.ko).
	{"order-patch.ko", orderSymbols, &convertHooks{rawName: orderNames}, "order-patch.o"},
}

// order-patch.c's externs, and the .klp.sym names they get (each a case
// of TestTargetResolve).
var (
	orderSymbols = []ConvertSymbol{{Object: "xfs", Name: "p_iget"}, {Object: "xfs", Name: "p_setup0"},
		{Object: "xfs", Name: "p_setup1"}, {Object: "xfs", Name: "p_setup2"}, {Object: "xfs", Name: "p_lookup0"},
		{Object: "xfs", Name: "p_missing"}, {Object: "xfs", Name: "p_mount1"}, {Object: "xfs", Name: "p_stats"}}
	orderNames = map[string]string{
		"p_iget": ".klp.sym.xfs.xfs_iget,0", "p_setup0": ".klp.sym.xfs.xfs_setup,0",
		"p_setup1": ".klp.sym.xfs.xfs_setup,1", "p_setup2": ".klp.sym.xfs.xfs_setup,2",
		"p_lookup0": ".klp.sym.xfs.xfs_lookup,0", "p_missing": ".klp.sym.xfs.xfs_igett,0",
		"p_mount1": ".klp.sym.xfs.xfs_mount,1", "p_stats": ".klp.sym.xfs.xfs_stats,0",
	}
)

var vfsRead = []ConvertSymbol{{Object: "vmlinux", Name: "vfs_read"}}

func replace(syms []ConvertSymbol, c ConvertSymbol) []ConvertSymbol {
	out := append([]ConvertSymbol(nil), syms...)
	for i := range out {
		if out[i].Name == c.Name {
			out[i] = c
		}
	}
	return out
}

func fixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "klp", name)
}

// TestGenerateFixtures rebuilds testdata/klp/*.ko from patch.o when run
// with -update (make fixtures); otherwise it checks that the committed
// fixtures are what the current converter writes.
func TestGenerateFixtures(t *testing.T) {
	for _, v := range fixtureVariants {
		name := v.obj
		if name == "" {
			name = "patch.o"
		}
		obj, err := os.ReadFile(fixture(name))
		require.NoError(t, err)
		out, err := convert(name, obj, v.syms, v.hooks)
		require.NoError(t, err, v.file)
		if *update {
			require.NoError(t, os.WriteFile(fixture(v.file), out, 0o644))
			continue
		}
		have, err := os.ReadFile(fixture(v.file))
		require.NoError(t, err)
		require.Equal(t, have, out, "%s is stale: run 'make fixtures'", v.file)
	}
}

func readFixture(name string) ([]byte, error) { return os.ReadFile(fixture(name)) }
