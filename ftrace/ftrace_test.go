// SPDX-License-Identifier: GPL-2.0-only

package ftrace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// fixture is a file of testdata/ftrace: a miniature vmlinux, its
// System.map, and the tracefs lists its disassembly gives (the Makefile).
func fixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "ftrace", name)
}

func fixtureIndex(t *testing.T, shift uint64) *kallsyms.Index {
	t.Helper()
	data, err := os.ReadFile(fixture("System.map"))
	require.NoError(t, err)
	if shift != 0 {
		data = shifted(t, data, shift)
	}
	ix, err := kallsyms.ParseBytes("System.map", data, kallsyms.Options{})
	require.NoError(t, err)
	return ix
}

// shifted is a symbol list with every address moved by shift, as a
// running kernel's kallsyms is by its KASLR offset.
func shifted(t *testing.T, data []byte, shift uint64) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 2)
		a, err := strconv.ParseUint(f[0], 16, 64)
		require.NoError(t, err)
		fmt.Fprintf(&out, "%016x %s\n", a+shift, f[1])
	}
	return out.Bytes()
}

// traced is the oracle: the functions the disassembly shows a call site
// in, by address (testdata/ftrace's Makefile makes list, an
// available_filter_functions_addrs, from objdump, not from the call-site
// table).
func traced(t *testing.T, list string) map[uint64]bool {
	out := map[uint64]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, fixture(list)))), "\n") {
		a, err := strconv.ParseUint(strings.Fields(l)[0], 16, 64)
		require.NoError(t, err)
		out[a] = true
	}
	return out
}

// matchesOracle checks s's answer for every text symbol of ix (but _text)
// against the oracle's addresses, and returns how many it checked.
func matchesOracle(t *testing.T, s *Sites, ix *kallsyms.Index, want map[uint64]bool) int {
	n := 0
	ix.Symbols(kallsyms.Vmlinux, func(sym kallsyms.Symbol) bool {
		if (sym.Type == 'T' || sym.Type == 't') && sym.Name != "_text" {
			w := NotTraceable
			if want[sym.Address] {
				w = Traceable
			}
			assert.Equal(t, w, s.Function(sym), "%s at %#x", sym.Name, sym.Address)
			n++
		}
		return true
	})
	return n
}

// verdicts are Function's answers for every text symbol, by name,position.
func verdicts(s *Sites, ix *kallsyms.Index) map[string]Verdict {
	out := map[string]Verdict{}
	pos := map[string]int{}
	ix.Symbols(kallsyms.Vmlinux, func(sym kallsyms.Symbol) bool {
		pos[sym.Name]++
		if sym.Type == 'T' || sym.Type == 't' {
			out[fmt.Sprintf("%s,%d", sym.Name, pos[sym.Name])] = s.Function(sym)
		}
		return true
	})
	return out
}

// TestImage: the call sites of the vmlinux's __mcount_loc table, placed by
// the System.map's bounds: a function is traceable exactly where the
// disassembly has a call to __fentry__ in it; the notrace ones (and the
// second of two static type_show functions) are not.
func TestImage(t *testing.T) {
	ix := fixtureIndex(t, 0)
	s, err := Open(fixture("vmlinux"), ix)
	require.NoError(t, err)
	want := traced(t, "available_filter_functions_addrs")
	assert.Equal(t, len(want), s.Len())
	assert.True(t, s.Addresses())
	assert.Equal(t, uint64(0), s.Slide())
	assert.Equal(t, fixture("vmlinux"), s.Source())
	assert.Equal(t, 10, matchesOracle(t, s, ix, want))
	v := verdicts(s, ix)
	assert.Equal(t, Traceable, v["vfs_read,1"])
	assert.Equal(t, NotTraceable, v["ring_buffer_lock_reserve,1"])
	assert.Equal(t, Traceable, v["type_show,1"])
	assert.Equal(t, NotTraceable, v["type_show,2"])
}

