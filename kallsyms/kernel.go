// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"fmt"
	"strings"

	"github.com/klpresolve/klpresolve/kgen"
)

// KernelKallsyms is what a kernel's own kallsyms table holds of vmlinux,
// which is what livepatch searches (kallsyms_on_each_symbol()), as far as
// an input tells. A /proc/kallsyms is that table. A System.map is not: it
// lists every symbol of vmlinux, and the kernel's build
// (scripts/kallsyms.c) leaves some out of its table: always a few
// (is_ignored_symbol()), and, without CONFIG_KALLSYMS_ALL, every symbol
// outside the kernel's code (symbol_valid()), which is every data symbol.
// Debian builds arm64 and armmp 6.1 without it (and so without
// livepatch, which depends on it): jiffies is in their System.maps and
// not in their kallsyms.
type KernelKallsyms struct {
	// All is CONFIG_KALLSYMS_ALL: the table holds data symbols too. For a
	// System.map it is read from the table's size (Symbols); true when
	// the size is unknown.
	All bool
	// Symbols is the number of vmlinux symbols the kernel's table
	// holds, when the input is a System.map that lists the table
	// (kallsyms_offsets, 4 bytes a symbol, up to kallsyms_relative_base;
	// or kallsyms_addresses, a pointer a symbol, up to
	// kallsyms_num_syms), else 0.
	Symbols int
	// FromMap: the input lists symbols the kernel's table never holds
	// (kallsyms_offsets and the like): it is a System.map, or nm's
	// output, not a kallsyms.
	FromMap bool

	// Generation is the kernel's generation as its symbols tell it
	// (kgen.FromSymbols; kgen.Unknown where they do not), whose
	// scripts/kallsyms.c's rules Lists applies (6.1's for Unknown).
	Generation kgen.Generation

	text, inittext [2]uint64 // _stext.._etext, _sinittext.._einittext
}

// KernelKallsyms tells what the kernel's own kallsyms holds of vmlinux
// (see KernelKallsyms). O(1), and worked out once.
func (ix *Index) KernelKallsyms() KernelKallsyms {
	ix.kernelOnce.Do(func() { ix.kernel = ix.kernelKallsyms() })
	return ix.kernel
}

func (ix *Index) kernelKallsyms() KernelKallsyms {
	k := KernelKallsyms{All: true}
	addr := func(name string) (uint64, bool) {
		s, ok := ix.Find(Vmlinux, name, 1)
		return s.Address, ok
	}
	// A kernel image's table is the kernel's kallsyms itself; a list
	// with modules in it is a kallsyms too, whatever vmlinux symbols it
	// has (with CONFIG_KALLSYMS_ALL it names its own tables, as a
	// System.map does): modules are never in a System.map.
	kallsyms := ix.image != nil
	for _, o := range ix.objs[min(1, len(ix.objs)):] {
		kallsyms = kallsyms || !o.pseudo
	}
	if kallsyms {
		k.All = ix.ListsData()
		return k
	}
	var n uint64
	if off, ok := addr("kallsyms_offsets"); ok {
		k.FromMap = true
		if rb, ok := addr("kallsyms_relative_base"); ok && rb > off {
			n = (rb - off) / 4
		}
	} else if as, ok := addr("kallsyms_addresses"); ok {
		k.FromMap = true
		if ns, ok := addr("kallsyms_num_syms"); ok && ns > as {
			word := uint64(8)
			if as>>32 == 0 {
				word = 4
			}
			n = (ns - as) / word
		}
	}
	if !k.FromMap {
		// A kallsyms is the table; it holds data if it lists data.
		k.All = ix.ListsData()
		return k
	}
	if e, ok := kgen.FromSymbols(func(name string) bool { _, ok := addr(name); return ok }); ok {
		k.Generation = e.Generation
	}
	k.text[0], _ = addr("_stext")
	k.text[1], _ = addr("_etext")
	k.inittext[0], _ = addr("_sinittext")
	k.inittext[1], _ = addr("_einittext")
	if n > 0 && len(ix.objs) > 0 {
		listed := uint64(ix.objs[0].end - ix.objs[0].start)
		k.Symbols = int(min(n, listed))
		// With CONFIG_KALLSYMS_ALL the table holds about every symbol
		// the map lists (94,266 of 94,280 on Debian's amd64 6.1);
		// without, the code (50,336 of 115,299 on its arm64). Alignment
		// padding after the table can add an entry or two.
		k.All = n*4 >= listed*3 || k.text[1] <= k.text[0]
	}
	return k
}

