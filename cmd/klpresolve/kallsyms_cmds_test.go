// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

func TestLookupCommand(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, "lookup", "vfs_read", "type_show,3", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read: 0xffffffff813669e0 T vmlinux position 1")
	code, read, _ := runCLI(t, "lookup", "vfs_read", "type_show,3", "--kallsyms", k, "--no-map")
	assert.Equal(t, 0, code)
	assert.Equal(t, out, read)
	code, out, _ = runCLI(t, "lookup", "type_show", "--kallsyms", k, "--format", "json")
	assert.Equal(t, 1, code)
	var doc struct {
		Results []struct {
			Spec, Object, Name string
			Address, Error     *string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	j := doc.Results
	require.Len(t, j, 1)
	assert.Nil(t, j[0].Address)
	require.NotNil(t, j[0].Error)
	assert.Contains(t, *j[0].Error, "unresolvable ambiguity")
}

// addr: text and JSON, addresses from standard input, an address below
// every symbol (exit 1), and bad input (exit 2).
func TestAddrCommand(t *testing.T) {
	example := exampleKallsyms()
	code, out, _ := runCLI(t, "addr", "0xffffffff81010285", "ffffffffc0350690", "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.Equal(t, "0xffffffff81010285: vfs_read+0x105/0x200\n0xffffffffc0350690: ext4_read_inode_bitmap+0x10/0x280 [ext4]\n", out)

	var stdout, stderr bytes.Buffer
	code = run([]string{"addr", "-", "10", "--kallsyms", example, "--format", "json"},
		strings.NewReader("ffffffff81010285\n  0xffffffffc0350690 \n"), &stdout, &stderr)
	assert.Equal(t, 1, code, stderr.String())
	var doc struct {
		Results []struct {
			Address                            string
			Symbol, Object, Type, Offset, Size *string
			Error                              *string
		}
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc))
	j := doc.Results
	require.Len(t, j, 3)
	assert.Equal(t, "0xffffffff81010285", j[0].Address)
	assert.Equal(t, []string{"vfs_read", "vmlinux", "T", "0x105", "0x200"}, []string{*j[0].Symbol, *j[0].Object, *j[0].Type, *j[0].Offset, *j[0].Size})
	assert.Equal(t, []string{"ext4_read_inode_bitmap", "ext4", "0x10", "0x280"}, []string{*j[1].Symbol, *j[1].Object, *j[1].Offset, *j[1].Size})
	assert.Nil(t, j[1].Error)
	assert.Equal(t, "0x10", j[2].Address)
	assert.Nil(t, j[2].Symbol)
	require.NotNil(t, j[2].Error)
	assert.Equal(t, "no symbol at or below this address", *j[2].Error)

	// Past the page of ext4's last symbol (0xffffffffc0350900), and of
	// everything's: in no object.
	code, out, _ = runCLI(t, "addr", "0xffffffffc0351000", "--kallsyms", example)
	assert.Equal(t, 1, code)
	assert.Equal(t, "0xffffffffc0351000: in no object: past the last symbol of module ext4 (ext4_iget at 0xffffffffc0350900)\n", out)

	code, out, _ = runCLI(t, "addr", " 0xffffffffc0351000\t", "--kallsyms", example)
	assert.Equal(t, 1, code)
	assert.Equal(t, "0xffffffffc0351000: in no object: past the last symbol of module ext4 (ext4_iget at 0xffffffffc0350900)\n", out)

	code, _, errs := runCLI(t, "addr", "vfs_read", "--kallsyms", example)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `address "vfs_read" is not hex`)
	code, _, errs = runCLI(t, "addr", "0x1ffffffffffffffff", "--kallsyms", example)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `address "0x1ffffffffffffffff" does not fit in 64 bits`)

	// Past the last symbol of an object its size is not known: "?", null.
	code, out, _ = runCLI(t, "addr", "0xffffffffc0350a00", "--kallsyms", example)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^0xffffffffc0350a00: \S+\+0x[0-9a-f]+/\? \[ext4\]\n$`, out)
	code, out, _ = runCLI(t, "addr", "0xffffffffc0350a00", "--kallsyms", example, "--format", "json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"size": null`)
	code, _, errs = runCLI(t, "addr", "-", "--kallsyms", "-")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "standard input cannot hold both the symbols (--kallsyms -) and the addresses (-)")

	// lookup - reads specs the same way.
	stdout.Reset()
	code = run([]string{"lookup", "-", "--kallsyms", example},
		strings.NewReader("vfs_read\next4:ext4_read_inode_bitmap type_show,3\n"), &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Equal(t, "vfs_read: 0xffffffff81010180 T vmlinux position 1\n"+
		"ext4:ext4_read_inode_bitmap: 0xffffffffc0350680 t ext4 position 1\n"+
		"type_show,3: 0xffffffff81010080 t vmlinux position 3\n", stdout.String())
}

