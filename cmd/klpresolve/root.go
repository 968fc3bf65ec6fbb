// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
	"github.com/klpresolve/klpresolve/symvers"
)

// installedFlags are --root and --release of the main job and link: one
// kernel as a distribution installs it (pipeline.KernelUnder), whose
// symbols, modules and Module.symvers stand for --kallsyms, --modules and
// --symvers.
type installedFlags struct {
	root, release, tree string
}

func (f *installedFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.tree, "kernel-tree", "", "a kernel build folder: its System.map, Module.symvers, .config, modules")
	c.Flags().StringVar(&f.root, "root", "", "a filesystem root with the kernel installed: / or its unpacked packages")
	c.Flags().StringVar(&f.release, "release", "", "with --root: the kernel's release, where the root has several")
}

// kernel is the --root kernel (nil without --root), its files put in
// place of the flags they stand for: --kallsyms must not be given as
// well; --modules and --symvers given win over the root's.
func (f *installedFlags) kernel(a *app, c *cobra.Command, modules *[]string, symversPath *string) (*pipeline.Kernel, error) {
	if f.tree != "" {
		if f.root != "" || c.Flags().Changed("kallsyms") {
			return nil, &exitError{exitUsage, errors.New("--kernel-tree, --root and --kallsyms each give the kernel's symbols: give one")}
		}
		k, err := pipeline.KernelTree(f.tree)
		if err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--kernel-tree: %w", err)}
		}
		f.root = f.tree // the kernel's line names it
		return f.use(a, k, modules, symversPath), nil
	}
	if f.root == "" {
		if f.release != "" {
			return nil, &exitError{exitUsage, errors.New("--release needs --root")}
		}
		return nil, nil
	}
	if c.Flags().Changed("kallsyms") {
		return nil, &exitError{exitUsage, errors.New("--root and --kallsyms both give the kernel's symbols: give one")}
	}
	k, err := pipeline.KernelUnder(c.Context(), f.root, f.release)
	if err != nil {
		if errors.Is(err, pipeline.ErrWhichKernel) {
			err = fmt.Errorf("%w (--release)", err)
		}
		if inner := rootsInside(f.root, err); len(inner) > 0 {
			err = fmt.Errorf("%w (its folders hold kernels: give one of them, such as --root %s; check --root '%s' takes them all)", err, inner[0], filepath.Join(f.root, "*"))
		}
		return nil, &exitError{exitUsage, fmt.Errorf("--root: %w", err)}
	}
	return f.use(a, k, modules, symversPath), nil
}

// use puts kernel k's files in place of the flags they stand for:
// --modules and --symvers given win over k's.
func (f *installedFlags) use(a *app, k pipeline.Kernel, modules *[]string, symversPath *string) *pipeline.Kernel {
	a.kallsymsPaths = []string{k.Symbols}
	if len(*modules) == 0 {
		*modules = k.Modules
	} else {
		k.Modules = *modules
	}
	if *symversPath == "" {
		*symversPath = k.Symvers
	} else {
		k.Symvers = *symversPath
	}
	return &k
}

// buildFiles are the files of the kernel's build that a run checks the
// module against as the loader will: the --root kernel (nil without), the
// --modules files, the --symvers table, and the kernel's vermagic and
// where it came from: --vermagic (from ""), else the first module among
// the modules' files.
type buildFiles struct {
	kernel           *pipeline.Kernel
	config           *pipeline.Config // the --root kernel's configuration (nil without)
	modules          *pipeline.ModuleFiles
	symvers          *symvers.Table
	magic, magicFrom string
}

// files reads the kernel's files (buildFiles) from the flags and the
// --root kernel; an unusable one is exit 2, before the kernel's symbols
// are read.
func (f *installedFlags) files(a *app, c *cobra.Command, modules []string, symversPath, magic string) (*buildFiles, error) {
	k, err := f.kernel(a, c, &modules, &symversPath)
	if err != nil {
		return nil, err
	}
	kf := &buildFiles{kernel: k, magic: magic}
	if k != nil && k.Config != "" {
		if kf.config, err = pipeline.OpenConfig(k.Config); err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--root: %w", err)}
		}
	}
	if kf.modules, err = findModules(c.Context(), modules); err != nil {
		return nil, err
	}
	if kf.symvers, err = openSymvers(symversPath); err != nil {
		return nil, err
	}
	if magic == "" && kf.modules != nil {
		if kf.magic, kf.magicFrom, err = kf.modules.Vermagic(); err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("--modules: %w", err)}
		}
	}
	return kf, nil
}

