// SPDX-License-Identifier: GPL-2.0-only

package symvers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrVermagic: the module's vermagic is not the kernel's, as same_magic()
// compares them: check_modinfo()'s "version magic '%s' should be '%s'".
var ErrVermagic = errors.New("version magic disagrees with the kernel's")

// Magic is a module's vermagic checked against a kernel's (CheckVermagic).
type Magic struct {
	// Module is the module's .modinfo vermagic; Kernel, the kernel's
	// VERMAGIC_STRING.
	Module, Kernel string
	// ReleaseSkipped: the kernel was built with CONFIG_MODVERSIONS and
	// the module has __versions, so the loader compares only what follows
	// the release (the first word): its symbols' CRCs stand for the rest.
	ReleaseSkipped bool
	// Forced: the module has no vermagic, which the loader lets through
	// only by try_to_force_load(): with CONFIG_MODULE_FORCE_LOAD it taints
	// the kernel ("bad vermagic: kernel tainted"), without it the load
	// fails (-ENOEXEC). Not a Problem: it depends on that option.
	Forced bool
	// Problem, when the loader refuses the module (ErrVermagic), carries
	// the kernel's message.
	Problem *Problem
}

// OK reports whether the loader takes the module's vermagic (Forced
// aside).
func (g *Magic) OK() bool { return g.Problem == nil }

// Modversions reports whether a kernel whose VERMAGIC_STRING is vermagic
// was built with CONFIG_MODVERSIONS: include/linux/vermagic.h puts the
// word "modversions" after the release exactly then.
func Modversions(vermagic string) bool {
	words := strings.Fields(vermagic)
	return len(words) > 1 && slices.Contains(words[1:], "modversions")
}

// SameMagic reports whether the loader takes a module whose vermagic is
// module on a kernel whose vermagic is kernel: same_magic()
// (kernel/module/version.c; internal.h without CONFIG_MODVERSIONS; the
// same from 6.1 to 7.2). A
// kernel with CONFIG_MODVERSIONS skips the release, the first word of
// each, when the module has __versions (hasVersions); otherwise the
// strings must be equal, to the byte (the trailing space included).
func SameMagic(module, kernel string, hasVersions bool) bool {
	if hasVersions && Modversions(kernel) {
		// strcspn(magic, " "): from the first space on.
		module = module[strings.IndexByte(module+" ", ' '):]
		kernel = kernel[strings.IndexByte(kernel+" ", ' '):]
	}
	return module == kernel
}

// CheckVermagic checks m's vermagic (Module.Vermagic, HasVermagic) against kernel, the
// kernel's VERMAGIC_STRING, as check_modinfo() does when it loads m:
// after module_layout's version (Table.Check) and before any other
// symbol's.
func CheckVermagic(m Module, kernel string) *Magic {
	g := &Magic{Module: m.Vermagic, Kernel: kernel, ReleaseSkipped: m.HasVersions && Modversions(kernel)}
	switch {
	case !m.HasVermagic:
		g.Forced = true
	case !SameMagic(m.Vermagic, kernel, m.HasVersions):
		g.Problem = &Problem{Symbol: "vermagic", Err: ErrVermagic,
			Message: fmt.Sprintf("%s: version magic '%s' should be '%s'", m.Name, m.Vermagic, kernel)}
	}
	return g
}
