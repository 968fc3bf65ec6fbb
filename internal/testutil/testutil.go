// SPDX-License-Identifier: GPL-2.0-only

// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// CorpusDir returns the shared corpus folder (../shared/corpus beside the
// repository, or $KLPRESOLVE_CORPUS) or "" when it is absent.
func CorpusDir() string {
	if d := os.Getenv("KLPRESOLVE_CORPUS"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// internal/testutil/testutil.go -> repo root -> ../shared/corpus
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	d := filepath.Join(root, "..", "shared", "corpus")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Corpus returns the path of rel inside the shared corpus, or skips the
// test with a message naming what is missing. CI always has the corpus.
func Corpus(tb testing.TB, rel string) string {
	tb.Helper()
	d := CorpusDir()
	if d == "" {
		tb.Skipf("shared corpus not present (../shared/corpus or $KLPRESOLVE_CORPUS): skipping test that needs %s", rel)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared corpus file %s not present: %v", rel, err)
	}
	return p
}

// RepoRoot returns the repository's root folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Headers returns the Module.symvers of Debian's kernel headers for
// release ("6.1.0-57-amd64": the package linux-headers-<release>), under
// $KLPRESOLVE_HEADERS or /usr/src, or skips the test with a message naming
// the package. CI installs the ones the tests use (.ci/run).
func Headers(tb testing.TB, release string) string {
	tb.Helper()
	dir := os.Getenv("KLPRESOLVE_HEADERS")
	if dir == "" {
		dir = "/usr/src"
	}
	p := filepath.Join(dir, "linux-headers-"+release, "Module.symvers")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("kernel headers not present (apt-get install linux-headers-%s): skipping test that needs %s", release, p)
	}
	return p
}

// PPC64ELRelease is the ppc64el kernel PPC64EL installs: the corpus's
// build, 6.1.0-57 (6.1.192-3).
const PPC64ELRelease = "6.1.0-57-powerpc64le"

// PPC64EL returns a filesystem root with Debian's ppc64el kernel
// installed (PPC64ELRelease: boot/System.map-RELEASE, boot/config-RELEASE,
// lib/modules/RELEASE), which scripts/ppc64el-kernel makes under
// $KLPRESOLVE_PPC64EL (default /var/tmp/klpresolve-ppc64el), or skips the
// test with a message saying how to make it. CI makes it (.ci/run).
func PPC64EL(tb testing.TB) string {
	tb.Helper()
	dir := fetched(tb, "KLPRESOLVE_PPC64EL", "/var/tmp/klpresolve-ppc64el", "ppc64el-kernel", "Debian's ppc64el kernel", "root/boot/System.map-"+PPC64ELRelease)
	return filepath.Join(dir, "root")
}

// S390XRelease is the s390x kernel S390X installs: 6.1.0-50 (6.1.176-1),
// the build of the corpus's armhf kernel (bookworm's own; its
// security updates have no s390x build on this mirror).
const S390XRelease = "6.1.0-50-s390x"

// S390X returns a filesystem root with Debian's s390x kernel installed
// (S390XRelease: boot/config-RELEASE, lib/modules/RELEASE; its System.map
// is Debian's placeholder), which scripts/s390x-kernel makes under
// $KLPRESOLVE_S390X (default /var/tmp/klpresolve-s390x), or skips the test
// with a message saying how to make it. CI makes it (.ci/run).
func S390X(tb testing.TB) string {
	tb.Helper()
	dir := fetched(tb, "KLPRESOLVE_S390X", "/var/tmp/klpresolve-s390x", "s390x-kernel", "Debian's s390x kernel", "root/boot/config-"+S390XRelease)
	return filepath.Join(dir, "root")
}

// VmlinuzRelease is the release of the kernel Vmlinuz fetches for arch:
// the corpus's build, 6.1.0-57 (6.1.192-3).
func VmlinuzRelease(arch string) string { return "6.1.0-57-" + arch }

// Vmlinuz returns Debian's /boot/vmlinuz-RELEASE for arch (amd64: a
// bzImage; arm64: an Image) of the corpus's build, which scripts/vmlinuz
// puts in $KLPRESOLVE_AMD64 or $KLPRESOLVE_ARM64 (default
// /var/tmp/klpresolve-ARCH), or skips the test with a message saying how
// to get it. CI gets both (.ci/run).
func Vmlinuz(tb testing.TB, arch string) string {
	tb.Helper()
	file := "vmlinuz-" + VmlinuzRelease(arch)
	dir := fetched(tb, "KLPRESOLVE_"+strings.ToUpper(arch), "/var/tmp/klpresolve-"+arch, "vmlinuz "+arch, "Debian's "+arch+" vmlinuz", file)
	return filepath.Join(dir, file)
}

// fetched is the folder scripts/SCRIPT fills (the environment variable
// env, else def), once it has file; else the test is skipped, saying how
// to fill it.
func fetched(tb testing.TB, env, def, script, what, file string) string {
	tb.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		dir = def
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		tb.Skipf("%s not present (scripts/%s %s): skipping test that needs %s", what, script, dir, filepath.Join(dir, file))
	}
	return dir
}