// LookupListed is Lookup among the symbols the kernel's own kallsyms
// holds (KernelKallsyms.Lists), which is where klp_find_object_symbol()
// searches: the same answer as Lookup on a kallsyms, and on a System.map
// for every name the kernel's table holds wherever it occurs. A vmlinux
// name the table lacks somewhere (data without CONFIG_KALLSYMS_ALL) is
// counted without those occurrences: not found if none is left, with a
// Note saying why. Modules are never in a System.map.
func (ix *Index) LookupListed(object, name string, sympos uint64) (Symbol, error) {
	k := ix.KernelKallsyms()
	if !k.FromMap || (object != "" && object != Vmlinux) || ix.closed || len(ix.objs) == 0 {
		return ix.Lookup(object, name, sympos)
	}
	// Nearly always the table holds every occurrence (code, or a kernel
	// with CONFIG_KALLSYMS_ALL): then Lookup is the answer, and no
	// candidate list is built to find that out.
	head := ix.find(&ix.objs[0], name)
	if ix.allListed(k, head, name) {
		return ix.lookupFrom(0, head, name, sympos)
	}
	kept, left := k.split(ix.candidates(&ix.objs[0], name))
	// klp_find_object_symbol() over what is left: klp_find_callback()
	// stops at the wanted position, or at the second match for sympos 0,
	// and the address it stopped at must not be 0.
	var addr uint64
	var count int
	switch {
	case len(kept) == 0:
	case sympos == 0:
		count = min(len(kept), 2)
		addr = kept[count-1].Address
	default:
		count = int(min(sympos, uint64(len(kept))))
		addr = kept[count-1].Address
	}
	switch {
	case addr == 0:
		note := k.why(left)
		if len(kept) > 0 {
			note = "the symbol is listed at address 0, which the kernel treats as not found"
		}
		return Symbol{}, &LookupError{Object: Vmlinux, Name: name, Pos: sympos, Kind: ErrNotFound, Count: len(kept), Note: note}
	case sympos == 0 && count > 1:
		return Symbol{}, &LookupError{Object: Vmlinux, Name: name, Kind: ErrAmbiguous, Count: len(kept), Candidates: kept[:min(len(kept), MaxCandidates)], Note: k.why(left)}
	case sympos > 0 && sympos != uint64(count):
		return Symbol{}, &LookupError{Object: Vmlinux, Name: name, Pos: sympos, Kind: ErrNoSuchPosition, Count: len(kept), Candidates: kept[:min(len(kept), MaxCandidates)], Note: k.why(left)}
	}
	return kept[count-1], nil
}

// allListed reports whether k lists every vmlinux symbol answering name,
// walking from head (find) without building a Symbol list.
func (ix *Index) allListed(k KernelKallsyms, head uint32, name string) bool {
	for i := head; i != 0; i = ix.next[i-1] {
		s := ix.at(i - 1)
		if ix.matches(i-1, name) && !k.lists(ix.name(i-1), s.typ, s.addr) {
			return false
		}
		if s.flags&symHasNext == 0 {
			break // the chain ends here: next[] is not read (as in search)
		}
	}
	return true
}

// CandidatesListed is Candidates among the symbols the kernel's own
// kallsyms holds (see LookupListed), positions counted among them.
func (ix *Index) CandidatesListed(object, name string) []Symbol {
	c := ix.Candidates(object, name)
	if k := ix.KernelKallsyms(); k.FromMap && (object == "" || object == Vmlinux) {
		c, _ = k.split(c)
	}
	return c
}

// split parts vmlinux candidates into those the kernel's table holds,
// renumbered in its order, and the others.
func (k KernelKallsyms) split(all []Symbol) (kept, left []Symbol) {
	for _, c := range all {
		if k.Lists(c) {
			c.Pos = len(kept) + 1
			kept = append(kept, c)
		} else {
			left = append(left, c)
		}
	}
	return kept, left
}

// why says why the symbols left are not in the kernel's table.
func (k KernelKallsyms) why(left []Symbol) string {
	s := left[0]
	where := fmt.Sprintf("the System.map's %s at %#x (type %c)", s.Name, s.Address, s.Type)
	if len(left) > 1 {
		where += fmt.Sprintf(" and %d more", len(left)-1)
	}
	if k.ignored(s.Name, s.Type) {
		return where + ": no kernel's kallsyms holds it (scripts/kallsyms.c ignores it), and livepatch searches kallsyms"
	}
	return fmt.Sprintf("%s: outside the kernel's code, and this kernel was built without CONFIG_KALLSYMS_ALL (its kallsyms table holds %d symbols), so its kallsyms, which livepatch searches, holds code only", where, k.Symbols)
}

