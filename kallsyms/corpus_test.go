// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/elfobj"
	"github.com/klpresolve/klpresolve/internal/testutil"
)

// allCorpusSymbolFiles are the corpus's symbol files; corpusSymbolFiles
// those the tests read: in a sampled run (testutil.Sampled: -short, the race
// detector, emulation) a kallsyms with modules and a System.map only;
// make test has read them all natively first.
var allCorpusSymbolFiles = []string{
	"amd64/kallsyms-6.1.0-57-amd64.txt",
	"arm64/kallsyms-6.1.0-57-arm64.txt",
	"host/kallsyms-6.18.44-firecracker.txt",
	"amd64/System.map-6.1.0-57-amd64",
	"arm64/System.map-6.1.0-57-arm64",
	"armhf/System.map-6.1.0-50-armmp",
}

// corpusSymbolFiles are the corpus files a test reads: two in a sampled
// run (testutil.Sampled).
func corpusSymbolFiles() []string {
	if testutil.Sampled() {
		return []string{allCorpusSymbolFiles[0], allCorpusSymbolFiles[5]}
	}
	return allCorpusSymbolFiles
}

func TestCorpusCounts(t *testing.T) {
	for _, rel := range corpusSymbolFiles() {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			path := testutil.Corpus(t, rel)
			raw := testutil.ReadSymbolLines(t, path)
			want := map[string]int{}
			var order []string
			for _, l := range raw {
				if want[l.Object] == 0 {
					order = append(order, l.Object)
				}
				want[l.Object]++
			}
			ix, err := Open(path, Options{})
			require.NoError(t, err)
			assert.Equal(t, len(raw), ix.Len())
			objs := ix.Objects()
			require.Len(t, objs, len(want))
			for i, o := range objs {
				assert.Equal(t, want[o.Name], o.Symbols, o.Name)
				assert.Equal(t, order[i], o.Name)
				assert.Equal(t, o.Name == "bpf" || strings.HasPrefix(o.Name, "__builtin__"), o.Pseudo)
			}
			// Every line resolves to itself at its own position.
			pos := map[[2]string]int{}
			for i, l := range raw {
				key := [2]string{l.Object, l.Name}
				pos[key]++
				if i%97 != 0 || (l.Object != "vmlinux" && !ix.HasObject(l.Object)) || l.Addr == 0 {
					continue
				}
				s, err := ix.Lookup(l.Object, l.Name, uint64(pos[key]))
				require.NoError(t, err, "%s:%s,%d", l.Object, l.Name, pos[key])
				assert.Equal(t, l.Addr, s.Address, "%s:%s,%d", l.Object, l.Name, pos[key])
			}
		})
	}
}

// The fast path of the parser must read every real file exactly as the
// general one does.
func TestCorpusFastPathMatchesSlowPath(t *testing.T) {
	for _, rel := range corpusSymbolFiles() {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			data, err := os.ReadFile(testutil.Corpus(t, rel))
			require.NoError(t, err)
			ix, err := ParseBytes(rel, data, Options{})
			require.NoError(t, err)
			sameAsSlowPath(t, data, ix, err)
		})
	}
}

// pieceReader hands out its data n bytes per Read, as /proc/kallsyms does
// (the kernel formats one page per read).
type pieceReader struct {
	data []byte
	n    int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[k:]
	return k, nil
}

