// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// variant is one made-up kernel build of the fleet.
type variant struct {
	shift       uint64 // KASLR-like offset of vmlinux
	modShift    uint64 // and of the modules
	noExt4      bool   // ext4 not loaded: its relocations are deferred
	withXfs     bool   // xfs loaded: its relocation resolves
	renamed     bool   // vfs_read renamed: not found
	duplicated  bool   // a second jiffies: ambiguous
	fewTypeShow bool   // only two type_show: position 3 not found
}

func variantOf(k int) variant {
	return variant{
		shift:       uint64(k) * 0x200000,
		modShift:    uint64(k%50) * 0x10000,
		noExt4:      k%5 == 1,
		withXfs:     k%7 == 3,
		renamed:     k%11 == 4,
		duplicated:  k%13 == 6,
		fewTypeShow: k%17 == 8,
	}
}

// baseLines reads the corpus amd64 kallsyms, keeping every symbol the
// sample patch needs and one in 60 of the others (a smaller kernel that
// parses fast even under the race detector).
func baseLines(t *testing.T) []string {
	b, err := os.ReadFile(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"))
	require.NoError(t, err)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for i := 0; sc.Scan(); i++ {
		l := sc.Text()
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		switch {
		case f[2] == "jiffies" || f[2] == "vfs_read" || f[2] == "type_show":
		case len(f) == 4 && (f[3] == "[ext4]" || f[3] == "[jbd2]"):
		case i%60 == 0:
		default:
			continue
		}
		out = append(out, l)
	}
	return out
}

// kernelText makes variant v of the base kernel in kallsyms format.
func kernelText(base []string, v variant) string {
	var b strings.Builder
	typeShows := 0
	for _, l := range base {
		f := strings.Fields(l)
		addr, _ := strconv.ParseUint(f[0], 16, 64)
		name := f[2]
		mod := ""
		if len(f) == 4 {
			mod = f[3]
			if mod == "[ext4]" && v.noExt4 {
				continue
			}
			addr += v.modShift
		} else {
			addr += v.shift
		}
		if name == "type_show" && mod == "" {
			typeShows++
			if v.fewTypeShow && typeShows > 2 {
				continue
			}
		}
		if name == "vfs_read" && v.renamed {
			name = "vfs_read_checked"
		}
		if mod != "" {
			fmt.Fprintf(&b, "%016x %s %s\t%s\n", addr, f[1], name, mod)
		} else {
			fmt.Fprintf(&b, "%016x %s %s\n", addr, f[1], name)
		}
		if name == "jiffies" && v.duplicated {
			fmt.Fprintf(&b, "%016x d %s\n", addr+0x40, name)
		}
	}
	if v.withXfs {
		fmt.Fprintf(&b, "%016x t xfs_iget\t[xfs]\n", 0xffffffffc0900000+v.modShift)
	}
	return b.String()
}

// expect is the matrix row variant v must give for the sample patch,
// worked out from the patch's relocations and the kernel's rules.
func expect(t *testing.T, m *klp.Module, v variant) (resolved, deferred, errs int, first string) {
	for _, s := range m.Sections {
		for _, r := range s.Relocs {
			sym := r.Sym
			var fail string
			switch {
			case sym.Object == "ext4" && v.noExt4, sym.Object == "xfs" && !v.withXfs:
				deferred++
				continue
			case sym.Name == "jiffies" && v.duplicated:
				fail = "unresolvable ambiguity for symbol 'jiffies' in object '(null)'"
			case sym.Name == "vfs_read" && v.renamed:
				fail = "symbol 'vfs_read' not found in symbol table"
			case sym.Name == "type_show" && v.fewTypeShow:
				fail = "symbol position 3 for symbol 'type_show' in object 'vmlinux' not found"
			}
			if fail != "" {
				errs++
				if first == "" {
					first = fail
				}
				continue
			}
			resolved++
		}
	}
	return
}

// TestFleet builds 200 kernel snapshots from the corpus kallsyms (shifted
// addresses, different module sets, a renamed, a duplicated and a
// missing-position symbol in some), checks the sample patch against all
// of them at once, and asserts every row of the matrix.
func TestFleet(t *testing.T) {
	base := baseLines(t)
	dir := t.TempDir()
	m, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	n := 200
	write := (*kallsyms.Index).WriteSnapshotFile
	if testutil.Sampled() {
		// Every variant still comes up; make test runs 200 natively
		// first. Raw snapshots: each compact one's zstd encoder clears
		// megabytes of tables, which the race detector makes most of
		// this test's time.
		n, write = 40, (*kallsyms.Index).WriteSnapshotRawFile
	}
	var paths []string
	for k := range n {
		text := kernelText(base, variantOf(k))
		ix, err := kallsyms.Parse(fmt.Sprintf("kernel-%03d", k), strings.NewReader(text), kallsyms.Options{})
		require.NoError(t, err)
		p := filepath.Join(dir, fmt.Sprintf("kernel-%03d.snap", k))
		require.NoError(t, write(ix, p))
		paths = append(paths, p)
	}
	progress := 0
	// Each worker writes each kernel's Resolution over its last one's; a
	// Reuse given in Run, which the workers would share, is not used.
	given := &klp.Resolution{}
	rows, _ := Fleet(t.Context(), m, KernelFiles(paths...), FleetOptions{Run: Options{Reuse: given}, Progress: func(done, total int) {
		require.Equal(t, n, total)
		progress = max(progress, done)
	}})
	assert.Nil(t, given.Module, "the Reuse given is left alone")
	require.Len(t, rows, n)
	assert.Equal(t, n, progress)
	counts := map[string]int{}
	for k, row := range rows {
		v := variantOf(k)
		res, def, errs, first := expect(t, m, v)
		require.NoError(t, row.Err, row.Kernel)
		assert.Equal(t, paths[k], row.Kernel)
		assert.Equal(t, res, row.Resolved, "kernel %d resolved", k)
		assert.Equal(t, def, row.Deferred, "kernel %d deferred", k)
		assert.Equal(t, errs, row.Errors, "kernel %d errors", k)
		assert.Equal(t, first, row.FirstError, "kernel %d first error", k)
		assert.Equal(t, errs == 0, row.OK, "kernel %d ok", k)
		if errs > 0 {
			counts["failed"]++
		}
		if def > 0 {
			counts["deferred"]++
		}
	}
	// The fleet exercises every case.
	assert.Greater(t, counts["failed"], n*30/200)
	assert.Greater(t, counts["deferred"], n*100/200)
	t.Logf("fleet: %v", counts)

	// Strict: deferred relocations fail the kernel.
	strict, _ := Fleet(t.Context(), m, KernelFiles(paths[:10]...), FleetOptions{Strict: true, Workers: 3})
	for k, row := range strict {
		_, def, errs, _ := expect(t, m, variantOf(k))
		assert.Equal(t, errs == 0 && def == 0, row.OK, "kernel %d strict", k)
	}
}

// TestRunLink: resolving and linking the sample patch against the corpus
// kernel: the livepatch relocations of xfs (not loaded) are left for
// later, and the one ordinary relocation against a function no kernel
// has fails the link.
func TestRunLink(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	m, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true, CFIShadow: true})
	require.NoError(t, err)
	assert.True(t, rep.Resolution.OK(false))
	require.NotNil(t, rep.Image)
	assert.Equal(t, []string{"no_such_function"}, rep.Image.Unresolved)
	require.Len(t, rep.Image.Errors, 1)
	assert.Equal(t, "no_such_function", rep.Image.Errors[0].Symbol)
	assert.False(t, rep.OK(false))
	// The livepatch relocation of vfs_read was applied with its address.
	vfsRead, err := ix.Lookup("vmlinux", "vfs_read", 0)
	require.NoError(t, err)
	found := false
	for _, r := range rep.Resolution.Results {
		if r.Name == "vfs_read" {
			found = true
			assert.Equal(t, vfsRead.Address, r.Address)
		}
	}
	assert.True(t, found)
	require.NotNil(t, rep.CFI)
	assert.True(t, rep.CFI.Shadowed)
	assert.Equal(t, rep.CFI.TextStart, rep.CFI.CheckFn) // no __cfi_check: start of text
	assert.Equal(t, 1, rep.CFI.Pages)
}

