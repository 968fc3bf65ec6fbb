// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func linkFixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "link", name)
}

// readSyms reads a .syms file: ".section addr" and "symbol value" lines.
func readSyms(t *testing.T, path string) (map[string]uint64, map[string]uint64) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	at, syms := map[string]uint64{}, map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 0, 64)
		require.NoError(t, err)
		if strings.HasPrefix(fields[0], ".") {
			if len(fields) == 2 { // a third field: a section of another object ld links
				at[fields[0]] = v
			}
		} else {
			syms[fields[0]] = v
		}
	}
	return at, syms
}

func mapResolver(m map[string]uint64) Resolver {
	return func(name string) (uint64, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// TestLinkMatchesGNULd links each testdata/modplt/link/<name>.o with
// modplt at the addresses GNU ld was given (<name>.syms, or the
// little-endian build's for a big-endian one) and compares every section,
// byte for byte, with what ld produced (<name>.elf): the relocation math
// of every type each fixture holds, in both byte orders.
func TestLinkMatchesGNULd(t *testing.T) {
	for _, fx := range []struct{ name, syms string }{
		{"x86_64", "x86_64"}, {"arm64", "arm64"}, {"arm", "arm"},
		{"cfix-x86_64", "cfix-x86_64"}, {"cfix-arm64", "cfix-arm64"}, {"cfix-arm", "cfix-arm"}, {"cfix-thumb", "cfix-thumb"},
		// Big-endian: AArch64 data (instructions stay little-endian),
		// ARM BE32 and BE8 (see the Makefile).
		{"arm64be", "arm64"}, {"cfix-arm64be", "cfix-arm64"}, {"armbe", "arm"}, {"armbe8", "arm"}, {"cfix-thumbbe8", "cfix-thumb"},
		// s390x: the types that take no GOT or PLT (TestS390GOTPLT has those).
		{"s390x", "s390x"},
		// ppc64le: calls within the module and data (TestPPC64Stubs has
		// the stubs and the TOC).
		{"ppc64le", "ppc64le"},
	} {
		t.Run(fx.name, func(t *testing.T) {
			at, syms := readSyms(t, linkFixture(fx.syms+".syms"))
			m, err := Open(linkFixture(fx.name + ".o"))
			require.NoError(t, err)
			img, err := m.Link(LinkOptions{At: at, Resolve: mapResolver(syms)})
			require.NoError(t, err)
			for _, e := range img.Errors {
				t.Errorf("%v", e)
			}
			require.Empty(t, img.Unresolved)
			ld, err := elf.Open(linkFixture(fx.name + ".elf"))
			require.NoError(t, err)
			defer ld.Close()
			compared := 0
			for name, addr := range at {
				ours := img.Section(name)
				require.NotNil(t, ours, name)
				assert.Equal(t, addr, ours.Addr, name)
				want := ld.Section(name)
				require.NotNil(t, want, name)
				if want.Type == elf.SHT_NOBITS {
					assert.True(t, isZero(ours.Data), name)
					compared++
					continue
				}
				wb, err := want.Data()
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(wb), len(ours.Data), name)
				// ld may append (an .ARM.exidx end marker); compare ours.
				if !assert.Equal(t, hex.Dump(wb[:len(ours.Data)]), hex.Dump(ours.Data), "section %s", name) {
					continue
				}
				compared++
			}
			assert.Equal(t, len(at), compared)
			assert.Greater(t, img.Relocs, 8)
		})
	}
}

// TestLinkEmptySymtab: a module whose symbol table is empty (not even
// the null symbol: FuzzCount found ELF panicking on it) links, and its
// image is written with no symbol.
func TestLinkEmptySymtab(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o"))
	require.NoError(t, err)
	ef, err := elf.NewFile(strings.NewReader(string(data)))
	require.NoError(t, err)
	symtab := ef.Section(".symtab")
	require.NotNil(t, symtab)
	// sh_size of .symtab, in its ELF64 section header (e_shoff at 0x28,
	// 64 bytes a header, sh_size at 32).
	// The relocation sections emptied too: their symbols would be past
	// the table, which Parse refuses.
	for i, s := range ef.Sections {
		if s == symtab || s.Type == elf.SHT_RELA {
			hdr := binary.LittleEndian.Uint64(data[0x28:]) + uint64(i)*64
			binary.LittleEndian.PutUint64(data[hdr+32:], 0)
		}
	}

	m, err := Parse("empty-symtab.o", data)
	require.NoError(t, err)
	img, err := m.Link(LinkOptions{})
	require.NoError(t, err)
	assert.True(t, img.Linked())
	assert.NotEmpty(t, img.Sections)
	out, err := elf.NewFile(strings.NewReader(string(img.ELF())))
	require.NoError(t, err)
	syms, err := out.Symbols()
	require.NoError(t, err)
	assert.Empty(t, syms)
}

// TestCountBothByteOrders: a module's count does not depend on its byte
// order: the big-endian builds of the oracle's sources (arm64 BE, arm
// BE32 and BE8, whose REL addends are read out of instructions in either
// order) count what the little-endian ones do, in total and for each
// executable section (ld -r, which makes armbe8.o, reorders the others).
func TestCountBothByteOrders(t *testing.T) {
	type figures struct {
		PLT        [4]any
		Executable map[string]SectionCount
	}
	figuresOf := func(c *Counts) figures {
		f := figures{PLT: [4]any{c.PLTCore, c.PLTInit, c.PLTSizeCore, c.PLTSizeInit}, Executable: map[string]SectionCount{}}
		for _, s := range c.Sections {
			if s.Exec {
				f.Executable[s.Name] = s
			}
		}
		return f
	}
	for _, pair := range [][2]string{{"arm64", "arm64be"}, {"cfix-arm64", "cfix-arm64be"}, {"arm", "armbe"}, {"arm", "armbe8"}, {"cfix-thumb", "cfix-thumbbe8"}} {
		for _, opts := range []Options{{}, {Mode: ModeOptimal}, {Erratum843419: true}} {
			var f [2]figures
			for i, name := range pair {
				m, err := Open(linkFixture(name + ".o"))
				require.NoError(t, err)
				c, err := m.Count(opts)
				require.NoError(t, err)
				f[i] = figuresOf(c)
			}
			assert.NotEmpty(t, f[0].Executable, pair[0])
			assert.Greater(t, f[0].PLT[0], 0, pair[0])
			assert.Equal(t, f[0], f[1], "%s against %s, %+v", pair[0], pair[1], opts)
		}
	}
}

// WriteELF writes the bytes ELF returns, through a writer that takes
// them piece by piece, and a writer's error comes back.
func TestWriteELF(t *testing.T) {
	m, err := Open(linkFixture("x86_64.o"))
	require.NoError(t, err)
	img, err := m.Link(LinkOptions{Resolve: func(string) (uint64, bool) { return 0xffffffff81000000, true }})
	require.NoError(t, err)
	want := img.ELF()
	var got bytes.Buffer
	require.NoError(t, img.WriteELF(&got))
	assert.Equal(t, want, got.Bytes())
	_, err = elf.NewFile(bytes.NewReader(want))
	require.NoError(t, err)
	assert.ErrorIs(t, img.WriteELF(failWriter{}), errWriteFailed)
}

var errWriteFailed = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errWriteFailed }