// A streamed input (parsed while it arrives, chunks merged at the end)
// gives the same index as the whole file read at once, and so do the same
// file gzip-compressed and the file mapped (Options.MapText).
func TestCorpusStreamedMatchesWhole(t *testing.T) {
	for _, rel := range corpusSymbolFiles() {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			path := testutil.Corpus(t, rel)
			whole, err := Open(path, Options{})
			require.NoError(t, err)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			streamed, err := Parse(rel, &pieceReader{data: data, n: 4096}, Options{})
			require.NoError(t, err)
			sameIndex(t, whole, streamed)
			mapped, err := Open(path, Options{MapText: true})
			require.NoError(t, err)
			sameIndex(t, whole, mapped)
			require.NoError(t, mapped.Close())

			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			_, _ = zw.Write(data)
			require.NoError(t, zw.Close())
			gzPath := filepath.Join(t.TempDir(), "k.gz")
			require.NoError(t, os.WriteFile(gzPath, gz.Bytes(), 0o644))
			fromGz, err := Open(gzPath, Options{})
			require.NoError(t, err)
			sameIndex(t, whole, fromGz)
		})
	}
}

func TestCorpusSymposOnRealDuplicates(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	raw := testutil.ReadSymbolLines(t, path)
	var addrs []uint64
	for _, l := range raw {
		if l.Object == "vmlinux" && l.Name == "__func__.0" {
			addrs = append(addrs, l.Addr)
		}
	}
	require.Greater(t, len(addrs), 100, "__func__.0 should appear hundreds of times")
	ix, err := Open(path, Options{})
	require.NoError(t, err)
	for i, a := range addrs {
		s, err := ix.Lookup("vmlinux", "__func__.0", uint64(i+1))
		require.NoError(t, err)
		assert.Equal(t, a, s.Address, "position %d", i+1)
		assert.Equal(t, i+1, s.Pos)
	}
	_, err = ix.Lookup("vmlinux", "__func__.0", 0)
	var le *LookupError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrAmbiguous)
	assert.Equal(t, len(addrs), le.Count)
	require.Len(t, le.Candidates, MaxCandidates, "the first MaxCandidates kept")
	assert.Equal(t, addrs[MaxCandidates-1], le.Candidates[MaxCandidates-1].Address)
	_, err = ix.Lookup("vmlinux", "__func__.0", uint64(len(addrs)+1))
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrNoSuchPosition)
	assert.Equal(t, len(addrs), le.Count)

	// Names repeated across modules resolve within their own module.
	byName := map[string]map[string]uint64{}
	dup := map[string]map[string]bool{}
	for _, l := range raw {
		if l.Object == "vmlinux" {
			continue
		}
		if byName[l.Name] == nil {
			byName[l.Name], dup[l.Name] = map[string]uint64{}, map[string]bool{}
		}
		if _, seen := byName[l.Name][l.Object]; seen {
			dup[l.Name][l.Object] = true
		}
		byName[l.Name][l.Object] = l.Addr
	}
	checked := 0
	for name, objs := range byName {
		if len(objs) < 2 {
			continue
		}
		for obj, addr := range objs {
			if dup[name][obj] {
				continue
			}
			s, err := ix.Lookup(obj, name, 0)
			require.NoError(t, err, "%s:%s", obj, name)
			assert.Equal(t, addr, s.Address, "%s:%s", obj, name)
			checked++
		}
	}
	assert.Greater(t, checked, 10)
}

func TestCorpusReverseLookup(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	raw := testutil.ReadSymbolLines(t, path)
	ix, err := Open(path, Options{})
	require.NoError(t, err)
	// Distinct text addresses with the next higher address in the object.
	checked := 0
	for i := 0; i+1 < len(raw); i += 101 {
		l, n := raw[i], raw[i+1]
		if l.Object != "vmlinux" || n.Object != "vmlinux" || (l.Type != "T" && l.Type != "t") || n.Addr <= l.Addr+1 {
			continue
		}
		if i > 0 && raw[i-1].Addr == l.Addr {
			continue // aliases: the first one wins
		}
		a, ok := ix.Addr(l.Addr + 1)
		require.True(t, ok)
		assert.Equal(t, l.Name, a.Name, "%#x", l.Addr)
		assert.Equal(t, uint64(1), a.Offset)
		assert.Equal(t, n.Addr-l.Addr, a.Size, l.Name)
		checked++
	}
	assert.Greater(t, checked, 100)
	// A module address.
	for _, l := range raw {
		if l.Object == "xfs" && l.Type == "T" {
			a, ok := ix.Addr(l.Addr)
			require.True(t, ok)
			assert.Equal(t, "xfs", a.Object)
			assert.Equal(t, uint64(0), a.Offset)
			break
		}
	}
}