// Lists reports whether the kernel's table holds s, a vmlinux symbol of
// the input the KernelKallsyms came from: scripts/kallsyms.c's
// is_ignored_symbol() and symbol_valid(). Every symbol of a kallsyms is
// listed.
func (k KernelKallsyms) Lists(s Symbol) bool { return k.lists(s.Name, s.Type, s.Address) }

func (k KernelKallsyms) lists(name string, typ byte, addr uint64) bool {
	if !k.FromMap {
		return true
	}
	if k.ignored(name, typ) {
		return false
	}
	if k.All {
		return true
	}
	// symbol_valid(): only _stext.._etext and _sinittext.._einittext,
	// ends included, and no symbol but the end marker at an end (it
	// could move between the build's two passes); from 6.12, the
	// linker's __start_ and __stop_ section bounds anywhere.
	if k.Generation > kgen.Linux6_1 && (strings.HasPrefix(name, "__start_") || strings.HasPrefix(name, "__stop_")) {
		return true
	}
	in := func(r [2]uint64) bool { return addr >= r[0] && addr <= r[1] }
	if !in(k.text) && !in(k.inittext) {
		return false
	}
	return !(addr == k.text[1] && name != "_etext") && !(addr == k.inittext[1] && name != "_einittext")
}

// The prefixes and suffixes of is_ignored_symbol()'s names.
var (
	ignoredPrefixes = []string{"__efistub_", "__kvm_nvhe_$", "__kvm_nvhe_.L", "__AArch64ADRPThunk_",
		"__ARMV5PILongThunk_", "__ARMV7PILongThunk_", "__ThumbV7PILongThunk_", "__LA25Thunk_",
		"__microLA25Thunk_", "__kcfi_typeid_"}
	ignoredSuffixes = []string{"_from_arm", "_from_thumb", "_veneer"}
)

// ignored is scripts/kallsyms.c's is_ignored_symbol() of the kernel's
// generation. From 6.12 it ignores only the u, n and absolute types;
// the names 6.1 also ignored never reach it (scripts/mksysmap leaves
// them out of System.map), but for the kallsyms_* tables, which it keeps.
func (k KernelKallsyms) ignored(name string, typ byte) bool {
	if k.Generation <= kgen.Linux6_1 {
		return ignoredSymbol(name, typ)
	}
	switch typ {
	case 'u', 'n':
		return true
	case 'A', 'a':
		return !keptAbsolute(name)
	}
	return false
}

// keptAbsolute: the absolute symbols every generation's
// is_ignored_symbol() keeps.
func keptAbsolute(name string) bool {
	switch name {
	case "__kernel_syscall_via_break", "__kernel_syscall_via_epc", "__kernel_sigtramp", "__gp":
		return true
	}
	return false
}

// ignoredSymbol is scripts/kallsyms.c's is_ignored_symbol() (Linux 6.1):
// symbols no kallsyms table ever holds. Each rule is tried only where a
// byte of the name says it can match: it runs for every occurrence
// LookupListed finds in a System.map.
func ignoredSymbol(name string, typ byte) bool {
	switch typ {
	case 'U', 'u', 'N', 'n':
		return true
	case 'A', 'a':
		// Absolute symbols are ignored but for a few, which match no
		// other rule.
		return !keptAbsolute(name)
	}
	if strings.HasPrefix(name, "kallsyms_") || strings.HasPrefix(name, "_SDA") {
		switch name {
		case "kallsyms_addresses", "kallsyms_offsets", "kallsyms_relative_base", "kallsyms_num_syms",
			"kallsyms_names", "kallsyms_markers", "kallsyms_token_table", "kallsyms_token_index",
			"kallsyms_seqs_of_names", "_SDA_BASE_", "_SDA2_BASE_":
			return true
		}
	}
	if strings.HasPrefix(name, "__") { // every ignored prefix's start
		for _, p := range ignoredPrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	if n := len(name); n > 0 && (name[n-1] == 'm' || name[n-1] == 'b' || name[n-1] == 'r') { // the suffixes' ends
		for _, sfx := range ignoredSuffixes {
			if strings.HasSuffix(name, sfx) {
				return true
			}
		}
	}
	return strings.IndexByte(name, '.') >= 0 && (strings.Contains(name, ".long_branch.") || strings.Contains(name, ".plt_branch."))
}
