// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// s390 addresses for the GOT/PLT fixtures: modules at the default base,
// the kernel image far below (out of a brasl's reach: the PLT), one
// function within reach (direct).
const (
	s390ExtFn   = 0x0000000001234560
	s390ExtData = 0x3ff90000000
	s390NearFn  = s390ModulesVaddr + 0x100000
	s390Other   = 0x3ff80100000
)

// s390Target decodes the halfword-relative field at off of sec (a brasl,
// larl or lgrl's, whose relocation is at the instruction + 2, addend 2):
// the address the instruction reaches.
func s390Target(t *testing.T, sec *Placed, off uint64) uint64 {
	t.Helper()
	require.Less(t, off+4, uint64(len(sec.Data)))
	disp := int64(int32(binary.BigEndian.Uint32(sec.Data[off:])))
	return sec.Addr + off - 2 + uint64(2*disp)
}

// checkS390PLTEntry: the entry at addr loads its target from its last 8
// bytes (basr %r1,0; lg %r1,12(%r1)) and branches to it: through the
// expoline thunk (brcl 15 to the PLT's last entry: exrl, j ., br %r1) or
// with br %r1.
func checkS390PLTEntry(t *testing.T, plt *Placed, addr, target uint64, expoline bool) {
	t.Helper()
	require.GreaterOrEqual(t, addr, plt.Addr)
	off := addr - plt.Addr
	require.Zero(t, off%s390PLTEntry, "%#x is not an entry's start", addr)
	e := plt.Data[off : off+s390PLTEntry]
	be := binary.BigEndian
	assert.Equal(t, []byte{0x0d, 0x10, 0xe3, 0x10, 0x10, 0x0c, 0x00, 0x04}, e[:8], "basr %%r1,0; lg %%r1,12(%%r1)")
	assert.Equal(t, target, be.Uint64(e[14:]), "the entry's target")
	if !expoline {
		assert.Equal(t, []byte{0x07, 0xf1}, e[8:10], "br %%r1")
		return
	}
	assert.Equal(t, []byte{0xc0, 0xf4}, e[8:10], "brcl 15")
	thunk := addr + 8 + uint64(2*int64(int32(be.Uint32(e[10:]))))
	assert.Equal(t, plt.Addr+plt.Size-s390PLTEntry, thunk, "brcl to the thunk, the PLT's last entry")
	th := plt.Data[thunk-plt.Addr:]
	assert.Equal(t, []byte{0xc6, 0x00, 0x00, 0x00, 0x00, 0x05, 0xa7, 0xf4, 0x00, 0x00, 0x07, 0xf1}, th[:12], "exrl %%r0,.+10; j .; br %%r1")
}

// TestS390GOTPLT links testdata/modplt/link/s390x-got.o (every GOT and
// PLT relocation kind GCC and GNU as emit for s390x) and checks what each
// one points at, from the psABI's formulas: the GOT and PLT at the start
// of core, one GOT slot and one PLT entry per symbol in the order the
// relocations first name them, a brasl in reach going straight to its
// target, with and without expolines.
func TestS390GOTPLT(t *testing.T) {
	for _, expoline := range []bool{true, false} {
		m, err := Open(linkFixture("s390x-got.o"))
		require.NoError(t, err)
		img, err := m.Link(LinkOptions{NoExpoline: !expoline, Resolve: mapResolver(map[string]uint64{
			"ext_fn": s390ExtFn, "ext_data": s390ExtData, "near_fn": s390NearFn, "other_data": s390Other,
		})})
		require.NoError(t, err)
		for _, e := range img.Errors {
			t.Errorf("%v", e)
		}
		require.Empty(t, img.Unresolved)
		base := uint64(s390ModulesVaddr)
		got, plt, text, data := img.Section(".got"), img.Section(".plt"), img.Section(".text"), img.Section(".data")
		require.NotNil(t, got)
		require.NotNil(t, plt)
		// GOT: ext_data, ext_fn, other_data; PLT: ext_fn, near_fn, and
		// the thunk.
		assert.Equal(t, base, got.Addr)
		assert.Equal(t, uint64(24), got.Size)
		assert.Equal(t, base+24, plt.Addr)
		entries := uint64(2)
		if expoline {
			entries++
		}
		assert.Equal(t, entries*s390PLTEntry, plt.Size)
		assert.Equal(t, [2]int{3, 3}, [2]int{img.GOTUsed, img.GOTMax})
		assert.Equal(t, [2]int{int(entries), int(entries)}, [2]int{img.PLTCoreUsed, img.PLTCoreMax})
		assert.Equal(t, (plt.Addr+plt.Size+text.Align-1)&^(text.Align-1), text.Addr, ".text after them")
		assert.Equal(t, expoline, img.Expoline)

		be := binary.BigEndian
		slot := func(i uint64) uint64 { return be.Uint64(got.Data[8*i:]) }
		assert.Equal(t, []uint64{s390ExtData, s390ExtFn, s390Other}, []uint64{slot(0), slot(1), slot(2)})
		assert.Equal(t, got.Addr, s390Target(t, text, 0x2), "lgrl ext_data@GOTENT")
		assert.Equal(t, got.Addr, s390Target(t, text, 0x8), "larl ext_data@GOTENT: the same slot")
		w := be.Uint32(text.Data[0xe:]) // lg's B2/DL, DH, opcode
		assert.Equal(t, uint32(8), (w>>16)&0xfff|(w>>8&0xff)<<12, "lg ext_fn@GOT(%%r12): slot 1")
		assert.Equal(t, uint16(16), be.Uint16(text.Data[0x14:])&0xfff, "l other_data@GOT(%%r12): slot 2")
		entry0, entry1 := plt.Addr, plt.Addr+s390PLTEntry
		assert.Equal(t, entry0, s390Target(t, text, 0x18), "brasl ext_fn@PLT: 4 TiB away, the PLT")
		assert.Equal(t, uint64(s390NearFn), s390Target(t, text, 0x1e), "brasl near_fn@PLT: in reach, direct")
		assert.Equal(t, entry0, s390Target(t, text, 0x24), "brasl ext_fn@PLT again: the same entry")
		assert.Equal(t, got.Addr, s390Target(t, text, 0x2a), "larl _GLOBAL_OFFSET_TABLE_ (GOTPCDBL)")
		checkS390PLTEntry(t, plt, entry0, s390ExtFn, expoline)
		checkS390PLTEntry(t, plt, entry1, s390NearFn, expoline)
		assert.Equal(t, entry0-got.Addr, be.Uint64(data.Data[0:]), "PLTOFF64: the entry from the GOT")
		assert.Equal(t, uint32(entry1-got.Addr), be.Uint32(data.Data[8:]), "PLTOFF32")
		assert.Equal(t, uint64(s390ExtData)-got.Addr, be.Uint64(data.Data[0x10:]), "GOTOFF64")
		assert.Equal(t, entry0-(data.Addr+0x18), be.Uint64(data.Data[0x18:]), "PLT64: PC-relative to the entry")

		c, err := m.Count(Options{NoExpoline: !expoline})
		require.NoError(t, err)
		assert.Equal(t, 3, c.GOT)
		assert.Equal(t, int(entries), c.PLTCore)
		assert.Equal(t, entries*s390PLTEntry, c.PLTSizeCore)
	}
}

