// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// WriteLoaded adds each module once, as the kernel lists it loaded: the
// same lines as the corpus's kallsyms, made apart from the project by
// the kernel's rules, lists for crc_t10dif, at the address the module
// is given; a module the input lists, a second file of one name and a
// file that is no module are left out.
func TestWriteLoaded(t *testing.T) {
	mods := filepath.Dir(testutil.Corpus(t, "amd64/modules/md4.ko"))
	corpus := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for _, f := range []string{"crc-t10dif.ko", "md4.ko", "af_key.ko", "sub/md4.ko"} {
		require.NoError(t, os.Symlink(filepath.Join(mods, filepath.Base(f)), filepath.Join(dir, f)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.ko.txt"), []byte("not a module\n"), 0o644))
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "kallsyms", "example.txt"))
	require.NoError(t, err)
	in := filepath.Join(t.TempDir(), "kallsyms")
	// af_key is loaded already: listed in the input, it is not added.
	require.NoError(t, os.WriteFile(in, append(slices.Clone(example), "ffffffffc2000000 t pfkey_send_notify\t[af_key]\n"...), 0o644))

	var out bytes.Buffer
	n, err := WriteLoaded(&out, in, dir)
	require.NoError(t, err)
	require.Equal(t, 2, n) // crc_t10dif, md4
	require.True(t, bytes.HasPrefix(out.Bytes(), example), "the input's lines come first, as they were")

	got := moduleLines(t, out.String())
	require.Len(t, got["af_key"], 1)
	require.NotEmpty(t, got["md4"])
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(got["md4"]))), len(got["md4"]), "md4 is added once")
	// crc_t10dif: the corpus's lines, name and type, in its order.
	want := moduleLines(t, readString(t, corpus))["crc_t10dif"]
	require.Len(t, want, 28)
	require.Equal(t, want, got["crc_t10dif"])

	ix, err := kallsyms.Parse("loaded", bytes.NewReader(out.Bytes()), kallsyms.Options{})
	require.NoError(t, err)
	objs := map[string]kallsyms.ObjectInfo{}
	for _, o := range ix.Objects() {
		objs[o.Name] = o
	}
	// The first module added is at x86_64's MODULES_VADDR; the next
	// starts on the page after the first's last symbol.
	first, second := objs["crc_t10dif"], objs["md4"]
	require.Equal(t, uint64(0xffffffffc0000000), first.Low)
	require.Equal(t, (first.High+4096)&^4095, second.Low)
}

// moduleLines are text's module lines by module: type and name, without
// the address.
func moduleLines(t *testing.T, text string) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	for _, l := range strings.Split(text, "\n") {
		rest, mod, ok := strings.Cut(l, "\t[")
		if !ok {
			continue
		}
		_, nt, _ := strings.Cut(rest, " ")
		m[strings.TrimSuffix(mod, "]")] = append(m[strings.TrimSuffix(mod, "]")], nt)
	}
	return m
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