// TestImageKASLR: against a running kernel's symbols (every address moved
// by the KASLR offset) the image's link-time call sites move with them;
// and where the symbols lack the table's bounds (a kallsyms without
// CONFIG_KALLSYMS_ALL), the image's own symbol table gives them.
func TestImageKASLR(t *testing.T) {
	const shift = 0x1e400000
	base := fixtureIndex(t, 0)
	s0, err := Open(fixture("vmlinux"), base)
	require.NoError(t, err)
	ix := fixtureIndex(t, shift)
	s, err := Open(fixture("vmlinux"), ix)
	require.NoError(t, err)
	assert.Equal(t, uint64(shift), s.Slide())
	assert.Equal(t, verdicts(s0, base), verdicts(s, ix))

	var code bytes.Buffer
	data, err := os.ReadFile(fixture("System.map"))
	require.NoError(t, err)
	for _, l := range strings.Split(string(shifted(t, data, shift)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && (f[1] == "T" || f[1] == "t") {
			code.WriteString(l + "\n")
		}
	}
	codeOnly, err := kallsyms.ParseBytes("kallsyms", code.Bytes(), kallsyms.Options{})
	require.NoError(t, err)
	s, err = Open(fixture("vmlinux"), codeOnly)
	require.NoError(t, err)
	assert.Equal(t, verdicts(s0, base), verdicts(s, codeOnly))
}

// TestTracefs: tracefs's lists of the same kernel. With addresses they say
// what the image says; with names only, a name with no line is not
// traceable, and type_show, one line for two functions, cannot be told.
func TestTracefs(t *testing.T) {
	ix := fixtureIndex(t, 0)
	img, err := Open(fixture("vmlinux"), ix)
	require.NoError(t, err)
	addrs, err := Open(fixture("available_filter_functions_addrs"), ix)
	require.NoError(t, err)
	assert.True(t, addrs.Addresses())
	assert.Equal(t, verdicts(img, ix), verdicts(addrs, ix))

	names, err := Open(fixture("available_filter_functions"), ix)
	require.NoError(t, err)
	assert.False(t, names.Addresses())
	assert.Equal(t, 5, names.Len())
	v := verdicts(names, ix)
	assert.Equal(t, Traceable, v["vfs_read,1"])
	assert.Equal(t, NotTraceable, v["ring_buffer_lock_reserve,1"])
	assert.Equal(t, NotTraceable, v["tracing_on,1"])
	assert.Equal(t, Unknown, v["type_show,1"])
	assert.Equal(t, Unknown, v["type_show,2"])

	// Modules' lines, and a disabled record's, which says nothing.
	mods, err := kallsyms.ParseBytes("kallsyms", []byte(
		"ffffffff81000000 T _text\nffffffff81000010 T vfs_read\nffffffffc0001000 t xfs_iget\t[xfs]\nffffffffc0001100 t xfs_notrace\t[xfs]\nffffffffc0001200 t xfs_end\t[xfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	s, err := ParseTracefs("addrs", strings.NewReader("ffffffff81000010 vfs_read\nffffffffc0001004 xfs_iget [xfs]\nffffffffc0001180 __ftrace_invalid_address___128\n"), mods)
	require.NoError(t, err)
	v = verdicts(s, mods)
	assert.Equal(t, Traceable, v["vfs_read,1"])
	assert.Equal(t, Traceable, s.Function(kallsyms.Symbol{Name: "xfs_iget", Object: "xfs", Address: 0xffffffffc0001000}))
	// ftrace_location() finds the disabled record within xfs_notrace.
	assert.Equal(t, Traceable, s.Function(kallsyms.Symbol{Name: "xfs_notrace", Object: "xfs", Address: 0xffffffffc0001100}))
	assert.Equal(t, Unknown, s.Function(kallsyms.Symbol{Name: "xfs_end", Object: "xfs", Address: 0xffffffffc0001200}), "no known end")
	s, err = ParseTracefs("names", strings.NewReader("vfs_read\nxfs_iget [xfs]\n__ftrace_invalid_address___128\n"), mods)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Len())
	assert.Equal(t, Traceable, s.Function(kallsyms.Symbol{Name: "xfs_iget", Object: "xfs", Address: 0xffffffffc0001000}))
	assert.Equal(t, NotTraceable, s.Function(kallsyms.Symbol{Name: "xfs_notrace", Object: "xfs", Address: 0xffffffffc0001100}))
}

// TestMismatch: call sites of another kernel, or of another address space,
// are refused rather than taken to say that nothing is traceable.
func TestMismatch(t *testing.T) {
	index := func(name, lines string) *kallsyms.Index {
		ix, err := kallsyms.ParseBytes(name, []byte(lines), kallsyms.Options{})
		require.NoError(t, err)
		return ix
	}
	other := index("other", "ffffffff81000000 T _text\nffffffff81000040 T other_a\nffffffff81000100 T other_b\n")
	for _, tc := range []struct {
		file string
		ix   *kallsyms.Index
		want string
	}{
		{"available_filter_functions_addrs", fixtureIndex(t, 0x1e400000), "5 of 5 call sites sampled are not at the start of functions of System.map"},
		{"available_filter_functions", other, "5 of 5 functions sampled are not in other (e.g. type_show)"},
		{"available_filter_functions_addrs", other, "0xffffffff81000060, type_show here, is other_a+0x20/0xc0 there"},
		// The image placed by another kernel's _text: its sites fall into
		// that kernel's data, or nowhere.
		{"vmlinux", index("far", "ffffffff82000000 T _text\nffffffff81000000 T f\nffffffff82000000 T g\n"), "5 of 5 call sites sampled are not at the start of functions of far"},
	} {
		_, err := Open(fixture(tc.file), tc.ix)
		require.ErrorIs(t, err, ErrMismatch, tc.want)
		assert.ErrorContains(t, err, tc.want)
	}
}

func mustRead(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// TestImageInputs: a compressed image reads as the image; an x86 bzImage,
// and a table of zero words (arm64's, filled by relocations at boot), are
// ErrUnsupported; broken images are ErrMalformed naming the file.
func TestImageInputs(t *testing.T) {
	ix := fixtureIndex(t, 0)
	img := mustRead(t, fixture("vmlinux"))
	dir := t.TempDir()

	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(img)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	p := filepath.Join(dir, "vmlinux.gz")
	require.NoError(t, os.WriteFile(p, gz.Bytes(), 0o644))
	s, err := Open(p, ix)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Len())

	// An old bzImage, whose header does not say where its payload is.
	bz := make([]byte, 0x400)
	copy(bz, "MZ")
	copy(bz[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(bz[0x206:], 0x206)
	p = filepath.Join(dir, "vmlinuz")
	require.NoError(t, os.WriteFile(p, bz, 0o644))
	_, err = Open(p, ix)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, p+": unsupported ftrace call-site input: a bzImage of boot protocol 2.06")

	// The table is the image's only 40 bytes of __mcount_loc: zero them.
	off := tableOffset(t, img, ix)
	zeroed := bytes.Clone(img)
	clear(zeroed[off : off+40])
	_, err = NewImage("zeroed", bytes.NewReader(zeroed), ix)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "5 zero words")

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", img[:100], "not a kernel image"},
		{"a relocatable object", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 57)...), "not a kernel image"},
	} {
		_, err := NewImage(tc.name, bytes.NewReader(tc.data), ix)
		require.ErrorIs(t, err, ErrMalformed, tc.name)
		assert.ErrorContains(t, err, tc.name+": ", tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	// A read of the table that fails.
	_, err = NewImage("vmlinux", failAt{bytes.NewReader(img), int64(off)}, ix)
	require.ErrorIs(t, err, ErrMalformed)
	assert.ErrorContains(t, err, fmt.Sprintf("reading the call-site table at file offset %#x: injected", off))
	// Bounds that are no table.
	bad, err := kallsyms.ParseBytes("bad", []byte("ffffffff81000000 T _text\nffffffff81002000 R __start_mcount_loc\nffffffff81002007 R __stop_mcount_loc\n"), kallsyms.Options{})
	require.NoError(t, err)
	_, err = NewImage("vmlinux", bytes.NewReader(img), bad)
	require.ErrorIs(t, err, ErrMalformed)
	assert.ErrorContains(t, err, "is no table of 8-byte addresses")
	past, err := kallsyms.ParseBytes("past", []byte("ffffffff81000000 T _text\nffffffff81002000 R __start_mcount_loc\nffffffff81003000 R __stop_mcount_loc\n"), kallsyms.Options{})
	require.NoError(t, err)
	_, err = NewImage("vmlinux", bytes.NewReader(img), past)
	require.ErrorIs(t, err, ErrMalformed)
	assert.ErrorContains(t, err, "not within a loaded segment's file bytes")
}

// failAt fails every read of the 32 bytes at off.
type failAt struct {
	r   *bytes.Reader
	off int64
}

func (f failAt) ReadAt(p []byte, off int64) (int, error) {
	if off < f.off+32 && off+int64(len(p)) > f.off {
		return 0, errors.New("injected")
	}
	return f.r.ReadAt(p, off)
}

// tableOffset is the file offset of the image's call-site table.
func tableOffset(t *testing.T, img []byte, ix *kallsyms.Index) int {
	f, err := elfNewFile(img)
	require.NoError(t, err)
	off, err := fileOffset(f, "vmlinux", symAddr(t, ix, startSym), 32)
	require.NoError(t, err)
	return int(off)
}

// TestTracefsMalformed: each line is one of tracefs's forms, or an error
// naming the file and the line.
func TestTracefsMalformed(t *testing.T) {
	ix := fixtureIndex(t, 0)
	for _, tc := range []struct{ in, want string }{
		{"", "no call sites"},
		{"vfs_read\n\ntwin_call\n", "f:2: malformed ftrace call-site input: an empty line"},
		{"zz vfs_read\n", `f:1: malformed ftrace call-site input: "zz" is not an address`},
		{"vfs_read [xfs] extra\n", "f:1: malformed ftrace call-site input: \"vfs_read [xfs] extra\": want [address ]name[ [module]]"},
		{"vfs_read xfs]\n", `"vfs_read" is not an address`},
		{"ffffffff81000010 vfs_read\ntwin_call\n", "f:2: malformed ftrace call-site input: lines with and without addresses"},
		{"vfs_read [\n", `"[": a module is [name]`},
		{strings.Repeat("x", 512) + "\n", "a name of 512 bytes (KSYM_NAME_LEN is 512)"},
	} {
		_, err := ParseTracefs("f", strings.NewReader(tc.in), ix)
		require.ErrorIs(t, err, ErrMalformed, tc.in)
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
}

// TestDebianPPC64EL: Debian's real ppc64el 6.1 vmlinux (testutil.PPC64EL)
// against its System.map: one call site per word of its table (counted
// here from the map's bounds), and the functions the kernel's build
// leaves without one: kernel/trace/ and kernel/irq_work.c are built
// without the ftrace flags (their Makefiles), string routines are
// assembly.
func TestDebianPPC64EL(t *testing.T) {
	root := testutil.PPC64EL(t)
	boot := filepath.Join(root, "boot")
	ix, err := kallsyms.Open(filepath.Join(boot, "System.map-"+testutil.PPC64ELRelease), kallsyms.Options{})
	require.NoError(t, err)
	s, err := Open(filepath.Join(boot, "vmlinux-"+testutil.PPC64ELRelease), ix)
	require.NoError(t, err)
	assert.Equal(t, int(symAddr(t, ix, stopSym)-symAddr(t, ix, startSym))/8, s.Len())
	assert.Equal(t, 33773, s.Len())
	for name, want := range map[string]Verdict{
		"vfs_read": Traceable, "schedule": Traceable, "cmdline_proc_show": Traceable, "kmalloc_trace": Traceable,
		"ring_buffer_lock_reserve": NotTraceable, "tracing_on": NotTraceable, "trace_vbprintk": NotTraceable,
		"irq_work_queue": NotTraceable, "memcpy": NotTraceable,
	} {
		sym, err := ix.Lookup(kallsyms.Vmlinux, name, 0)
		require.NoError(t, err, name)
		assert.Equal(t, want, s.Function(sym), name)
	}
}

// elfNewFile opens an image held in memory.
func elfNewFile(data []byte) (*elf.File, error) { return elf.NewFile(bytes.NewReader(data)) }

// TestCovers: an image speaks for vmlinux alone, a tracefs list for the
// objects it has lines of; of the others' functions the sites say
// nothing, whatever their addresses.
func TestCovers(t *testing.T) {
	mods, err := kallsyms.ParseBytes("kallsyms", []byte(
		"ffffffff81000000 T _text\nffffffff81000060 t type_show\nffffffff81000070 T vfs_read\nffffffff81000080 T ring_buffer_lock_reserve\nffffffff81000090 T cmdline_proc_show\nffffffff810000a0 T tracing_on\nffffffff810000b0 T klp_enable_patch\nffffffff810000c0 T __fentry__\nffffffff810000d0 t type_show\nffffffff810000e0 T twin_call\nffffffff81001000 D jiffies\nffffffff81002000 R __start_mcount_loc\nffffffff81002028 R __stop_mcount_loc\n"+
			"ffffffffc0001000 t ext4_iget\t[ext4]\nffffffffc0001100 t ext4_end\t[ext4]\nffffffffc0002000 t xfs_iget\t[xfs]\nffffffffc0002100 t xfs_end\t[xfs]\n"), kallsyms.Options{})
	require.NoError(t, err)
	img, err := Open(fixture("vmlinux"), mods)
	require.NoError(t, err)
	ext4 := kallsyms.Symbol{Name: "ext4_iget", Object: "ext4", Address: 0xffffffffc0001000}
	xfs := kallsyms.Symbol{Name: "xfs_iget", Object: "xfs", Address: 0xffffffffc0002000}
	assert.True(t, img.Covers(kallsyms.Vmlinux))
	assert.False(t, img.Covers("ext4"))
	assert.Equal(t, Unknown, img.Function(ext4))

	s, err := ParseTracefs("addrs", strings.NewReader("ffffffff81000070 vfs_read\nffffffff81000060 type_show\nffffffffc0002000 xfs_iget [xfs]\n"), mods)
	require.NoError(t, err)
	assert.True(t, s.Covers("xfs"))
	assert.False(t, s.Covers("ext4"))
	assert.Equal(t, Traceable, s.Function(xfs))
	assert.Equal(t, Unknown, s.Function(ext4), "ext4 has no line: loaded after the list was made")
	assert.Equal(t, NotTraceable, s.Function(kallsyms.Symbol{Name: "ring_buffer_lock_reserve", Object: kallsyms.Vmlinux, Address: 0xffffffff81000080}))
}

// TestImageArm64: arm64 links vmlinux with --no-apply-dynamic-relocs, so
// its table is zeros and .rela.dyn's R_AARCH64_RELATIVE relocations hold
// the call sites (the kernel writes them at boot): a function is traceable
// exactly where the disassembly shows a patchable entry's two NOPs.
func TestImageArm64(t *testing.T) {
	ix, err := kallsyms.Open(fixture("arm64/System.map"), kallsyms.Options{})
	require.NoError(t, err)
	img := mustRead(t, fixture("arm64/vmlinux"))
	f, err := elfNewFile(img)
	require.NoError(t, err)
	off, err := fileOffset(f, "vmlinux", symAddr(t, ix, startSym), 40)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 40), img[off:off+40], "the table holds zeros")

	s, err := Open(fixture("arm64/vmlinux"), ix)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Len())
	assert.Equal(t, 11, matchesOracle(t, s, ix, traced(t, "arm64/available_filter_functions_addrs")), "_stext too, at type_show")
}

