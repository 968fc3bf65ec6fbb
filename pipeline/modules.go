// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/klp"
)

// ErrModuleFile: the file found for a module a patch needs is another
// module's, or for another architecture, or there are two of them.
var ErrModuleFile = errors.New("unusable module file")

// ModuleFiles finds modules' .ko files by module name, to check what a
// patch defers to modules a kernel's symbol list lacks (not loaded, or a
// System.map, which lists none) against the modules themselves
// (klp.Target). Safe for concurrent use; each target is read once per
// CONFIG_KALLSYMS_ALL setting.
type ModuleFiles struct {
	byName map[string][]string // module name -> files, in the order found

	mu      sync.Mutex
	targets map[targetKey]*targetOnce

	first firstModule
}

// firstModule is what the first module by name tells of the kernel's
// build: its vermagic and the size of its struct module.
type firstModule struct {
	once       sync.Once
	path       string
	magic      string
	structSize uint64
	err        error
}

type targetKey struct {
	name string
	all  bool
}

type targetOnce struct {
	once sync.Once
	t    *klp.Target
	err  error
}

// FindModules indexes the module files under paths: a directory is
// searched recursively for .ko files (also .ko.xz, .ko.zst, .ko.gz), as in
// /lib/modules/VERSION; a file is taken as it is. A module's name is its
// file's as kbuild makes it (KBUILD_MODNAME: dashes as underscores); the
// module's own .modinfo name is checked when it is read. Once ctx is
// done it stops with ctx.Err().
func FindModules(ctx context.Context, paths []string) (*ModuleFiles, error) {
	mf := &ModuleFiles{byName: map[string][]string{}, targets: map[targetKey]*targetOnce{}}
	add := func(path string) {
		if n := klp.ModuleNameFromFile(path); n != "" && !slices.Contains(mf.byName[n], path) {
			mf.byName[n] = append(mf.byName[n], path)
		}
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if klp.ModuleNameFromFile(p) == "" {
				return nil, fmt.Errorf("%s: not a module file (.ko, .ko.xz, .ko.zst or .ko.gz)", p)
			}
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return mf, nil
}

// Len is the number of module names found.
func (mf *ModuleFiles) Len() int { return len(mf.byName) }

// Path is the file of the module called name, if one was found; two files
// of one name are an error (a tree of two kernels' modules), named in it.
func (mf *ModuleFiles) Path(name string) (string, error) {
	ps := mf.byName[name]
	switch len(ps) {
	case 0:
		return "", nil
	case 1:
		return ps[0], nil
	}
	// One file found twice (a link to it, or a directory and a file in
	// it) is one file.
	first, err := os.Stat(ps[0])
	if err != nil {
		return "", err
	}
	for _, p := range ps[1:] {
		if fi, err := os.Stat(p); err != nil || !os.SameFile(first, fi) {
			return "", fmt.Errorf("%w: %d files for module %s (%s and %s): give the modules of one kernel", ErrModuleFile, len(ps), name, ps[0], p)
		}
	}
	return ps[0], nil
}

// Vermagic is the kernel's VERMAGIC_STRING as the module files have it:
// the .modinfo vermagic of the first module by name, and that file's
// path, read once. It is "" when that module has none, or has two files
// (the modules of two kernels: whose vermagic would be a guess).
func (mf *ModuleFiles) Vermagic() (magic, path string, err error) {
	v := mf.readFirst()
	if v.magic == "" {
		return "", "", v.err
	}
	return v.magic, v.path, v.err
}

// ModuleStruct is the size of the kernel's struct module as the module
// files have it: the size of the first module's
// .gnu.linkonce.this_module (modpost's NAME.mod.c defines it from the
// kernel's headers), and that file's path; 0 where not known.
func (mf *ModuleFiles) ModuleStruct() (size uint64, path string, err error) {
	v := mf.readFirst()
	if v.structSize == 0 {
		return 0, "", v.err
	}
	return v.structSize, v.path, v.err
}

// readFirst reads the first module by name, once.
func (mf *ModuleFiles) readFirst() *firstModule {
	v := &mf.first
	v.once.Do(func() {
		names := slices.Sorted(maps.Keys(mf.byName))
		if len(names) == 0 {
			return
		}
		p, err := mf.Path(names[0])
		if err != nil || p == "" {
			return
		}
		m, err := klp.Open(p)
		if err != nil {
			v.err = err
			return
		}
		v.path, v.magic, v.structSize = p, m.ModInfo("vermagic"), m.ModuleStructSize()
	})
	return v
}

// Target reads the module called name as a target for a patch for arch
// in byte order order (nil: either), or nil, nil when no file was found
// for it. A file for another architecture or byte order is ErrModuleFile:
// Arch does not tell a big-endian arm64 or arm module from a
// little-endian one, and a kernel loads only its own (elf_check_arch()).
func (mf *ModuleFiles) Target(name, arch string, order binary.ByteOrder, kallsymsAll bool) (*klp.Target, error) {
	path, err := mf.Path(name)
	if path == "" || err != nil {
		return nil, err
	}
	mf.mu.Lock()
	o := mf.targets[targetKey{name, kallsymsAll}]
	if o == nil {
		o = &targetOnce{}
		mf.targets[targetKey{name, kallsymsAll}] = o
	}
	mf.mu.Unlock()
	o.once.Do(func() {
		m, err := klp.Open(path)
		if err != nil {
			o.err = err
			return
		}
		o.t, o.err = klp.NewTarget(m, kallsymsAll)
	})
	if o.err != nil {
		return nil, o.err
	}
	switch {
	case o.t.Name != name:
		return nil, fmt.Errorf("%s: %w: its .modinfo names module %s, not %s", path, ErrModuleFile, o.t.Name, name)
	case o.t.Arch != arch:
		return nil, fmt.Errorf("%s: %w: a module for %s, and the patch is for %s", path, ErrModuleFile, o.t.Arch, arch)
	case order != nil && o.t.ByteOrder != nil && o.t.ByteOrder != order:
		return nil, fmt.Errorf("%s: %w: a %s module for %s, and the patch is %s", path, ErrModuleFile, elfobj.EndianName(o.t.ByteOrder), arch, elfobj.EndianName(order))
	}
	return o.t, nil
}

// targetsFor reads, from mf, the modules m names that ix lacks (the
// objects of its .klp.rela sections and patched functions), and those
// whose functions it patches that ix has (for their ftrace call sites).
// It returns them, the names of the modules ix lacks that mf has no file
// for, and those ix has whose file is another build (Target.Matches),
// which are left out.
func (mf *ModuleFiles) targetsFor(m *klp.Module, ix *kallsyms.Index) (targets map[string]*klp.Target, missing, otherBuild []string, err error) {
	var objects []string
	for _, s := range m.Sections {
		if s.Err == nil && !ix.HasObject(s.Object) {
			objects = append(objects, s.Object)
		}
	}
	for _, f := range m.Funcs {
		objects = append(objects, f.Object)
	}
	slices.Sort(objects)
	objects = slices.Compact(objects)
	targets = map[string]*klp.Target{}
	for _, o := range objects {
		if o == kallsyms.Vmlinux {
			continue
		}
		t, err := mf.Target(o, m.Arch, m.ByteOrder, ix.KernelKallsyms().All)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case t == nil && !ix.HasObject(o):
			missing = append(missing, o)
		case t == nil:
		case ix.HasObject(o) && !t.Matches(ix):
			otherBuild = append(otherBuild, o)
		default:
			targets[o] = t
		}
	}
	return targets, missing, otherBuild, nil
}
