package bench

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A report measured in this process gives the collector's setting it ran
// under; one that times other processes gives none.
func TestReportGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(250))
	r := newReport("x", "in")
	require.NotNil(t, r.GOGC)
	require.Equal(t, 250, *r.GOGC)
	var text bytes.Buffer
	r.WriteText(&text)
	require.Equal(t, "x on in (GOMAXPROCS="+strconv.Itoa(r.GOMAXPROCS)+", GOGC=250)\n", text.String())
	j, err := json.Marshal(r)
	require.NoError(t, err)
	require.Contains(t, string(j), `"gogc":250`)

	debug.SetGCPercent(-1)
	r = newReport("x", "in")
	require.Equal(t, -1, *r.GOGC)
	text.Reset()
	r.WriteText(&text)
	require.Contains(t, text.String(), "GOGC=off)")

	p := newProcessReport("proc", "in")
	require.Nil(t, p.GOGC)
	j, err = json.Marshal(p)
	require.NoError(t, err)
	require.NotContains(t, string(j), "gogc")
	text.Reset()
	p.WriteText(&text)
	require.Equal(t, "proc on in (GOMAXPROCS="+strconv.Itoa(p.GOMAXPROCS)+")\n", text.String())
}