func TestCorpusKptrRestrict(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// Zero every address, as the kernel shows them to an unprivileged reader.
	var b bytes.Buffer
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if i := bytes.IndexByte(line, ' '); i > 0 {
			b.WriteString(strings.Repeat("0", i))
			b.Write(line[i:])
		}
		b.WriteByte('\n')
	}
	_, err = ParseBytes(path, b.Bytes(), Options{})
	require.ErrorIs(t, err, ErrRestricted)
}

// Every corpus symbol file, written in both snapshot formats and loaded
// again, is the same index: every symbol in order, lookups, addresses.
func TestCorpusSnapshot(t *testing.T) {
	for _, rel := range corpusSymbolFiles() {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			ix, err := Open(testutil.Corpus(t, rel), Options{})
			require.NoError(t, err)
			for format, write := range writers {
				var buf bytes.Buffer
				require.NoError(t, write(ix, &buf), format)
				snap := filepath.Join(t.TempDir(), "k.snap")
				require.NoError(t, os.WriteFile(snap, buf.Bytes(), 0o644))
				six, err := Open(snap, Options{})
				require.NoError(t, err, format)
				sameIndex(t, ix, six)
				for _, o := range ix.Objects() {
					a1, _ := ix.Addr(o.High)
					a2, _ := six.Addr(o.High)
					assert.Equal(t, a1, a2, "%s: %s's high address", format, o.Name)
				}
				_, err = six.Lookup("vmlinux", "no_such_symbol_anywhere", 0)
				assert.ErrorIs(t, err, ErrNotFound)
				if format == "compact" {
					// Half the text at most (issue 42): its tables are
					// stored, about 6 bytes a symbol, most of a
					// System.map's short lines.
					st, err := os.Stat(testutil.Corpus(t, rel))
					require.NoError(t, err)
					assert.LessOrEqual(t, buf.Len(), int(st.Size())/2, "compact snapshot of %d bytes", buf.Len())
				}
				require.NoError(t, six.Close())
			}
		})
	}
	ix, err := Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	require.NoError(t, err)
	a, err := ix.Lookup("vmlinux", "__func__.0", 17)
	require.NoError(t, err)
	assert.NotZero(t, a.Address)
}

// A lookup that resolves allocates nothing, for unique names, for
// positions in long chains, in vmlinux and in modules.
func TestCorpusLookupAllocatesNothing(t *testing.T) {
	ix, err := Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	require.NoError(t, err)
	queries := []struct {
		obj, name string
		pos       uint64
	}{{"vmlinux", "vfs_read", 0}, {"", "vfs_read", 1}, {"vmlinux", "__func__.0", 200}, {"ext4", "ext4_read_inode_bitmap", 0}}
	for _, q := range queries {
		_, err := ix.Lookup(q.obj, q.name, q.pos)
		require.NoError(t, err, "%+v", q)
		allocs := testing.AllocsPerRun(200, func() { _, _ = ix.Lookup(q.obj, q.name, q.pos) })
		assert.Zero(t, allocs, "%+v", q)
	}
}

// Find and FindName answer as Lookup and LookupName do on a real kernel's
// symbols: every name of every object (a sample of vmlinux's), and misses.
func TestCorpusFindAgreesWithLookup(t *testing.T) {
	ix, err := Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	require.NoError(t, err)
	var objects []string
	for _, o := range ix.Objects() {
		objects = append(objects, o.Name)
	}
	for _, o := range ix.Objects() {
		k := 0
		ix.Symbols(o.Name, func(s Symbol) bool {
			// A miss builds Lookup's nearest names (a scan of every
			// symbol): a sample of each object, asked in it.
			if k++; k%41 == 1 {
				findAgrees(t, ix, []string{o.Name}, s.Name)
			}
			return true
		})
	}
	for _, name := range []string{"no_such_function", "__func__.0", "ext4_read_inode_bitmap"} {
		findAgrees(t, ix, objects[:8], name)
	}
}

