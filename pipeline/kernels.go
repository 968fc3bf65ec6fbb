// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// Kernel is one kernel of a fleet check (Fleet): its symbols and,
// where they are known, the files of its build that the module loader's
// own checks need.
type Kernel struct {
	// Release is its release (uname -r), where KernelsUnder found it;
	// "" for a kernel given as a symbols file alone.
	Release string
	// Symbols is its kallsyms, System.map or snapshot.
	Symbols string
	// Modules are its module files or folders (its /lib/modules/RELEASE):
	// what the patch defers to a module its symbols lack is checked
	// against them (Options.Modules, in place of FleetOptions.Run's), and,
	// without Vermagic, its vermagic is theirs (ModuleFiles.Vermagic).
	Modules []string
	// Symvers is its build's Module.symvers (compressed or not): the
	// patch's symbol versions are checked against it (Options.Symvers).
	Symvers string
	// Vermagic is its VERMAGIC_STRING (Options.Vermagic).
	Vermagic string
	// Config is its build configuration (.config, compressed or not):
	// what it decides of how the loader lays modules out (no
	// CONFIG_MODULE_UNLOAD, an arm64 kernel without
	// CONFIG_RANDOMIZE_BASE, arm64's and ppc64's page size, s390 without
	// CONFIG_EXPOLINE) is set in the run's LinkOptions where they leave
	// it at its default, and what it decides of the loader's checks
	// (CONFIG_LIVEPATCH, CONFIG_STRICT_MODULE_RWX) in Options.Config
	// (OpenConfig, Config.Apply).
	Config string
	// Ftrace is where its ftrace call sites are (ftrace.Open): its
	// vmlinux (its __mcount_loc table), for the running kernel tracefs's
	// list, or /boot/vmlinuz (x86's bzImage, arm64's Image). A patched function
	// without one fails (Options.Ftrace).
	Ftrace string
}

// ErrNoKernels: a root has no kernel's symbols where KernelsUnder looks,
// or not the release KernelUnder was asked for.
var ErrNoKernels = errors.New("no kernel found")

// ErrWhichKernel: KernelUnder was asked for no release in particular, and
// the root has several kernels, none of them the running one.
var ErrWhichKernel = errors.New("several kernels installed")

// KernelsUnder finds the kernels installed under root, the root of a
// filesystem: the running system's ("/"), or a folder where each kernel's
// packages were unpacked (dpkg-deb -x linux-image-RELEASE.deb DIR, the
// same for its -dbg and linux-headers; rpm2cpio | cpio -id for
// kernel-core, kernel-modules and kernel-devel).
//
// A kernel is a release with a System.map: boot/System.map-RELEASE; where
// that is Debian's placeholder (kallsyms.ErrPlaceholder), the -dbg
// package's usr/lib/debug/boot/System.map-RELEASE; or, as Fedora also
// installs it, lib/modules/RELEASE/System.map. Without a real one, its
// image gives the kernel's own kallsyms table: boot/vmlinuz-RELEASE, or
// lib/modules/RELEASE/vmlinuz (Debian's 7.x, Fedora, Arch). A release
// with a placeholder alone is still a kernel: its row says where the
// real map is. Its modules are lib/modules/RELEASE (usr/lib/modules on merged-/usr
// systems). Its Module.symvers is the first of the headers'
// (usr/src/linux-headers-RELEASE, Debian and Ubuntu;
// usr/src/kernels/RELEASE, Fedora and RHEL; lib/modules/RELEASE/build),
// boot/symvers-RELEASE.gz or .xz and lib/modules/RELEASE/symvers.gz or
// .xz (Fedora and RHEL). Whatever is missing is left empty; the kernels
// are in the order of their releases' names.
//
// Under "/", the running kernel is one even without a System.map (cloud
// and container images often ship none, Debian's a placeholder): its
// symbols are then /proc/kallsyms, which needs root or
// kernel.kptr_restrict=0 to show addresses.
//
// Once ctx is done it stops, between two steps of its search, with
// ctx.Err().
func KernelsUnder(ctx context.Context, root string) ([]Kernel, error) {
	return kernelsUnder(ctx, root, thisHost)
}

