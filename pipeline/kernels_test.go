// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/symvers"
)

// put writes data to root/rel, making its folders.
func put(t *testing.T, root, rel, data string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

// link makes root/rel a symbolic link to target, making its folders.
func link(t *testing.T, target, root, rel string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.Symlink(target, p))
	return p
}

// TestKernelsUnder finds kernels in the layouts distributions install
// them in: Debian's (boot/System.map-RELEASE, lib/modules/RELEASE, the
// headers' Module.symvers under usr/src), Fedora's and RHEL's
// (boot/symvers-RELEASE.gz, kernel-devel under usr/src/kernels, the map in
// lib/modules/RELEASE on merged /usr), and a build link that points at an
// absolute path, taken inside the root; Debian's placeholder System.map
// in /boot gives way to its -dbg package's.
func TestKernelsUnder(t *testing.T) {
	const sm = "ffffffff81000000 T _text\n"
	root := t.TempDir()
	// Debian: map, modules and headers.
	deb := put(t, root, "boot/System.map-6.1.0-57-amd64", sm)
	put(t, root, "lib/modules/6.1.0-57-amd64/kernel/fs/xfs/xfs.ko", "")
	debSymvers := put(t, root, "usr/src/linux-headers-6.1.0-57-amd64/Module.symvers", "")
	debConfig := put(t, root, "boot/config-6.1.0-57-amd64", "CONFIG_X86_64=y\n")
	put(t, root, "usr/src/linux-headers-6.1.0-57-amd64/.config", "CONFIG_X86_64=y\n") // (/boot's first)
	debImage := put(t, root, "usr/lib/debug/boot/vmlinux-6.1.0-57-amd64", "")         // -dbg's
	put(t, root, "boot/vmlinuz-6.1.0-57-amd64", "")                                   // (after it)
	// A map alone: no modules, no Module.symvers.
	bare := put(t, root, "boot/System.map-6.1.0-47-amd64", sm)
	bareImage := put(t, root, "boot/vmlinuz-6.1.0-47-amd64", "") // x86's compressed kernel, last
	// RHEL: boot/symvers-RELEASE.gz, though kernel-devel is there too
	// (the headers come first).
	rhel := put(t, root, "boot/System.map-5.14.0-427.el9.x86_64", sm)
	put(t, root, "lib/modules/5.14.0-427.el9.x86_64/modules.dep", "")
	put(t, root, "boot/symvers-5.14.0-427.el9.x86_64.gz", "")
	rhelDevel := put(t, root, "usr/src/kernels/5.14.0-427.el9.x86_64/Module.symvers", "")
	rhelConfig := put(t, root, "lib/modules/5.14.0-427.el9.x86_64/config", "CONFIG_X86_64=y\n")
	rhelImage := put(t, root, "usr/lib/debug/lib/modules/5.14.0-427.el9.x86_64/vmlinux", "") // kernel-debuginfo's
	// Fedora, merged /usr: the map and symvers.xz in the modules' folder.
	fed := put(t, root, "usr/lib/modules/6.11.4-301.fc41.x86_64/System.map", sm)
	fedSymvers := put(t, root, "usr/lib/modules/6.11.4-301.fc41.x86_64/symvers.xz", "")
	// A build link to an absolute path, as packages install it.
	arch := put(t, root, "boot/System.map-6.1.0-50-armmp", sm)
	put(t, root, "lib/modules/6.1.0-50-armmp/modules.dep", "")
	link(t, "/usr/src/headers-50", root, "lib/modules/6.1.0-50-armmp/build")
	armSymvers := put(t, root, "usr/src/headers-50/Module.symvers", "")
	armConfig := put(t, root, "usr/src/headers-50/.config", "CONFIG_ARM=y\n")
	armImage := put(t, root, "boot/vmlinux-6.1.0-50-armmp.gz", "") // SUSE's way, before the build's
	put(t, root, "usr/src/headers-50/vmlinux", "")
	// Debian's placeholder in /boot, with the -dbg package's real map,
	// and without it (still a kernel: its row says where the real one is).
	const stub = "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"
	put(t, root, "boot/System.map-6.1.0-58-amd64", stub)
	dbg := put(t, root, "usr/lib/debug/boot/System.map-6.1.0-58-amd64", sm)
	stubOnly := put(t, root, "boot/System.map-6.1.0-59-amd64", stub)
	// Not a kernel: a folder named like a map, a map's name without a
	// release.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "boot", "System.map-dir"), 0o755))
	put(t, root, "boot/System.map-", sm)

	ks, err := KernelsUnder(t.Context(), root)
	require.NoError(t, err)
	assert.Equal(t, []Kernel{
		{Release: "5.14.0-427.el9.x86_64", Symbols: rhel, Modules: []string{filepath.Join(root, "lib/modules/5.14.0-427.el9.x86_64")}, Symvers: rhelDevel, Config: rhelConfig, Ftrace: rhelImage},
		{Release: "6.1.0-47-amd64", Symbols: bare, Ftrace: bareImage},
		{Release: "6.1.0-50-armmp", Symbols: arch, Modules: []string{filepath.Join(root, "lib/modules/6.1.0-50-armmp")}, Symvers: armSymvers, Config: armConfig, Ftrace: armImage},
		{Release: "6.1.0-57-amd64", Symbols: deb, Modules: []string{filepath.Join(root, "lib/modules/6.1.0-57-amd64")}, Symvers: debSymvers, Config: debConfig, Ftrace: debImage},
		{Release: "6.1.0-58-amd64", Symbols: dbg},
		{Release: "6.1.0-59-amd64", Symbols: stubOnly},
		{Release: "6.11.4-301.fc41.x86_64", Symbols: fed, Modules: []string{filepath.Join(root, "usr/lib/modules/6.11.4-301.fc41.x86_64")}, Symvers: fedSymvers},
	}, ks)

	// Without kernel-devel, RHEL's boot/symvers-RELEASE.gz.
	require.NoError(t, os.Remove(rhelDevel))
	ks, err = KernelsUnder(t.Context(), root)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "boot/symvers-5.14.0-427.el9.x86_64.gz"), ks[0].Symvers)

	_, err = KernelsUnder(t.Context(), t.TempDir())
	assert.ErrorIs(t, err, ErrNoKernels)
	_, err = KernelsUnder(t.Context(), deb)
	assert.ErrorContains(t, err, "not a folder")
	_, err = KernelsUnder(t.Context(), filepath.Join(root, "nothing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestKernelUnder chooses one kernel of a root: the release asked for,
// else the only one, else under "/" the running one; a missing release
// and an open choice are errors that list what the root has.
func TestKernelUnder(t *testing.T) {
	const sm = "ffffffff81000000 T _text\n"
	root := t.TempDir()
	one := put(t, root, "boot/System.map-6.1.0-57-amd64", sm)
	mods := filepath.Join(root, "lib/modules/6.1.0-57-amd64")
	put(t, root, "lib/modules/6.1.0-57-amd64/modules.dep", "")
	none := host{running: func() (string, string) { return "", "" }}

	k, err := kernelUnder(t.Context(), root, "", none)
	require.NoError(t, err)
	assert.Equal(t, Kernel{Release: "6.1.0-57-amd64", Symbols: one, Modules: []string{mods}}, k)
	_, err = kernelUnder(t.Context(), root, "6.1.0-47-amd64", none)
	assert.ErrorIs(t, err, ErrNoKernels)
	assert.ErrorContains(t, err, "of release 6.1.0-47-amd64; it has 6.1.0-57-amd64")

	two := put(t, root, "boot/System.map-6.1.0-47-amd64", sm)
	_, err = kernelUnder(t.Context(), root, "", none)
	assert.ErrorIs(t, err, ErrWhichKernel)
	assert.ErrorContains(t, err, "several kernels installed: 6.1.0-47-amd64, 6.1.0-57-amd64; choose one")
	k, err = kernelUnder(t.Context(), root, "6.1.0-47-amd64", none)
	require.NoError(t, err)
	assert.Equal(t, Kernel{Release: "6.1.0-47-amd64", Symbols: two}, k)

	// Under "/", the running kernel unless another is asked for.
	k, err = kernelUnder(t.Context(), "/", "", host{running: func() (string, string) { return "6.18.44-test", "/proc/kallsyms" }})
	require.NoError(t, err)
	assert.Equal(t, "6.18.44-test", k.Release)
	assert.Equal(t, "/proc/kallsyms", k.Symbols)

	_, err = kernelUnder(t.Context(), filepath.Join(root, "nothing"), "", none)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestFleetLoaderChecks checks the Kbuild-made klp_demo against
// kernels laid out as installed, each with its own files: the corpus's
// 6.1.0-57 (its modules, and the Module.symvers of the headers it was
// built with: taken); a kernel with 6.1.0-47's Module.symvers, gzipped as
// RHEL installs it (its symbols borrowed from 6.1.0-57's map, which the
// corpus alone has: the loader refuses module_layout's CRC before
// anything else); the real-time flavour's vermagic given, with 6.1.0-47's
// Module.symvers (refused for both, module_layout's CRC first:
// check_modstruct_version() runs before check_modinfo(), which checks
// the vermagic before the other symbols' CRCs); and a kernel whose
// Module.symvers is unreadable.
func TestFleetLoaderChecks(t *testing.T) {
	smap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	mods := testutil.Corpus(t, "amd64/modules")
	h57 := testutil.Headers(t, "6.1.0-57-amd64")
	h47 := testutil.Headers(t, "6.1.0-47-amd64")
	m, err := klp.Open(repoFile("kbuild", "klp-demo.ko"))
	require.NoError(t, err)

	root := t.TempDir()
	link(t, smap, root, "57/boot/System.map-6.1.0-57-amd64")
	for _, name := range []string{"af_key.ko", "xfs.ko", "md4.ko"} {
		link(t, filepath.Join(mods, name), root, "57/lib/modules/6.1.0-57-amd64/kernel/"+name)
	}
	link(t, h57, root, "57/usr/src/linux-headers-6.1.0-57-amd64/Module.symvers")
	link(t, smap, root, "47/boot/System.map-6.1.0-47-amd64")
	raw, err := os.ReadFile(h47)
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(root, "47/boot/symvers-6.1.0-47-amd64.gz"))
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())

	k57, err := KernelsUnder(t.Context(), filepath.Join(root, "57"))
	require.NoError(t, err)
	k47, err := KernelsUnder(t.Context(), filepath.Join(root, "47"))
	require.NoError(t, err)
	require.Len(t, k57, 1)
	require.Len(t, k47, 1)
	rt := Kernel{Symbols: smap, Vermagic: "6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions ", Symvers: h47}
	broken := Kernel{Symbols: smap, Symvers: put(t, root, "broken/Module.symvers", "0x1234\tnot enough fields\n")}
	rows, _ := Fleet(t.Context(), m, []Kernel{k57[0], k47[0], rt, broken, {Symbols: smap}}, FleetOptions{Workers: 2})
	require.Len(t, rows, 5)

	ok := rows[0]
	assert.True(t, ok.OK, ok.FirstError)
	assert.Empty(t, ok.FirstError)
	require.NotNil(t, ok.Versions)
	assert.Equal(t, k57[0].Symvers, ok.Versions.Source)
	assert.Empty(t, ok.Versions.Problems)
	assert.Equal(t, 6, ok.Versions.Checked, "module_layout and the five exports klp_demo calls")
	require.NotNil(t, ok.Magic)
	assert.Equal(t, "6.1.0-57-amd64 SMP preempt mod_unload modversions ", ok.Magic.Kernel)
	assert.Equal(t, ok.Magic.Kernel, ok.Magic.Module, "built with these headers")
	assert.Equal(t, filepath.Join(root, "57/lib/modules/6.1.0-57-amd64/kernel/af_key.ko"), ok.VermagicFrom, "the first module by name")
	assert.Equal(t, 3, ok.Resolved)
	assert.Equal(t, 4, ok.Deferred, "xfs: not in a System.map")

	old := rows[1]
	assert.False(t, old.OK)
	assert.Equal(t, diag.Kind("symbol_version"), old.FirstErrorKind)
	assert.Equal(t, "klp_demo: disagrees about version of symbol module_layout", old.FirstError)
	require.NotNil(t, old.Versions)
	assert.Equal(t, filepath.Join(root, "47/boot/symvers-6.1.0-47-amd64.gz"), old.Versions.Source)
	assert.ErrorIs(t, &old.Versions.Problems[0], symvers.ErrVersionMismatch)
	assert.Nil(t, old.Magic, "no modules: no vermagic")
	assert.Equal(t, 3, old.Resolved, "the livepatch relocations would resolve")

	rtRow := rows[2]
	assert.False(t, rtRow.OK)
	assert.Equal(t, diag.Kind("symbol_version"), rtRow.FirstErrorKind)
	assert.Equal(t, "klp_demo: disagrees about version of symbol module_layout", rtRow.FirstError)
	require.NotNil(t, rtRow.Magic)
	require.NotNil(t, rtRow.Magic.Problem, "refused as well")
	assert.Equal(t, "klp_demo: version magic '6.1.0-57-amd64 SMP preempt mod_unload modversions ' should be '6.1.0-57-rt-amd64 SMP preempt_rt mod_unload modversions '", rtRow.Magic.Problem.Message)
	assert.Empty(t, rtRow.VermagicFrom)
	assert.NotEmpty(t, rtRow.Versions.Problems, "checked as well")

	bad := rows[3]
	assert.False(t, bad.OK)
	assert.Equal(t, diag.Kind("unreadable"), bad.FirstErrorKind)
	assert.ErrorIs(t, bad.Err, symvers.ErrMalformed)
	assert.Contains(t, bad.FirstError, broken.Symvers)

	plain := rows[4]
	assert.True(t, plain.OK)
	assert.Nil(t, plain.Versions)
	assert.Nil(t, plain.Magic)
}

// TestKernelsUnderRunning: under "/", the running kernel counts even
// without a System.map (its symbols are then /proc/kallsyms); a System.map
// of its release comes first; under any other root it does not count.
func TestKernelsUnderRunning(t *testing.T) {
	tracefs := t.TempDir()
	running := host{func() (string, string) { return "6.18.44-test", "/proc/kallsyms" }, []string{filepath.Join(tracefs, "none"), tracefs}}
	got, err := kernelUnder(t.Context(), "/", "6.18.44-test", running)
	require.NoError(t, err)
	assert.Equal(t, "/proc/kallsyms", got.Symbols)
	if isDir("/lib/modules/6.18.44-test") {
		t.Skip("this machine has a kernel of the test's release")
	}
	assert.Empty(t, got.Modules)
	assert.Empty(t, got.Ftrace, "tracefs lists nothing here")

	// Its call sites, without a vmlinux: tracefs's list, with addresses
	// (against /proc/kallsyms) where the kernel has that list (6.5+).
	names := put(t, tracefs, "available_filter_functions", "vfs_read\n")
	got, err = kernelUnder(t.Context(), "/", "6.18.44-test", running)
	require.NoError(t, err)
	assert.Equal(t, names, got.Ftrace)
	addrs := put(t, tracefs, "available_filter_functions_addrs", "ffffffff81000000 vfs_read\n")
	got, err = kernelUnder(t.Context(), "/", "6.18.44-test", running)
	require.NoError(t, err)
	assert.Equal(t, addrs, got.Ftrace)

	root := t.TempDir()
	_, err = kernelsUnder(t.Context(), root, running)
	assert.ErrorIs(t, err, ErrNoKernels, "not the running system's root")
	_, err = kernelsUnder(t.Context(), root, host{running: func() (string, string) { return "", "" }})
	assert.ErrorIs(t, err, ErrNoKernels)
}
