// SPDX-License-Identifier: GPL-2.0-only

// Package modname names modules as the kernel does: KBUILD_MODNAME, the
// module's file name with dashes made underscores (scripts/Makefile.lib's
// modname), which is the name in /proc/modules, kallsyms and livepatch's
// object names.
package modname

import (
	"path/filepath"
	"strings"
)

// Of is the kernel's name for a module named s as a file or in modpost's
// lists (depends=): dashes become underscores.
func Of(s string) string { return strings.ReplaceAll(s, "-", "_") }

// FromFile is the kernel's name for the module in file path: its base
// name without .ko (and a compression suffix: .xz, .zst, .gz), dashes
// made underscores; "" when path is no .ko file.
func FromFile(path string) string {
	b := filepath.Base(path)
	for _, z := range []string{".xz", ".zst", ".gz"} {
		b = strings.TrimSuffix(b, z)
	}
	b, ok := strings.CutSuffix(b, ".ko")
	if !ok {
		return ""
	}
	return Of(b)
}

// FromObject is FromFile for a module or an object kbuild has still to
// link: a .o file's base name without .o is named too.
func FromObject(path string) string {
	if n := FromFile(path); n != "" {
		return n
	}
	return Of(strings.TrimSuffix(filepath.Base(path), ".o"))
}
