// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A small /proc/kallsyms in the kernel's format: vmlinux (address order),
// then modules (newest first, each in symtab order), then pseudo-modules.
const sample = `ffffffff81000000 T _stext
ffffffff81000100 t helper
ffffffff81000200 T vfs_read
ffffffff81000300 t helper
ffffffff81000400 t show_stat.isra.0
ffffffff81000500 d __func__.0
ffffffff81000600 t c_stop.llvm.1234
ffffffff81000700 t c_stop
ffffffff81000800 t zero_sym
ffffffffc0002000 t helper	[xfs]
ffffffffc0002100 T xfs_iget	[xfs]
ffffffffc0002200 t helper	[xfs]
ffffffffc0002300 t helper	[xfs]
ffffffffc0001000 t helper	[libcrc32c]
ffffffffc0001100 T crc32c	[libcrc32c]
ffffffffc0003000 t ftrace_trampoline	[__builtin__ftrace]
ffffffffc0004000 t bpf_prog_x	[bpf]
`

func mustParse(t *testing.T, text string, opts Options) *Index {
	t.Helper()
	ix, err := Parse("sample", strings.NewReader(text), opts)
	require.NoError(t, err)
	return ix
}

// writers are the snapshot formats this build writes: compact (version 7)
// and raw (6).
var writers = map[string]func(*Index, io.Writer) error{"compact": (*Index).WriteSnapshot, "raw": (*Index).WriteSnapshotRaw}