// TestImageArm64CallOps: arm64 with CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS
// (Linux 6.8 on) records the first of two NOPs before each traced
// function, 8 bytes before it: in the function above, or on a label
// (_stext, here). The sites are moved into their functions, where
// ftrace_call_adjust() moves the kernel's records, and every verdict is
// the disassembly's (whose list names _stext for type_show's NOPs before
// it).
func TestImageArm64CallOps(t *testing.T) {
	ix, err := kallsyms.Open(fixture("arm64-callops/System.map"), kallsyms.Options{})
	require.NoError(t, err)
	want := traced(t, "arm64-callops/available_filter_functions_addrs")
	stext := symAddr(t, ix, stextSym)
	require.True(t, want[stext])
	delete(want, stext)

	f, err := elf.Open(fixture("arm64-callops/vmlinux"))
	require.NoError(t, err)
	defer f.Close()
	words := make([]uint64, 5)
	require.NoError(t, relocated(f, "vmlinux", symAddr(t, ix, startSym), words))
	for _, w := range words {
		assert.True(t, want[w+preEntryBytes], "%#x: 8 bytes before a traced function", w)
	}
	assert.Equal(t, uint64(preEntryBytes), preEntry(ix, words))

	s, err := Open(fixture("arm64-callops/vmlinux"), ix)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Len())
	for _, a := range s.addrs {
		assert.True(t, want[a], "%#x: a traced function's start", a)
	}
	assert.Equal(t, 11, matchesOracle(t, s, ix, want))

	// Sites at their functions' starts are not moved.
	arm64, err := kallsyms.Open(fixture("arm64/System.map"), kallsyms.Options{})
	require.NoError(t, err)
	plain, err := Open(fixture("arm64/vmlinux"), arm64)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), preEntry(arm64, plain.addrs))
}