func TestObjectsAddrSnapshot(t *testing.T) {
	k := testutil.Corpus(t, "amd64/kallsyms-6.1.0-57-amd64.txt")
	code, out, _ := runCLI(t, "objects", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "62 objects, 120626 symbols")
	code, out, _ = runCLI(t, "addr", "ffffffff813669e4", "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read+0x4/")
	snap := filepath.Join(t.TempDir(), "k.snap")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", k, "-o", snap)
	require.Equal(t, 0, code)
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", snap)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "6 resolved")
	// The report names the file given, and the text the snapshot was
	// written from, which error messages name.
	assert.Contains(t, out, "\nkernel symbols: "+snap+" (snapshot of "+k+")\n")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", k)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "\nkernel symbols: "+k+"\n")
	// A truncated snapshot is a clear error.
	b, _ := os.ReadFile(snap)
	require.NoError(t, os.WriteFile(snap, b[:len(b)/2], 0o644))
	code, _, errOut := runCLI(t, "objects", "--kallsyms", snap)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "snapshot")

	// An index that compresses 1,000-fold: its tables carry it.
	rep := filepath.Join(t.TempDir(), "rep.txt")
	require.NoError(t, os.WriteFile(rep, []byte(strings.Repeat("ffffffff81000000 t a\n", 200000)), 0o644))
	repSnap := filepath.Join(t.TempDir(), "rep.snap")
	code, _, errOut = runCLI(t, "snapshot", "--kallsyms", rep, "-o", repSnap)
	assert.Equal(t, 0, code, errOut)
	code, out, _ = runCLI(t, "lookup", "a,200000", "--kallsyms", repSnap)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "0xffffffff81000000")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", rep, "-o", filepath.Join(t.TempDir(), "rep.snap"), "--raw")
	assert.Equal(t, 0, code)

	// The raw form answers the same.
	raw := filepath.Join(t.TempDir(), "k.raw")
	code, _, _ = runCLI(t, "snapshot", "--kallsyms", k, "-o", raw, "--raw")
	require.Equal(t, 0, code)
	code, out, _ = runCLI(t, "addr", "ffffffff813669e4", "--kallsyms", raw)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "vfs_read+0x4/")
	code, out, _ = runCLI(t, fixture("livepatch-sample.ko"), "--kallsyms", raw)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "6 resolved")
	b, _ = os.ReadFile(raw)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(raw, b, 0o644))
	code, _, errOut = runCLI(t, "objects", "--kallsyms", raw)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "checksum mismatch")
}

// TestLookupJSONKinds: each failed spec says its kind, a stable name.
func TestLookupJSONKinds(t *testing.T) {
	example := exampleKallsyms()
	code, out, _ := runCLI(t, "lookup", "vfs_read", "type_show", "type_show,99", "vfs_reed", "xfs:xfs_iget", "ext4:", "--kallsyms", example, "--format", "json")
	assert.Equal(t, 1, code)
	var doc struct {
		Results []struct {
			Spec  string
			Error *string
			Kind  string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	var kinds []string
	for _, r := range doc.Results {
		kinds = append(kinds, r.Kind)
		assert.Equal(t, r.Kind == "found", r.Error == nil, r.Spec)
	}
	assert.Equal(t, []string{"found", "ambiguous", "no_such_position", "not_found", "object_not_loaded", "bad_spec"}, kinds)
}

// TestLookupSystemMapCodeOnly: against the System.map of a kernel whose
// kallsyms holds code only, lookup answers as that kernel would.
func TestLookupSystemMapCodeOnly(t *testing.T) {
	m := testutil.Corpus(t, "arm64/System.map-6.1.0-57-arm64")
	code, out, _ := runCLI(t, "lookup", "jiffies", "vfs_read", "--kallsyms", m)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "jiffies: error: symbol 'jiffies' not found in symbol table (the System.map's jiffies at 0xffff800009cb79c0 (type D): outside the kernel's code, and this kernel was built without CONFIG_KALLSYMS_ALL (its kallsyms table holds 50336 symbols)")
	assert.Contains(t, out, "vfs_read: 0xffff8000083ab520 T vmlinux position 1\n")
	// amd64's map: its kernel holds data too.
	code, out, _ = runCLI(t, "lookup", "jiffies", "--kallsyms", testutil.Corpus(t, "amd64/System.map-6.1.0-57-amd64"))
	assert.Equal(t, 0, code, out)
}

// TestLookupExplains: a data symbol not found in a code-only kallsyms
// says why, as the main job does; a negative sympos says what it is.
func TestLookupExplains(t *testing.T) {
	k := testutil.Corpus(t, "arm64/kallsyms-6.1.0-57-arm64.txt") // no CONFIG_KALLSYMS_ALL
	code, out, _ := runCLI(t, "lookup", "jiffies", "vfs_read,-1", "--kallsyms", k)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "jiffies: error: ")
	assert.Contains(t, out, "lists code symbols only, as a kallsyms without CONFIG_KALLSYMS_ALL does")
	assert.Contains(t, out, "vfs_read,-1: error: spec \"vfs_read,-1\": sympos -1 is negative")
}