// Which real inputs list vmlinux's exports: a System.map and the kallsyms
// of a CONFIG_KALLSYMS_ALL kernel do; arm64's (code symbols only) and the
// 6.18 host's (no modules, an empty __ksymtab) do not.
func TestCorpusExports(t *testing.T) {
	for rel, lists := range map[string]bool{
		"amd64/kallsyms-6.1.0-57-amd64.txt":     true,
		"amd64/System.map-6.1.0-57-amd64":       true,
		"arm64/kallsyms-6.1.0-57-arm64.txt":     false,
		"armhf/System.map-6.1.0-50-armmp":       true,
		"host/kallsyms-6.18.44-firecracker.txt": false,
	} {
		ix, err := Open(testutil.Corpus(t, rel), Options{})
		require.NoError(t, err)
		require.Equal(t, lists, ix.ListsExports(), rel)
	}
	ix, err := Open(testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt"), Options{})
	require.NoError(t, err)
	_, ok := ix.FindExport("vfs_read", true) // not exported in 6.1
	require.False(t, ok)
	s, ok := ix.FindExport("_printk", false)
	require.True(t, ok)
	require.Equal(t, Vmlinux, s.Object)
	// EXPORT_SYMBOL_GPL(call_rcu): for GPL-compatible modules only.
	require.True(t, ix.GPLOnly("call_rcu"))
	require.False(t, ix.GPLOnly("_printk"))
	_, ok = ix.FindExport("call_rcu", false)
	require.False(t, ok)
	s, ok = ix.FindExport("call_rcu", true)
	require.True(t, ok)
	require.Equal(t, Vmlinux, s.Object)
	s, ok = ix.FindExport("crc32c", false) // exported by a module
	require.True(t, ok)
	require.Equal(t, "libcrc32c", s.Object)
	require.Equal(t, byte('T'), s.Type)
}

// TestCorpusArch: each corpus kernel is recognised as the architecture its
// Debian package is for, and lists no other architecture's entry symbols
// (so the answer does not depend on the order they are tried in).
func TestCorpusArch(t *testing.T) {
	want := map[string]string{"amd64": "x86_64", "arm64": "arm64", "armhf": "arm", "host": "x86_64"}
	for _, p := range corpusSymbolFiles() {
		t.Run(p, func(t *testing.T) {
			ix, err := Open(testutil.Corpus(t, p), Options{})
			require.NoError(t, err)
			arch, evidence := ix.Arch()
			assert.Equal(t, want[strings.Split(p, "/")[0]], arch)
			assert.NotEmpty(t, evidence)
			elfobj.EntrySymbols(func(a string, names []string) bool {
				if a == arch {
					return true
				}
				for _, n := range names {
					_, ok := ix.Find("vmlinux", n, 1)
					assert.False(t, ok, "%s's %s", a, n)
				}
				return true
			})
		})
	}
}

// TestArchUnknown: no entry symbol in vmlinux, no architecture; a module's
// symbol of that name does not count.
func TestArchUnknown(t *testing.T) {
	ix, err := ParseBytes("t", []byte("ffffffff81000000 T vfs_read\nffffffffc0000000 t primary_entry\t[mymod]\n"), Options{})
	require.NoError(t, err)
	arch, evidence := ix.Arch()
	assert.Empty(t, arch)
	assert.Empty(t, evidence)
	ix, err = ParseBytes("t", []byte("ffffffff81000000 T vfs_read\nffffffff81000100 T startup_64\n"), Options{})
	require.NoError(t, err)
	arch, evidence = ix.Arch()
	assert.Equal(t, "x86_64", arch)
	assert.Equal(t, "startup_64", evidence)
	// s390 and powerpc64 (no corpus of theirs: their head code's names).
	for text, want := range map[string]string{
		"0000000000100000 T startup_continue\n0000000000200000 T vfs_read\n": "s390",
		"c000000000000100 T __secondary_hold\nc000000000200000 T vfs_read\n": "ppc64",
	} {
		ix, err = ParseBytes("t", []byte(text), Options{})
		require.NoError(t, err)
		arch, _ = ix.Arch()
		assert.Equal(t, want, arch)
	}
}

// TestCorpusAddrExtent: an object ends, as far as kallsyms tells, on the
// page of its highest symbol. On the Debian 6.1 amd64 kallsyms: every
// object's highest symbol and the last byte of its page are found in it;
// the next byte, when no other object starts there, is in none (Past,
// with that highest symbol for context), as the kernel's
// kallsyms_lookup() finds nothing past the image's end or a module's
// memory; so is the top of the address space.
func TestCorpusAddrExtent(t *testing.T) {
	path := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	raw := testutil.ReadSymbolLines(t, path)
	ix, err := Open(path, Options{})
	require.NoError(t, err)
	// Each object's highest non-absolute address, from the raw lines.
	high := map[string]uint64{}
	for _, l := range raw {
		if l.Type != "A" && l.Type != "a" && !strings.HasPrefix(l.Object, "__builtin") && l.Object != "bpf" {
			high[l.Object] = max(high[l.Object], l.Addr)
		}
	}
	require.Greater(t, len(high), 50)
	starts := func(lo, hi uint64) bool { // a symbol of any object in [lo, hi]
		for _, l := range raw {
			if l.Addr >= lo && l.Addr <= hi {
				return true
			}
		}
		return false
	}
	past := 0
	for obj, hi := range high {
		for _, addr := range []uint64{hi, hi | 0xfff} {
			a, ok := ix.Addr(addr)
			require.True(t, ok, "%s %#x", obj, addr)
			assert.False(t, a.Past)
		}
		next := (hi | 0xfff) + 1
		if starts(hi+1, next) {
			continue
		}
		a, ok := ix.Addr(next)
		assert.False(t, ok, "%s %#x", obj, next)
		assert.True(t, a.Past, obj)
		assert.Equal(t, obj, a.Object)
		assert.Equal(t, hi, a.Address)
		past++
	}
	assert.Greater(t, past, 50)
	a, ok := ix.Addr(^uint64(0))
	assert.False(t, ok)
	assert.True(t, a.Past)
}

// TestCorpusListsData: a symbol list says it lists data exactly when it
// has jiffies, the data symbol every kernel has: both System.maps and
// the amd64 kallsyms (CONFIG_KALLSYMS_ALL), not the arm64 kallsyms or
// the 6.18 host's (code only).
func TestCorpusListsData(t *testing.T) {
	listed := 0
	for _, p := range allCorpusSymbolFiles { // all: the count below is theirs
		ix, err := Open(testutil.Corpus(t, p), Options{})
		require.NoError(t, err)
		_, jiffies := ix.Find("vmlinux", "jiffies", 0)
		assert.Equal(t, jiffies, ix.ListsData(), p)
		// And the share of data symbols, counted from the raw lines
		// (ListsData takes jiffies as its shortcut).
		n, data := 0, 0
		for _, l := range testutil.ReadSymbolLines(t, testutil.Corpus(t, p)) {
			if l.Object == "vmlinux" {
				n++
				if strings.Contains("dDbBrR", l.Type) {
					data++
				}
			}
		}
		assert.Equal(t, data*100 >= n, ix.ListsData(), "%s: %d data symbols of %d", p, data, n)
		if jiffies {
			listed++
		}
	}
	assert.Equal(t, 4, listed)
}