// KernelUnder is the kernel of the given release among KernelsUnder(root);
// with release "", the running kernel's under "/", else the root's only
// kernel. A release that is not there is ErrNoKernels, a root with
// several kernels and no release chosen ErrWhichKernel; both errors list
// the releases the root has.
func KernelUnder(ctx context.Context, root, release string) (Kernel, error) {
	return kernelUnder(ctx, root, release, thisHost)
}

func kernelUnder(ctx context.Context, root, release string, h host) (Kernel, error) {
	ks, err := kernelsUnder(ctx, root, h)
	if err != nil {
		return Kernel{}, err
	}
	if release == "" && filepath.Clean(root) == "/" {
		// The running kernel is always among /'s (kernelsUnder).
		release, _ = h.running()
	}
	rels := make([]string, len(ks))
	for i, k := range ks {
		if k.Release == release || release == "" && len(ks) == 1 {
			return k, nil
		}
		rels[i] = k.Release
	}
	if release == "" {
		return Kernel{}, fmt.Errorf("%s: %w: %s; choose one", root, ErrWhichKernel, strings.Join(rels, ", "))
	}
	return Kernel{}, fmt.Errorf("%s: %w of release %s; it has %s", root, ErrNoKernels, release, strings.Join(rels, ", "))
}

// host is what KernelsUnder asks of the machine it runs on about its
// running kernel (the tests give their own).
type host struct {
	running func() (release, symbols string)
	// tracefs are where tracefs may be mounted.
	tracefs []string
}

// thisHost is this machine (never modified).
var thisHost = host{runningKernel, []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}}

// runningKernel is the running kernel's release and symbols.
func runningKernel() (release, symbols string) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", ""
	}
	return strings.TrimSpace(string(b)), "/proc/kallsyms"
}

