// SPDX-License-Identifier: GPL-2.0-only

// Package reference keeps the algorithms klpresolve is measured against:
// the naive way to parse kallsyms in Go, and the kernel's own lookups, old
// and current. Benchmarks (go test -bench and "klpresolve bench") run them
// side by side with the project's code in the same run and report ratios.
// Nothing here is used to resolve anything.
package reference

import (
	"bufio"
	"bytes"
	"sort"
	"strconv"
	"strings"
)

// NaiveSym is one symbol as the naive parser keeps it.
type NaiveSym struct {
	Addr   uint64
	Type   string
	Module string
}

// NaiveParse is the obvious Go parser: bufio.Scanner, strings.Fields and a
// map of slices keyed by name. It is the baseline the index is compared to.
func NaiveParse(data []byte) map[string][]NaiveSym {
	m := make(map[string][]NaiveSym)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		mod := ""
		if len(f) > 3 {
			mod = strings.Trim(f[3], "[]")
		}
		m[f[2]] = append(m[f[2]], NaiveSym{Addr: a, Type: f[1], Module: mod})
	}
	return m
}

// KSym is one entry of the kernel's tables as the kernel algorithms see
// them.
type KSym struct {
	Name   string
	Module string // "" for vmlinux
	Addr   uint64
}

// Kernel holds a symbol list the way the kernel does: the vmlinux table in
// address order with a name-sorted sequence index (kallsyms_seqs_of_names,
// Linux 6.2+), and each module's symbols in symtab order.
type Kernel struct {
	Vmlinux []KSym
	Seqs    []int // vmlinux indexes sorted by (name, address order)
	Modules []KModule
}

// KModule is one module's symbol table.
type KModule struct {
	Name string
	Syms []KSym
}

// NewKernel builds the kernel's tables from kallsyms text.
func NewKernel(data []byte) *Kernel {
	k := &Kernel{}
	idx := map[string]int{}
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		f := strings.Fields(string(line))
		if len(f) < 3 {
			continue
		}
		a, _ := strconv.ParseUint(f[0], 16, 64)
		if len(f) == 3 {
			k.Vmlinux = append(k.Vmlinux, KSym{Name: f[2], Addr: a})
			continue
		}
		mod := strings.Trim(f[3], "[]")
		i, ok := idx[mod]
		if !ok {
			i = len(k.Modules)
			idx[mod] = i
			k.Modules = append(k.Modules, KModule{Name: mod})
		}
		k.Modules[i].Syms = append(k.Modules[i].Syms, KSym{Name: f[2], Module: mod, Addr: a})
	}
	k.Seqs = make([]int, len(k.Vmlinux))
	for i := range k.Seqs {
		k.Seqs[i] = i
	}
	sort.SliceStable(k.Seqs, func(a, b int) bool { return k.Vmlinux[k.Seqs[a]].Name < k.Vmlinux[k.Seqs[b]].Name })
	return k
}

// findArg and match are klp_find_arg and klp_match_callback of
// kernel/livepatch/core.c.
type findArg struct {
	name, objname string
	addr          uint64
	count, pos    uint64
}

func (a *findArg) match(addr uint64) bool {
	a.addr = addr
	a.count++
	return (a.pos != 0 && a.count == a.pos) || (a.pos == 0 && a.count > 1)
}

func (a *findArg) result() (uint64, bool) {
	if a.addr == 0 || (a.count > 1 && a.pos == 0) || (a.pos > 0 && a.pos != a.count) {
		return 0, false
	}
	return a.addr, true
}

// strcmpEq is the kernel's strcmp(a, b) == 0 (lib/string.c): byte by byte
// up to the first difference or the end of both. A C string has no length
// to compare first, as Go's == does (which skips nearly every name of a
// walk unread): klp_find_callback() reads the first byte of every name it
// is given, and more where they share a prefix.
func strcmpEq(a, b string) bool {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// OldLookup is klp_find_object_symbol() of Linux 6.1 and earlier: a walk
// over every vmlinux symbol (kallsyms_on_each_symbol) or over every module
// symbol (module_kallsyms_on_each_symbol), each name compared by
// klp_find_callback()'s strcmp, then the module's name. (The kernel also
// expanded each vmlinux name from the compressed table before comparing
// it, kallsyms_expand_symbol(), which this leaves out: the reference is
// the faster for it.)
func (k *Kernel) OldLookup(objname, name string, pos uint64) (uint64, bool) {
	a := &findArg{name: name, objname: objname, pos: pos}
	if objname == "" {
		for _, s := range k.Vmlinux {
			if strcmpEq(name, s.Name) && a.match(s.Addr) {
				break
			}
		}
		return a.result()
	}
outer:
	for _, m := range k.Modules {
		for _, s := range m.Syms {
			if !strcmpEq(name, s.Name) || !strcmpEq(objname, m.Name) {
				continue
			}
			if a.match(s.Addr) {
				break outer
			}
		}
	}
	return a.result()
}

// CurrentLookup is the kernel's algorithm since 6.2/6.3: vmlinux by binary
// search over the name-sorted sequence (kallsyms_on_each_match_symbol), a
// module by walking that module's symbols only.
func (k *Kernel) CurrentLookup(objname, name string, pos uint64) (uint64, bool) {
	a := &findArg{name: name, objname: objname, pos: pos}
	if objname == "" {
		lo := sort.Search(len(k.Seqs), func(i int) bool { return k.Vmlinux[k.Seqs[i]].Name >= name })
		for i := lo; i < len(k.Seqs) && k.Vmlinux[k.Seqs[i]].Name == name; i++ {
			if a.match(k.Vmlinux[k.Seqs[i]].Addr) {
				break
			}
		}
		return a.result()
	}
	for _, m := range k.Modules {
		if m.Name != objname {
			continue
		}
		for _, s := range m.Syms {
			if strcmpEq(name, s.Name) && a.match(s.Addr) {
				break
			}
		}
		break
	}
	return a.result()
}

// ObjectMap is the plain Go index a lookup is measured against: per
// object, a map from each name to its addresses in the object's order
// (as the index keeps them), built from the index's own symbols so that
// both answer the same data.
type ObjectMap map[string]map[string][]uint64

// Add files one symbol.
func (m ObjectMap) Add(object, name string, addr uint64) {
	o := m[object]
	if o == nil {
		o = map[string][]uint64{}
		m[object] = o
	}
	o[name] = append(o[name], addr)
}

// Lookup is klp_find_object_symbol()'s answer from the map: the pos-th
// address of name in object (pos 0: the only one), and whether there is
// exactly that one.
func (m ObjectMap) Lookup(object, name string, pos uint64) (uint64, bool) {
	as := m[object][name]
	switch {
	case pos == 0 && len(as) == 1:
		return as[0], true
	case pos > 0 && pos <= uint64(len(as)):
		return as[pos-1], true
	}
	return 0, false
}
