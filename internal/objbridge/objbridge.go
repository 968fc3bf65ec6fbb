// SPDX-License-Identifier: GPL-2.0-only

// Package objbridge hands an ELF object that package klp has parsed to
// package modplt, which makes its link view of it (a modplt.Module),
// without either package's exported API naming the internal ELF type and
// without parsing the file twice.
//
// modplt sets LinkModule in its init, its one write; klp, which imports
// modplt and so runs after that init, only calls it. Go's own standard
// library reaches across packages the same way where an exported
// signature must not name an internal type.
package objbridge

import "github.com/klpresolve/klpresolve/internal/elfobj"

// LinkModule makes a *modplt.Module of f (returned as any: this package
// sits below modplt and cannot name its type).
var LinkModule func(f *elfobj.File) (any, error)
