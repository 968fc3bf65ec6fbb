// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// pltArea is one region's PLT (.plt or .init.plt) as it is filled.
type pltArea struct {
	p    *Placed
	max  int // plt_max_entries: what the count reserved
	used int // slots taken, skipped and fixed ones included
	// fixed are arm's fixed slots (fixed_plts[]), taken when the region's
	// first entry is asked for (prealloc_fixed()): their targets, 0 where
	// the kernel's symbols do not say.
	fixed []uint64
	// last is the entry made last, at lastAt (hasLast: there is one, and
	// it is a PLT entry, not arm64's ADRP veneer). The kernel reuses an
	// entry only when it is the last one made: it applies the
	// relocations of a section sorted, so a branch's twin comes right
	// before it (get_module_plt(), module_emit_plt_entry()).
	last    pltKey
	lastAt  uint64
	hasLast bool
}

// pltKey is an entry's identity: "the same entry" means the same final
// target, in the same instruction set (arm's ARM and Thumb-2 entries
// differ).
type pltKey struct {
	thumb  bool
	target uint64
}

func newPLTArea(p *Placed, max int) *pltArea {
	return &pltArea{p: p, max: max}
}

// made records the entry just made at addr for k.
func (a *pltArea) made(k pltKey, addr uint64) {
	a.last, a.lastAt, a.hasLast = k, addr, true
}

// pltFor returns region's PLT, or ErrNoPLT.
func (l *linker) pltFor(r Region) (*pltArea, error) {
	if a := l.plt[r]; a != nil {
		return a, nil
	}
	return nil, &RelocError{Kind: ErrNoPLT, Detail: "the module has no " + map[Region]string{Core: ".plt", Init: ".init.plt"}[r] + " section"}
}

// pltFull is the error for a PLT with no slot left; why, if not empty,
// says why the count reserved too few.
func pltFull(a *pltArea, why string) error {
	d := fmt.Sprintf("%s has %d slots", a.p.Name, a.max)
	if why != "" {
		d += ": " + why
	}
	return &RelocError{Kind: ErrPLTFull, Detail: d}
}

// gotArea is the module GOT an x86_64 PIE module needs: one 8-byte entry
// (the target's address) per distinct (symbol, addend), in a section the
// linker adds at the end of core.
type gotArea struct {
	p       *Placed
	max     int
	entries map[gotKey]uint64
}

type gotKey struct {
	sym    uint32
	addend int64
}

const gotName = ".got"

// addGOT sizes and places the GOT (optimal count: one table, deduplicated
// by symbol and addend).
func (l *linker) addGOT() error {
	c, err := l.m.Count(Options{Mode: ModeOptimal})
	if err != nil {
		return err
	}
	if c.GOT == 0 {
		return nil
	}
	end := l.opts.Base
	for _, p := range l.img.Sections {
		if p.Region == Core {
			end = max(end, p.Addr+p.Size)
		}
	}
	addr := (end + 7) &^ 7
	if a, ok := l.opts.At[gotName]; ok {
		addr = a
	}
	p := &Placed{Index: -1, Name: gotName, Region: Core, Addr: addr, Size: uint64(c.GOT) * amd64GOTEntry, Align: 8, Flags: elf.SHF_ALLOC | elf.SHF_WRITE}
	p.Data = make([]byte, p.Size)
	l.img.Sections = append(l.img.Sections, p)
	l.got = &gotArea{p: p, max: c.GOT, entries: map[gotKey]uint64{}}
	l.img.GOTMax = c.GOT
	return nil
}

// gotEntry returns the address of the entry holding rc's symbol address.
func (l *linker) gotEntry(rc *reloc) (uint64, error) {
	g := l.got
	if g == nil {
		return 0, &RelocError{Kind: ErrPLTFull, Detail: "no GOT"}
	}
	k := gotKey{rc.r.Sym, rc.A}
	if a, ok := g.entries[k]; ok {
		return a, nil
	}
	n := len(g.entries)
	if n >= g.max {
		return 0, &RelocError{Kind: ErrPLTFull, Detail: fmt.Sprintf("the GOT has %d entries", g.max)}
	}
	binary.LittleEndian.PutUint64(g.p.Data[n*amd64GOTEntry:], rc.S)
	a := g.p.Addr + uint64(n*amd64GOTEntry)
	g.entries[k] = a
	l.img.GOTUsed = n + 1
	return a, nil
}