// TestImageArm64CodeOnly: arm64's kallsyms without CONFIG_KALLSYMS_ALL
// lists neither _text (before _stext) nor the table's bounds: _stext and
// the image's own symbols place it, KASLR offset and all.
func TestImageArm64CodeOnly(t *testing.T) {
	const shift = 0x2c0000
	full, err := kallsyms.Open(fixture("arm64/System.map"), kallsyms.Options{})
	require.NoError(t, err)
	s0, err := Open(fixture("arm64/vmlinux"), full)
	require.NoError(t, err)
	var code bytes.Buffer
	pastStext := false
	for _, l := range strings.Split(string(shifted(t, mustRead(t, fixture("arm64/System.map")), shift)), "\n") {
		f := strings.Fields(l)
		pastStext = pastStext || len(f) == 3 && f[2] == "_stext"
		if pastStext && len(f) == 3 && (f[1] == "T" || f[1] == "t") {
			code.WriteString(l + "\n")
		}
	}
	ix, err := kallsyms.ParseBytes("kallsyms", code.Bytes(), kallsyms.Options{})
	require.NoError(t, err)
	_, ok := ix.Find(kallsyms.Vmlinux, "_text", 1)
	require.False(t, ok)
	s, err := Open(fixture("arm64/vmlinux"), ix)
	require.NoError(t, err)
	assert.Equal(t, uint64(shift), s.Slide())
	want, got := verdicts(s0, full), verdicts(s, ix)
	for k, v := range got {
		assert.Equal(t, want[k], v, k)
	}
	assert.Equal(t, NotTraceable, got["ring_buffer_lock_reserve,1"])
	assert.Equal(t, Traceable, got["vfs_read,1"])

	// Without _stext either, nothing places the image.
	var bare bytes.Buffer
	for _, l := range strings.Split(code.String(), "\n") {
		if l != "" && !strings.HasSuffix(l, " _stext") {
			bare.WriteString(l + "\n")
		}
	}
	ix, err = kallsyms.ParseBytes("kallsyms", bare.Bytes(), kallsyms.Options{})
	require.NoError(t, err)
	_, err = Open(fixture("arm64/vmlinux"), ix)
	require.ErrorIs(t, err, ErrNoTable)
	assert.ErrorContains(t, err, "kallsyms has no _text, nor an _stext the image's symbols have too")
}

