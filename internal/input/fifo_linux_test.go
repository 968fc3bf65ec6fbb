// SPDX-License-Identifier: GPL-2.0-only

package input

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// A named pipe is a stream: its first bytes go to the check, and a
// refusal ends the read there, whatever the writer still has to send.
func TestReadFileCheckedFIFO(t *testing.T) {
	refuse := errors.New("zeros are no module")
	_, err := ReadFileChecked(testutil.EndlessFIFO(t, "fifo"), DefaultMaxSize, func(string, []byte) error { return refuse })
	require.Equal(t, refuse, err, "returned as it is")
}
