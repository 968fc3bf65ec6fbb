// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/modplt"
)

// Open of a named pipe that never ends (a /dev/zero behind it) is refused
// at its first bytes, by klp and by modplt, with ErrMalformed: before, it
// was read up to the 1 GiB module limit.
func TestOpenEndlessPipe(t *testing.T) {
	for _, open := range []func(string) error{
		func(p string) error { _, err := Open(p); return err },
		func(p string) error { _, err := modplt.Open(p); return err },
	} {
		fifo := testutil.EndlessFIFO(t, "patch.ko")
		err := open(fifo)
		require.ErrorIs(t, err, ErrMalformed)
		assert.EqualError(t, err, fifo+`: not an ELF file (no \x7fELF magic)`)
	}
}