// bzImageOf wraps payload as x86's bzImage carries it.
func bzImageOf(payload []byte) []byte { return kimage.BzImageOf(payload) }

// TestBzImage: x86's compressed kernel, /boot/vmlinuz: its payload is the
// vmlinux (xz with the x86 BCJ filter as Debian builds it, zstd or gzip,
// xz's and zstd's followed by the decompressed size), which gives the
// same call sites as the vmlinux itself.
func TestBzImage(t *testing.T) {
	ix := fixtureIndex(t, 0)
	vmlinux := mustRead(t, fixture("vmlinux"))
	img, err := Open(fixture("vmlinux"), ix)
	require.NoError(t, err)
	size := binary.LittleEndian.AppendUint32(nil, uint32(len(vmlinux)))

	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err = w.Write(vmlinux)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zst := enc.EncodeAll(vmlinux, nil)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"xz", append(mustRead(t, fixture("vmlinux.xz")), size...)},
		{"zstd", append(zst, size...)},
		{"gzip", gz.Bytes()},
	} {
		p := filepath.Join(dir, "vmlinuz-"+tc.name)
		require.NoError(t, os.WriteFile(p, bzImageOf(tc.payload), 0o644))
		s, err := Open(p, ix)
		require.NoError(t, err, tc.name)
		assert.Equal(t, 5, s.Len(), tc.name)
		assert.Equal(t, verdicts(img, ix), verdicts(s, ix), tc.name)
	}

	for _, tc := range []struct {
		name string
		data []byte
		kind error
		want string
	}{
		{"lzo", bzImageOf(append([]byte("\x89LZO\x00\r\n\x1a\n"), size...)), ErrUnsupported, "a bzImage whose payload (starting 89 4c 5a 4f 00 0d) is compressed as klpresolve does not read (xz, zstd, gzip, lz4, lzma and bzip2 are read; not lzo)"},
		{"payload past the end", bzImageOf(nil)[:1040], ErrMalformed, "its payload (0 bytes at 0x410) is not within the file's 1040 bytes"},
		{"corrupt xz", bzImageOf(append(bytes.Repeat([]byte{0xfd, '7', 'z', 'X', 'Z', 0}, 4), size...)), ErrMalformed, "its payload: not a kernel xz stream"},
		{"not a vmlinux", bzImageOf(append(zstd1(t, []byte("plain text, not ELF")), 0, 0, 0, 0)), ErrMalformed, "its payload is not an ELF vmlinux"},
		{"a 32-bit vmlinux", bzImageOf(append(zstd1(t, append([]byte("\x7fELF\x01\x01\x01"), make([]byte, 60)...)), 0, 0, 0, 0)), ErrMalformed, "its payload's vmlinux: not a little-endian 64-bit ELF file (x86_64's)"},
		{"program headers past the head", bzImageOf(append(zstd1(t, phoffAt(vmlinux, 1<<20)), 0, 0, 0, 0)), ErrMalformed, "its payload's vmlinux: program header 0 at 0x100000 is past the first"},
	} {
		p := filepath.Join(dir, tc.name)
		require.NoError(t, os.WriteFile(p, tc.data, 0o644))
		_, err := Open(p, ix)
		require.ErrorIs(t, err, tc.kind, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

// phoffAt is vmlinux with its program headers said to be at off.
func phoffAt(vmlinux []byte, off uint64) []byte {
	b := bytes.Clone(vmlinux)
	binary.LittleEndian.PutUint64(b[0x20:], off) // e_phoff
	return b
}

func zstd1(t *testing.T, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	return enc.EncodeAll(b, nil)
}

// TestDebianAMD64Vmlinuz: Debian's real amd64 6.1 vmlinuz
// (testutil.Vmlinuz: xz with the x86 BCJ filter) against the corpus's
// System.map of the same build, and against its kallsyms moved by a KASLR
// offset: one call site per word of the table (counted here from the
// map's bounds), and the functions the kernel's build leaves without one.
func TestDebianAMD64Vmlinuz(t *testing.T) {
	if testutil.Sampled() {
		t.Skip("decompresses 66 MB; the full run reads it")
	}
	vmlinuz := testutil.Vmlinuz(t, "amd64")
	smap := testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64")
	ix, err := kallsyms.Open(smap, kallsyms.Options{})
	require.NoError(t, err)
	s, err := Open(vmlinuz, ix)
	require.NoError(t, err)
	assert.Equal(t, int(symAddr(t, ix, stopSym)-symAddr(t, ix, startSym))/8, s.Len())
	assert.Equal(t, 40521, s.Len())
	want := map[string]Verdict{
		"vfs_read": Traceable, "schedule": Traceable, "cmdline_proc_show": Traceable, "kmalloc_trace": Traceable,
		"ring_buffer_lock_reserve": NotTraceable, "tracing_on": NotTraceable, "trace_vbprintk": NotTraceable,
		"irq_work_queue": NotTraceable, "memcpy": NotTraceable, "native_sched_clock": NotTraceable,
	}
	assertVerdicts(t, s, ix, want)

	const shift = 0x1c000000
	s, moved := openMoved(t, vmlinuz, smap, shift)
	assert.Equal(t, uint64(shift), s.Slide())
	assertVerdicts(t, s, moved, want)
}

// assertVerdicts checks what s says of each of ix's functions named in
// want (each the only one of its name).
func assertVerdicts(t *testing.T, s *Sites, ix *kallsyms.Index, want map[string]Verdict) {
	t.Helper()
	for name, v := range want {
		sym, err := ix.Lookup(kallsyms.Vmlinux, name, 0)
		require.NoError(t, err, name)
		assert.Equal(t, v, s.Function(sym), name)
	}
}

// openMoved opens path against the System.map smap with every address
// moved by shift, as a running kernel's kallsyms is by its KASLR offset.
func openMoved(t *testing.T, path, smap string, shift uint64) (*Sites, *kallsyms.Index) {
	t.Helper()
	moved, err := kallsyms.ParseBytes("kallsyms", shifted(t, mustRead(t, smap), shift), kallsyms.Options{})
	require.NoError(t, err)
	s, err := Open(path, moved)
	require.NoError(t, err)
	return s, moved
}