// TestS390CFix links cfix.c as GCC builds an s390 module (-fPIC) with
// its undefined functions in the kernel image (out of reach) and its data
// in another module, and checks every relocation of its text by what it
// reaches: PC32DBL its symbol, GOTENT a GOT slot holding it, PLT32DBL
// the symbol (its own helper, in reach) or a PLT entry for it.
func TestS390CFix(t *testing.T) {
	m, err := Open(linkFixture("cfix-s390x.o"))
	require.NoError(t, err)
	ext := map[string]uint64{"ext_counter": 0x3ff80200000, "ext_table": 0x3ff80200100, "ext_notify": 0x1000000, "ext_compute": 0x1000100}
	img, err := m.Link(LinkOptions{Resolve: mapResolver(ext)})
	require.NoError(t, err)
	require.Empty(t, img.Errors)
	require.Empty(t, img.Unresolved)
	got, plt, text := img.Section(".got"), img.Section(".plt"), img.Section(".text")
	f := m.f
	rt, err := f.RelocTable(f.SectionByName(".rela.text"))
	require.NoError(t, err)
	seen := map[elf.R_390]int{}
	for j := range rt.Len() {
		r, err := rt.Reloc(j)
		require.NoError(t, err)
		s, ok := img.SymbolAddr(r.Sym)
		require.True(t, ok)
		want := s + uint64(r.Addend) - 2 // the addend is 2, the field 2 bytes into its instruction
		reached := s390Target(t, text, r.Offset)
		typ := elf.R_390(r.Type)
		seen[typ]++
		switch typ {
		case elf.R_390_PC32DBL:
			assert.Equal(t, want, reached, "%v at %#x", typ, r.Offset)
		case elf.R_390_GOTENT:
			require.True(t, reached >= got.Addr && reached < got.Addr+got.Size, "%#x in the GOT", reached)
			assert.Equal(t, want, binary.BigEndian.Uint64(got.Data[reached-got.Addr:]), "GOT slot at %#x", reached)
		case elf.R_390_PLT32DBL:
			if reached != want {
				checkS390PLTEntry(t, plt, reached, want, true)
			}
		default:
			t.Errorf("unexpected %v", typ)
		}
	}
	assert.Equal(t, map[elf.R_390]int{elf.R_390_PC32DBL: 3, elf.R_390_GOTENT: 3, elf.R_390_PLT32DBL: 3}, seen)
	// Three entries and the thunk, all written: apply_rela() fills a
	// symbol's entry before it tests whether the branch reaches without
	// it (helper's does, and its entry is written all the same).
	assert.Equal(t, [2]int{4, 4}, [2]int{img.PLTCoreUsed, img.PLTCoreMax})
	assert.Equal(t, [2]int{3, 3}, [2]int{img.GOTUsed, img.GOTMax})
}