// TestRunLinkARM64ModuleArea: linking a real arm64 module against the
// Debian 6.1 arm64 kallsyms places it where that kernel's module_alloc()
// starts without randomization: _etext (as the kallsyms and the
// System.map both give it) - 128 MiB, below the kernel's image, from
// where every one of the kernel's functions is in a BL's reach, so no
// call to vmlinux takes a PLT entry.
func TestRunLinkARM64ModuleArea(t *testing.T) {
	ix, err := kallsyms.Open(testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt"), kallsyms.Options{})
	require.NoError(t, err)
	sm, err := kallsyms.Open(testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64"), kallsyms.Options{})
	require.NoError(t, err)
	etext := KernelEtext(ix)
	assert.Equal(t, KernelEtext(sm), etext)
	require.NotZero(t, etext)

	m, err := klp.Open(testutil.Corpus(t, "arm64/modules/md4.ko"))
	require.NoError(t, err)
	rep, err := Run(m, ix, Options{Link: true, CFIShadow: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Image)
	assert.Empty(t, rep.Image.Errors)
	require.NotNil(t, rep.CFI)
	assert.Equal(t, (etext-128<<20+0xfff)&^0xfff, rep.CFI.TextStart)

	// The kernel's text up to _etext (init text, above it, is freed once
	// the kernel has booted).
	const reach = 128 << 20 // a BL's range, +-128 MiB
	lowest, farthest, n := ^uint64(0), uint64(0), 0
	ix.Symbols("vmlinux", func(s kallsyms.Symbol) bool {
		if s.Type|0x20 == 't' && s.Address < etext {
			lowest = min(lowest, s.Address)
			farthest = max(farthest, s.Address)
			n++
		}
		return true
	})
	require.Greater(t, n, 40000)
	assert.Less(t, rep.CFI.TextEnd, lowest, "the module overlaps the kernel's text")
	assert.Less(t, farthest+4-rep.CFI.TextStart, uint64(reach), "the kernel's last function is out of a BL's reach")
	assert.Zero(t, rep.Image.PLTCoreUsed)
}

// TestArchMismatch: an x86_64 patch checked against the arm64 and arm
// kernels is refused with ErrArchMismatch (names alone would resolve:
// vfs_read is in both), alone and as one row of a fleet whose x86_64 row
// still resolves; an arm64 module is refused by the x86_64 kernel.
func TestArchMismatch(t *testing.T) {
	m, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	arm64 := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt")
	armhf := testutil.Corpus(t, "armhf/System.map-6.1.0-50-armmp")
	amd64 := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	for _, k := range []string{arm64, armhf} {
		ix, err := kallsyms.Open(k, kallsyms.Options{})
		require.NoError(t, err)
		_, ok := ix.Find("vmlinux", "vfs_read", 0)
		require.True(t, ok, "a name the patch uses is there")
		rep, err := Run(m, ix, Options{})
		assert.Nil(t, rep)
		require.ErrorIs(t, err, ErrArchMismatch)
		assert.ErrorContains(t, err, k+": ")
		assert.ErrorContains(t, err, "the module is x86_64, the kernel is ")
	}
	rows, _ := Fleet(t.Context(), m, KernelFiles([]string{arm64, amd64}...), FleetOptions{})
	require.Len(t, rows, 2)
	assert.ErrorIs(t, rows[0].Err, ErrArchMismatch)
	assert.Equal(t, diag.Kind("wrong_architecture"), rows[0].FirstErrorKind)
	assert.NoError(t, rows[1].Err)
	assert.Equal(t, 6, rows[1].Resolved)
	assert.Empty(t, rows[1].FirstErrorKind)
	// A kernel that does not resolve the patch names the first failure's
	// kind (the 6.18 kernel refuses every livepatch module first: it has
	// no CONFIG_LIVEPATCH); one that cannot be read, "unreadable".
	rows, _ = Fleet(t.Context(), m, KernelFiles([]string{testutil.Corpus(t, "host/kallsyms-6.18.44-firecracker.txt"), "/nonexistent"}...), FleetOptions{})
	assert.Equal(t, []diag.Kind{"no_livepatch", diag.KindUnreadable}, []diag.Kind{rows[0].FirstErrorKind, rows[1].FirstErrorKind})
	nf, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "err-not-found.ko"))
	require.NoError(t, err)
	rows, _ = Fleet(t.Context(), nf, KernelFiles([]string{amd64}...), FleetOptions{})
	assert.Equal(t, diag.Kind("not_found"), rows[0].FirstErrorKind)

	ix, err := kallsyms.Open(amd64, kallsyms.Options{})
	require.NoError(t, err)
	err = CheckArch("arm64", ix)
	assert.EqualError(t, err, amd64+": the module and the kernel are for different architectures: the module is arm64, the kernel is x86_64 (its vmlinux has x86_64_start_kernel)")
	assert.NoError(t, CheckArch("x86_64", ix))
	unknown, err := kallsyms.ParseBytes("k", []byte("ffffffff81000000 T vfs_read\n"), kallsyms.Options{})
	require.NoError(t, err)
	assert.NoError(t, CheckArch("arm64", unknown))
}

// TestCodeOnly: an unresolved ordinary symbol against a kallsyms without
// data symbols (the 6.18 host's) is flagged, as that may be why; against
// one that lists data (the Debian 6.1 amd64 kallsyms) it is not, with or
// without linking.
func TestCodeOnly(t *testing.T) {
	m, err := klp.Open(filepath.Join(testutil.RepoRoot(), "testdata", "klp", "livepatch-sample.ko"))
	require.NoError(t, err)
	for _, tc := range []struct {
		kernel   string
		codeOnly bool
	}{
		{"host/kallsyms-6.18.44-firecracker.txt", true},
		{"amd64/kallsyms-6.1.0-57-amd64.txt", false},
	} {
		ix, err := kallsyms.Open(testutil.Corpus(t, tc.kernel), kallsyms.Options{})
		require.NoError(t, err)
		for _, link := range []bool{false, true} {
			rep, err := Run(m, ix, Options{Link: link})
			require.NoError(t, err)
			assert.Equal(t, tc.codeOnly, rep.CodeOnly, "%s link=%v", tc.kernel, link)
		}
	}
}

// TestFleetStopsOnCancel: over a 1,000-kernel root, a fleet whose context
// is cancelled after its tenth kernel starts no other: at most the kernels
// under way on the other workers finish, every other row says
// context.Canceled, and so does Fleet. KernelsUnder and FindModules stop
// at once on a done context.
func TestFleetStopsOnCancel(t *testing.T) {
	root := t.TempDir()
	example, err := filepath.Abs(repoFile("kallsyms", "example.txt"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "boot"), 0o755))
	const n = 1000
	for i := range n {
		require.NoError(t, os.Symlink(example, filepath.Join(root, "boot", fmt.Sprintf("System.map-6.1.%d-example", i))))
	}
	kernels, err := KernelsUnder(t.Context(), root)
	require.NoError(t, err)
	require.Len(t, kernels, n)
	m, err := klp.Open(repoFile("klp", "livepatch-sample.ko"))
	require.NoError(t, err)

	const workers, stopAt = 2, 10
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelled time.Time
	rows, err := Fleet(ctx, m, kernels, FleetOptions{Workers: workers, Progress: func(done, _ int) {
		if done == stopAt {
			cancelled = time.Now()
			cancel()
		}
	}})
	stopped := time.Since(cancelled)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, rows, n)
	checked := 0
	for i, r := range rows {
		assert.Equal(t, kernels[i].Symbols, r.Kernel)
		if errors.Is(r.Err, context.Canceled) {
			continue
		}
		require.NoError(t, r.Err)
		assert.True(t, r.OK, r.Kernel)
		checked++
	}
	assert.GreaterOrEqual(t, checked, stopAt)
	assert.LessOrEqual(t, checked, stopAt+workers-1, "kernels started after the cancel")
	t.Logf("%d of %d kernels checked; Fleet returned %v after the cancel", checked, n, stopped)

	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	_, err = KernelsUnder(done, root)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = FindModules(done, []string{repoFile("kbuild", "deps")})
	assert.ErrorIs(t, err, context.Canceled)
}
