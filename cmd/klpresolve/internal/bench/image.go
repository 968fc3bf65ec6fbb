// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"os"
	"runtime"
	"time"

	"github.com/klpresolve/klpresolve/internal/kimage"
	"github.com/klpresolve/klpresolve/kallsyms"
)

// Image measures reading a kernel image's own kallsyms table beside
// getting the vmlinux out of the image alone, in one run: both from the
// file (read, and decompressed where it is compressed), taking turns,
// the best of imageRounds each. The target: the table read and indexed
// in at most 1.5 times what the decompression takes. For an image that
// needs none (arm64's Image) the reference is reading the file, which
// no decoder of it can approach: the figure says so.
func Image(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, vmlinux, err := kimage.Vmlinux(path, data)
	if err != nil {
		return nil, err
	}
	compressed := len(vmlinux) != len(data)
	rep := newReport("image", path)
	rep.add("image", float64(len(data))/(1<<20), "MiB", "the file")
	rep.add("vmlinux", float64(len(vmlinux))/(1<<20), "MiB", "decompressed")
	vmlinux, data = nil, nil
	const imageRounds = 5
	unpack, decode := time.Duration(1<<62), time.Duration(1<<62)
	var allocs uint64
	var syms int
	for range imageRounds {
		runtime.GC()
		t := time.Now()
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if _, _, err := kimage.Vmlinux(path, b); err != nil {
			return nil, err
		}
		unpack = min(unpack, time.Since(t))
		b = nil
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t = time.Now()
		ix, err := kallsyms.Open(path, kallsyms.Options{})
		if err != nil {
			return nil, err
		}
		decode = min(decode, time.Since(t))
		runtime.ReadMemStats(&after)
		allocs = after.TotalAlloc - before.TotalAlloc
		syms = ix.Len()
		ix.Close()
	}
	rep.add("symbols", float64(syms), "symbols", "vmlinux's, in the image's table")
	what := "read and decompress the file"
	if !compressed {
		what = "read the file (nothing to decompress)"
	}
	rep.add("decompress", ms(unpack), "ms", what+", best of 5")
	rep.add("decode", ms(decode), "ms", "read, decompress, find and decode the tables, index them; best of 5")
	r := ratio(decode, unpack)
	if compressed {
		rep.addTarget("decode_vs_decompress", r, "x", "<=", 1.5, "")
	} else {
		rep.add("decode_vs_decompress", r, "x", "no target: nothing to decompress")
	}
	rep.add("decode allocations", float64(allocs)/(1<<20), "MiB", "the decompressed image, the text the table decodes to, the index")
	return rep, nil
}