// linkOptions is lo with what the --root kernel's configuration decides
// of its loader's layout (pipeline.Config.LinkOptions), where the flags
// left lo at its defaults.
func (kf *buildFiles) linkOptions(lo modplt.LinkOptions) modplt.LinkOptions {
	if kf.config == nil {
		return lo
	}
	return kf.config.LinkOptions(lo)
}

// loaderConfig is what the --root kernel's configuration says of the
// loader's checks of a whole module (klp.ResolveOptions.Config), or nil.
func (kf *buildFiles) loaderConfig() *klp.KernelConfig {
	if kf.config == nil {
		return nil
	}
	return kf.config.Loader()
}

// installedJSON is the --root kernel in a JSON report.
type installedJSON struct {
	Root    string   `json:"root"`
	Release string   `json:"release"`
	Symbols string   `json:"symbols"`
	Modules []string `json:"modules"`
	Symvers string   `json:"symvers"`
	Config  string   `json:"config"`
	Ftrace  string   `json:"ftrace"`
}

func kernelJSON(f *installedFlags, k *pipeline.Kernel) *installedJSON {
	if k == nil {
		return nil
	}
	return &installedJSON{f.root, k.Release, k.Symbols, append([]string{}, k.Modules...), k.Symvers, k.Config, k.Ftrace}
}

// kernelLine is the --root kernel's line of a text report ("" without):
// its release and the files found for it, or what was not found and so
// not checked.
func kernelLine(f *installedFlags, k *pipeline.Kernel) string {
	if k == nil {
		return ""
	}
	mods := "no modules (lib/modules/RELEASE): what the patch defers to modules is not checked against their files, and they give no vermagic"
	if len(k.Modules) > 0 {
		mods = "modules " + strings.Join(k.Modules, ", ")
	}
	sv := "no Module.symvers (install its headers): symbol versions not checked"
	if k.Symvers != "" {
		sv = "Module.symvers " + k.Symvers
	}
	cfg := "no configuration (boot/config-RELEASE): the loader's defaults assumed"
	if k.Config != "" {
		cfg = "configuration " + k.Config
	}
	ft := "no vmlinux (usr/lib/debug/boot/vmlinux-RELEASE, its debug package's) nor boot/vmlinuz-RELEASE: patched functions not checked for ftrace call sites"
	if k.Ftrace != "" {
		ft = "ftrace call sites " + k.Ftrace
	}
	where := k.Release + " under " + f.root
	if f.tree != "" {
		where = cmpOr(k.Release, "a kernel") + " built in " + f.tree
	}
	return fmt.Sprintf("kernel: %s: %s; %s; %s; %s", where, mods, sv, cfg, ft)
}

// generation is the generation whose rules judge the kernel whose
// symbols are ix: --kernel-version's, else what ix, the --root kernel's
// release and configuration tell (pipeline.TellGeneration).
func (a *app) generationOf(ix *kallsyms.Index, kf *buildFiles) kgen.Evidence {
	h := pipeline.GenerationHints{Asked: a.generation, Config: kf.config}
	if kf.kernel != nil {
		h.Release = kf.kernel.Release
	}
	return pipeline.TellGeneration(ix, h)
}

// rulesJSON is the generation whose rules judged a kernel, in a JSON
// report.
type rulesJSON struct {
	Generation string `json:"generation"`
	Release    string `json:"release,omitempty"`
	Source     string `json:"source"`
	Detail     string `json:"detail,omitempty"`
	Exact      bool   `json:"exact"`
	Note       string `json:"note,omitempty"`
}

func rulesOf(e kgen.Evidence) *rulesJSON {
	return &rulesJSON{e.Generation.String(), e.Release, string(e.Source), e.Detail, e.Exact, e.Note()}
}

// rulesLines is the text report's line saying which generation's rules
// judged the kernel, and its note where they are not its own.
func rulesLines(w io.Writer, e kgen.Evidence) {
	fmt.Fprintf(w, "kernel rules: %s\n", e)
	if n := e.Note(); n != "" {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// imageJSON is a kernel image the symbols were read from, in a JSON
// report.
type imageJSON struct {
	Kind      string `json:"kind"`
	Release   string `json:"release"`
	Layout    string `json:"layout"`
	Symbols   int    `json:"symbols"`
	Addresses string `json:"addresses"`
}

func imageOf(ix *kallsyms.Index) *imageJSON {
	img, ok := ix.Image()
	if !ok {
		return nil
	}
	addrs := "link-time"
	if d := ix.Slide(); d != 0 {
		addrs = fmt.Sprintf("moved by %#x", d)
	}
	return &imageJSON{img.Kind, img.Release, img.Layout, img.Symbols, addrs}
}

// cmpOr is the first of its arguments that is not "".
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
