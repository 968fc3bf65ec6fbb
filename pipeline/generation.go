// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
)

// GenerationHints are what may tell a kernel's generation besides its
// symbols.
type GenerationHints struct {
	// Asked is the generation asked for (--kernel-version): it wins.
	Asked kgen.Generation
	// Release is the kernel's release where a root told it
	// (Kernel.Release), and ReleaseFrom the folder it came from.
	Release, ReleaseFrom string
	// Config is the kernel's configuration, whose header names its
	// release.
	Config *Config
}

// TellGeneration says which generation's rules judge the kernel whose
// symbols are ix, and from what: the generation asked for, else the
// release in the banner of a kernel image ix was read from, the root's
// release, the configuration's header, the symbols that only one
// generation's kernels have (kgen.FromSymbols), and else kgen.Default,
// assumed (Evidence.Note says so). ix may be nil where only the
// generation asked for counts.
func TellGeneration(ix *kallsyms.Index, h GenerationHints) kgen.Evidence {
	if h.Asked != kgen.Unknown {
		return kgen.Evidence{Generation: h.Asked, Source: kgen.FromFlag, Exact: true}
	}
	if ix == nil {
		return kgen.Assume()
	}
	if img, ok := ix.Image(); ok && img.Release != "" {
		if e, err := kgen.ForReleaseString(img.Release, kgen.FromImage, ""); err == nil {
			return e
		}
	}
	if h.Release != "" {
		if e, err := kgen.ForReleaseString(h.Release, kgen.FromRelease, h.ReleaseFrom); err == nil {
			return e
		}
	}
	if h.Config != nil && h.Config.c.Release != "" {
		if e, err := kgen.ForReleaseString(h.Config.c.Release, kgen.FromConfig, h.Config.File()); err == nil {
			return e
		}
	}
	if e, ok := kgen.FromSymbols(func(name string) bool { _, ok := ix.Find(kallsyms.Vmlinux, name, 1); return ok }); ok {
		return e
	}
	return kgen.Assume()
}
