//go:build linux

package kallsyms

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// A raw snapshot file is mapped, and the mapping goes away with the Index:
// no string any API hands out may point into it, and once the Index is
// unreachable the mapping is unmapped while those strings stay readable.
func TestMappedSnapshotNamesOutliveIndex(t *testing.T) {
	for _, lto := range []bool{false, true} {
		opts := &Options{LTO: lto}
		path := filepath.Join(t.TempDir(), "k.raw")
		require.NoError(t, mustParse(t, sample, opts).WriteSnapshotRawFile(path))
		text := mustParse(t, sample, opts)

		ix, err := Open(path, nil)
		require.NoError(t, err)
		require.NotNil(t, ix.mapping, "lto %v: the raw snapshot was read, not mapped", lto)
		require.Equal(t, lto, ix.LTO())
		m := ix.mapping // not Go memory: does not keep ix alive
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		hi := lo + uintptr(len(m))

		var got []string // every string handed out, in a fixed order
		keep := func(ss ...string) {
			for _, s := range ss {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= lo && p < hi {
					t.Fatalf("lto %v: %q points into the mapping", lto, s)
				}
				got = append(got, s)
			}
		}
		keepSym := func(s Symbol) { keep(s.Name, s.Object) }
		keepErr := func(err error) {
			var le *LookupError
			if errors.As(err, &le) {
				keep(le.Object, le.Name, err.Error())
				for _, s := range append(le.Candidates, le.Near...) {
					keepSym(s)
				}
			}
		}
		for _, o := range ix.Objects() {
			keep(o.Name)
			ix.Symbols(o.Name, func(s Symbol) bool {
				keepSym(s)
				for _, c := range ix.Candidates(s.Object, s.Name) {
					keepSym(c)
				}
				for pos := range uint64(3) {
					r, err := ix.Lookup(s.Object, s.Name, pos)
					keepSym(r)
					keepErr(err)
				}
				r, err := ix.LookupName(s.Object + ":" + s.Name)
				keepSym(r)
				keepErr(err)
				if a, ok := ix.Addr(s.Address); ok {
					keepSym(a.Symbol)
				}
				return true
			})
		}
		// LTO: a stripped name answers the suffixed symbol, whose name is
		// not the caller's string.
		for _, name := range []string{"c_stop", "show_stat", "nonexistent"} {
			r, err := ix.Lookup(Vmlinux, name, 0)
			keepSym(r)
			keepErr(err)
		}
		keep(ix.Source())
		want := append([]string(nil), got...)
		for i := range want {
			want[i] = string([]byte(want[i])) // copies made while mapped
		}
		sameIndex(t, text, ix)

		// Drop the Index; its cleanup unmaps the file.
		collected := make(chan struct{})
		runtime.AddCleanup(ix, func(ch chan struct{}) { close(ch) }, collected)
		ix = nil
		deadline := time.Now().Add(10 * time.Second)
		unmapped := false
		for !unmapped && time.Now().Before(deadline) {
			runtime.GC()
			select {
			case <-collected:
				// (Not msync's ENOMEM: the runtime may map something else
				// at the same address at once.)
				maps, err := os.ReadFile("/proc/self/maps")
				require.NoError(t, err)
				unmapped = !strings.Contains(string(maps), path)
			default:
			}
			time.Sleep(time.Millisecond)
		}
		require.True(t, unmapped, "lto %v: the mapping was not released after the Index was collected", lto)
		require.Equal(t, want, got, "lto %v", lto) // read after the unmap: no fault
	}
}

// NoMap reads a raw snapshot file instead; the index is the same.
func TestRawSnapshotNoMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.raw")
	require.NoError(t, mustParse(t, sample, nil).WriteSnapshotRawFile(path))
	mapped, err := Open(path, nil)
	require.NoError(t, err)
	read, err := Open(path, &Options{NoMap: true})
	require.NoError(t, err)
	require.NotNil(t, mapped.mapping)
	require.Nil(t, read.mapping)
	sameIndex(t, mapped, read)
}