func kernelsUnder(ctx context.Context, root string, h host) ([]Kernel, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder (a root: boot/System.map-RELEASE, lib/modules/RELEASE, ...)", root)
	}
	// Each release's System.map: the first real one of /boot's, the
	// debug package's (Debian's /boot has a one-line placeholder,
	// kallsyms.ErrPlaceholder) and the modules folder's (Fedora); under
	// "/", /proc/kallsyms for the running kernel without one; else the
	// placeholder, whose row then says where the real one is.
	found := map[string]string{}       // release -> System.map
	placeholder := map[string]string{} // release -> a placeholder map
	add := func(rel, p string) {
		if rel == "" || found[rel] != "" || !isFile(p) {
			return
		}
		if isPlaceholder(p) {
			if placeholder[rel] == "" {
				placeholder[rel] = p
			}
			return
		}
		found[rel] = p
	}
	perRelease(root, "System.map", []string{"boot", "usr/lib/debug/boot"}, add)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	runningRel := ""
	if filepath.Clean(root) == "/" {
		rel, symbols := h.running()
		if rel != "" && found[rel] == "" {
			found[rel] = symbols
		}
		runningRel = rel
	}
	// Without a real System.map, the kernel image's own kallsyms table:
	// boot/vmlinuz-RELEASE (Debian 13 has only a placeholder map), or
	// lib/modules/RELEASE/vmlinuz (Debian's 7.x, Fedora, Arch).
	images := map[string]string{}
	addImage := func(rel, p string) {
		if rel != "" && images[rel] == "" && isFile(p) {
			images[rel] = p
		}
	}
	perRelease(root, "vmlinuz", []string{"boot"}, addImage)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for rel, p := range images {
		if found[rel] == "" {
			found[rel] = p
		}
	}
	for rel, p := range placeholder {
		if found[rel] == "" {
			found[rel] = p
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: %w: no boot/System.map-RELEASE, usr/lib/debug/boot/System.map-RELEASE, lib/modules/RELEASE/System.map, boot/vmlinuz-RELEASE nor lib/modules/RELEASE/vmlinuz", root, ErrNoKernels)
	}
	var out []Kernel
	for _, rel := range slices.Sorted(maps.Keys(found)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := Kernel{Release: rel, Symbols: found[rel]}
		var modDir string
		for _, dir := range moduleDirs {
			if d := filepath.Join(root, dir, rel); isDir(d) {
				modDir = d
				k.Modules = []string{d}
				break
			}
		}
		// The build folder lib/modules/RELEASE/build links to (the
		// headers), followed inside the root.
		build := ""
		if modDir != "" {
			build = inRoot(root, filepath.Join(modDir, "build"))
		}
		symvers := []string{
			filepath.Join(root, "usr/src/linux-headers-"+rel, "Module.symvers"),
			filepath.Join(root, "usr/src/kernels", rel, "Module.symvers"),
		}
		if build != "" {
			symvers = append(symvers, filepath.Join(build, "Module.symvers"))
		}
		symvers = append(symvers,
			filepath.Join(root, "boot", "symvers-"+rel+".gz"),
			filepath.Join(root, "boot", "symvers-"+rel+".xz"))
		if modDir != "" {
			symvers = append(symvers, filepath.Join(modDir, "symvers.gz"), filepath.Join(modDir, "symvers.xz"))
		}
		k.Symvers = firstFile(symvers)
		// The configuration: /boot's (Debian, Fedora, RHEL), the modules
		// folder's (Fedora, RHEL), the headers'; the running kernel's own
		// (CONFIG_IKCONFIG_PROC) under "/".
		configs := []string{filepath.Join(root, "boot", "config-"+rel)}
		if modDir != "" {
			configs = append(configs, filepath.Join(modDir, "config"))
		}
		if build != "" {
			configs = append(configs, filepath.Join(build, ".config"))
		}
		configs = append(configs, filepath.Join(root, "usr/src/linux-headers-"+rel, ".config"))
		if rel == runningRel {
			configs = append(configs, "/proc/config.gz")
		}
		k.Config = firstFile(configs)
		k.Ftrace = ftraceFile(root, rel, modDir, build, k.Symbols, rel == runningRel, h.tracefs)
		out = append(out, k)
	}
	return out, nil
}

// inRoot is path with a symbolic link at its end followed as it would be
// inside root: an absolute target (lib/modules/RELEASE/build ->
// /usr/src/linux-headers-RELEASE, as packages install it) is taken under
// root, not on this system. It is "" when path is neither a link nor a
// folder.
func inRoot(root, path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if fi.IsDir() {
			return path
		}
		return ""
	}
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	if filepath.IsAbs(target) {
		return filepath.Join(root, target)
	}
	return filepath.Join(filepath.Dir(path), target)
}

// isPlaceholder reports whether the file at p begins as Debian's
// placeholder System.map (kallsyms.ErrPlaceholder).
func isPlaceholder(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return kallsyms.IsPlaceholder(head[:n])
}