// DebianKernelRelease is the release scripts/debian-kernel fetches for
// generation gen ("6.12": trixie's 6.12.117; "7.2": sid's 7.2.13) and
// arch.
func DebianKernelRelease(gen, arch string) string {
	switch gen {
	case "6.1":
		return "6.1.0-57-" + arch
	case "6.12":
		return "6.12.117+deb13-" + arch
	case "7.2":
		return "7.2.13+deb14-" + arch
	}
	panic("testutil: no Debian kernel of generation " + gen)
}

// DebianKernel returns the root under which scripts/debian-kernel laid
// out Debian's kernel of generation gen for arch ($KLPRESOLVE_GEN_ARCH,
// e.g. KLPRESOLVE_6_12_AMD64, default /var/tmp/klpresolve-GEN-ARCH/root),
// and its image's path in it (6.12: /boot/vmlinuz-RELEASE; 7.2:
// /usr/lib/modules/RELEASE/vmlinuz), or skips the test saying how to get
// it. CI gets them (.ci/run).
func DebianKernel(tb testing.TB, gen, arch string) (root, image string) {
	tb.Helper()
	rel := DebianKernelRelease(gen, arch)
	file := "root/boot/vmlinuz-" + rel
	if gen == "7.2" {
		file = "root/usr/lib/modules/" + rel + "/vmlinuz"
	}
	env := "KLPRESOLVE_" + strings.ToUpper(strings.ReplaceAll(gen, ".", "_")) + "_" + strings.ToUpper(arch)
	dir := fetched(tb, env, "/var/tmp/klpresolve-"+gen+"-"+arch, "debian-kernel "+gen+" "+arch, "Debian's "+gen+" "+arch+" kernel", file)
	return filepath.Join(dir, "root"), filepath.Join(dir, file)
}

// DebianDbgMap returns the real System.map of Debian's kernel of
// generation gen for arch, from its -dbg package, where
// scripts/debian-kernel GEN ARCH DIR dbg put it (DIR/dbg/System.map-RELEASE;
// DIR as DebianKernel's), or skips the test saying how to get it (a 1 GB
// download: CI does not).
func DebianDbgMap(tb testing.TB, gen, arch string) string {
	tb.Helper()
	rel := DebianKernelRelease(gen, arch)
	file := "dbg/System.map-" + rel
	env := "KLPRESOLVE_" + strings.ToUpper(strings.ReplaceAll(gen, ".", "_")) + "_" + strings.ToUpper(arch)
	dir := fetched(tb, env, "/var/tmp/klpresolve-"+gen+"-"+arch, "debian-kernel "+gen+" "+arch, "Debian's "+gen+" "+arch+" -dbg System.map (add dbg: 1 GB)", file)
	return filepath.Join(dir, file)
}

// DebianKernelModules returns the kernel/ folder of the modules of
// Debian's kernel of generation gen for arch (6.12's package carries
// them), or skips the test as DebianKernel does.
func DebianKernelModules(tb testing.TB, gen, arch string) string {
	tb.Helper()
	root, _ := DebianKernel(tb, gen, arch)
	dir := filepath.Join(root, "usr/lib/modules", DebianKernelRelease(gen, arch), "kernel")
	if gen == "6.1" {
		dir = filepath.Join(root, "lib/modules", DebianKernelRelease(gen, arch), "kernel")
	}
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("Debian's %s %s kernel under %s has no modules (its package of them is not fetched): skipping", gen, arch, root)
	}
	return dir
}

// Sampled reports whether the tests check a sample of the corpus: in a
// Light build, or under go test -short (which a developer runs between
// edits; without it every file is checked). Call it from a test, after flags are
// parsed.
func Sampled() bool { return Light || testing.Short() }

// LightKernel skips, in a Light or -short run, a test of a whole kernel image other
// than the one Light runs check (7.2's arm64 Image, which needs no
// decompression): decoding one takes seconds under the race detector and
// minutes under qemu-user, and the full run checks them all.
func LightKernel(tb testing.TB, gen, arch string) {
	tb.Helper()
	if Sampled() && (gen != "7.2" || arch != "arm64") {
		tb.Skipf("a light or -short run checks 7.2's arm64 image only (the full run checks %s %s)", gen, arch)
	}
}

// AllocRelocs counts, with debug/elf (not klpresolve's reader), the
// relocations of an ELF object's allocated sections: those a link
// applies, .klp.rela ones included.
func AllocRelocs(tb testing.TB, path string) int {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	n := 0
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA && int(s.Info) < len(f.Sections) && f.Sections[s.Info].Flags&elf.SHF_ALLOC != 0 {
			n += int(s.Size / s.Entsize)
		}
	}
	return n
}