// firstFile is the first of paths that is a regular file, or "".
// ftraceFile is where a kernel's ftrace call sites are: its vmlinux, as
// the debug packages install it (Debian's -dbg, Fedora's and RHEL's
// kernel-debuginfo), /boot's (Debian's ppc64el, SUSE's compressed one)
// or its build's; for the running kernel without one, tracefs's list
// (with addresses against /proc/kallsyms, names only against a System.map,
// whose addresses are the link's, not KASLR's); then /boot/vmlinuz-RELEASE
// (x86's bzImage: 1.5 s to decompress; arm64's Image), before a names-only
// list. "" when there is none.
func ftraceFile(root, rel, modDir, build, symbols string, running bool, tracefs []string) string {
	var images []string
	for _, ext := range []string{"", ".gz", ".xz", ".zst", ".bz2"} {
		images = append(images, filepath.Join(root, "boot", "vmlinux-"+rel+ext))
	}
	images = append(images,
		filepath.Join(root, "usr/lib/debug/boot", "vmlinux-"+rel),
		filepath.Join(root, "usr/lib/debug/lib/modules", rel, "vmlinux"))
	if build != "" {
		images = append(images, filepath.Join(build, "vmlinux"))
	}
	if modDir != "" {
		images = append(images, filepath.Join(modDir, "vmlinux"))
	}
	if p := firstFile(images); p != "" {
		return p
	}
	list := func(name string) string {
		if !running {
			return ""
		}
		for _, dir := range tracefs {
			// Root only, and not even that under lockdown: tried, not
			// just found.
			if f, err := os.Open(filepath.Join(dir, name)); err == nil {
				f.Close()
				return filepath.Join(dir, name)
			}
		}
		return ""
	}
	if symbols == kallsyms.DefaultPath {
		if p := list("available_filter_functions_addrs"); p != "" { // Linux 6.5+
			return p
		}
	}
	vmlinuz := []string{filepath.Join(root, "boot", "vmlinuz-"+rel)}
	if modDir != "" {
		vmlinuz = append(vmlinuz, filepath.Join(modDir, "vmlinuz")) // Fedora's
	}
	if p := firstFile(vmlinuz); p != "" {
		return p
	}
	return list("available_filter_functions")
}

func firstFile(paths []string) string {
	for _, p := range paths {
		if isFile(p) {
			return p
		}
	}
	return ""
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// KernelTree is the kernel built in dir, a kernel build directory (the
// source tree, or its O= folder), as build tools such as kpatch-build and
// klp-build see it: its System.map (else vmlinux's own kallsyms table),
// its Module.symvers, its .config, its modules (the tree's .ko files)
// and vmlinux for the ftrace call sites; its release from
// include/config/kernel.release. Whatever is missing is left empty; a
// folder with neither System.map nor vmlinux is ErrNoKernels.
func KernelTree(dir string) (Kernel, error) {
	if !isDir(dir) {
		return Kernel{}, fmt.Errorf("%s: not a folder (a kernel build directory: System.map, vmlinux, Module.symvers, .config)", dir)
	}
	k := Kernel{}
	if b, err := os.ReadFile(filepath.Join(dir, "include/config/kernel.release")); err == nil {
		k.Release = strings.TrimSpace(string(b))
	}
	switch m, v := filepath.Join(dir, "System.map"), filepath.Join(dir, "vmlinux"); {
	case isFile(m) && !isPlaceholder(m):
		k.Symbols = m
	case isFile(v):
		k.Symbols = v
	default:
		return Kernel{}, fmt.Errorf("%s: %w: no System.map nor vmlinux (build the kernel first)", dir, ErrNoKernels)
	}
	if p := filepath.Join(dir, "Module.symvers"); isFile(p) {
		k.Symvers = p
	}
	if p := filepath.Join(dir, ".config"); isFile(p) {
		k.Config = p
	}
	if p := filepath.Join(dir, "vmlinux"); isFile(p) {
		k.Ftrace = p
	}
	k.Modules = []string{dir}
	return k, nil
}

// moduleDirs are where a root keeps each release's modules folder
// (usr/lib/modules: merged-/usr systems and Debian's 7.x packages).
var moduleDirs = []string{"lib/modules", "usr/lib/modules"}

// perRelease calls add(release, path) for each file called name where a
// root keeps one per kernel: DIR/name-RELEASE for each of bootDirs, then
// lib/modules/RELEASE/name and usr/lib/modules/RELEASE/name.
func perRelease(root, name string, bootDirs []string, add func(rel, p string)) {
	for _, dir := range bootDirs {
		paths, _ := filepath.Glob(filepath.Join(root, dir, name+"-*"))
		for _, p := range paths {
			add(strings.TrimPrefix(filepath.Base(p), name+"-"), p)
		}
	}
	for _, dir := range moduleDirs {
		paths, _ := filepath.Glob(filepath.Join(root, dir, "*", name))
		for _, p := range paths {
			add(filepath.Base(filepath.Dir(p)), p)
		}
	}
}
