// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/cfi"
	"github.com/klpresolve/klpresolve/internal/testutil"
	"github.com/klpresolve/klpresolve/kallsyms"
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

// A figure's target says whether the run met it, in JSON and in the
// text; Missed lists those missed.
func TestReportTargets(t *testing.T) {
	r := newProcessReport("x", "in")
	r.addTarget("fast", 1.2, "x", "<=", 1.5, "a comment")
	r.addTarget("big", 4, "x", ">=", 5, "")
	r.addTarget("none", 0, "allocs", "==", 0, "")
	r.add("plain", 7, "ms", "no target")
	require.Equal(t, []string{"big"}, r.Missed())
	var text bytes.Buffer
	r.WriteText(&text)
	require.Contains(t, text.String(), "  fast                                          1.2 x          target <= 1.5: met; a comment\n")
	require.Contains(t, text.String(), "  big                                             4 x          target >= 5: missed\n")
	require.Contains(t, text.String(), "  none                                            0 allocs     target == 0: met\n")
	require.Contains(t, text.String(), "  plain                                           7 ms         no target\n")
	j, err := json.Marshal(r.Figures[1])
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"big","value":4,"unit":"x","target":{"op":">=","bound":5,"met":false}}`, string(j))
}

// quickBench makes testing.Benchmark run each function a few times, not
// for a second, for the length of a test.
func quickBench(t *testing.T) {
	f := flag.Lookup("test.benchtime")
	require.NotNil(t, f)
	old := f.Value.String()
	require.NoError(t, f.Value.Set("20x"))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// bench kallsyms on the shipped example: every figure is there, and every
// ratio is the quotient of the figures it names.
func TestKallsymsReport(t *testing.T) {
	quickBench(t)
	in := filepath.Join(testutil.RepoRoot(), "testdata", "kallsyms", "example.txt")
	rep, err := Kallsyms(in, nil)
	require.NoError(t, err)
	require.Equal(t, "kallsyms", rep.Benchmark)
	require.NotNil(t, rep.GOGC)
	f := values(t, rep)
	data, err := os.ReadFile(in)
	require.NoError(t, err)
	ix, err := kallsyms.Open(in, kallsyms.Options{})
	require.NoError(t, err)
	require.Equal(t, float64(len(data)), f["input_bytes"])
	require.Equal(t, 27.0, f["input_lines"])
	require.Equal(t, float64(ix.MemSize()), f["index_bytes"])
	require.InDelta(t, f["index_bytes"]/f["input_bytes"], f["index_vs_input"], 1e-9)
	for _, r := range [][3]string{
		{"parse_vs_read", "parse_index_ms", "read_file_ms"},
		{"naive_vs_parse", "naive_parse_ms", "parse_index_ms"},
		{"current_vs_lookup", "kernel_current_lookup_ns", "lookup_ns"},
		{"old_vs_lookup", "kernel_old_lookup_ns", "lookup_ns"},
		{"parse_vs_snapshot_load", "parse_index_ms", "snapshot_load_ms"},
		{"parse_vs_snapshot_raw_load", "parse_index_ms", "snapshot_raw_load_ms"},
		{"parse_vs_snapshot_raw_read_load", "parse_index_ms", "snapshot_raw_read_load_ms"},
	} {
		require.Positive(t, f[r[1]], r[1])
		require.Positive(t, f[r[2]], r[2])
		require.InEpsilon(t, f[r[1]]/f[r[2]], f[r[0]], 1e-3, r[0])
	}
	require.InEpsilon(t, (f["read_file_ms"]+f["scan_hash_floor_ms"])/f["read_file_ms"], f["floor_vs_read"], 1e-3)
	require.InEpsilon(t, f["parse_index_ms"]/(f["read_file_ms"]+f["scan_hash_floor_ms"]), f["parse_vs_floor"], 1e-3)
	require.Zero(t, f["lookup_allocs"])
	require.Positive(t, f["allocs_per_10k_lines"])
	require.Positive(t, f["snapshot_bytes"])
	require.Positive(t, f["snapshot_raw_bytes"])
	require.NotContains(t, f, "oneshot_rounds") // no child command given
}

// values is the report's figures by name, each given once.
func values(t *testing.T, rep *Report) map[string]float64 {
	t.Helper()
	f := map[string]float64{}
	for _, x := range rep.Figures {
		require.NotContains(t, f, x.Name, "figure %s twice", x.Name)
		f[x.Name] = x.Value
	}
	return f
}

// bench plt on an arm64 module of the corpus: both modes beside the port
// of Linux 6.1, each speedup the quotient of its times; on the project's
// own Thumb-2 object, no reference (it is arm64's algorithm).
func TestPLTReport(t *testing.T) {
	quickBench(t)
	rep, err := PLT(testutil.Corpus(t, "arm64/modules/af_key.ko"))
	require.NoError(t, err)
	f := values(t, rep)
	require.Positive(t, f["branch relocations"])
	require.GreaterOrEqual(t, f["relocations"], f["branch relocations"])
	for _, mode := range []string{"kernel", "optimal"} {
		require.Positive(t, f[mode+" mode"], mode)
		require.InEpsilon(t, f["reference (Linux 6.1 port)"]/f[mode+" mode"], f[mode+" mode speedup"], 1e-9, mode)
	}

	rep, err = PLT(filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "thumb.o"))
	require.NoError(t, err)
	f = values(t, rep)
	require.NotContains(t, f, "reference (Linux 6.1 port)")
	require.NotContains(t, f, "kernel mode speedup")
	require.Positive(t, f["optimal mode"])
}

// bench link and bench resolve on the project's own objects: the counts
// are the objects', the rates and the ratio are quotients of the figures.
func TestLinkResolveReports(t *testing.T) {
	quickBench(t)
	got := filepath.Join(testutil.RepoRoot(), "testdata", "modplt", "got.o")
	rep, err := Link(got)
	require.NoError(t, err)
	f := values(t, rep)
	// Every relocation of an allocated section applies.
	want := testutil.AllocRelocs(t, got)
	require.Positive(t, want)
	require.Equal(t, float64(want), f["relocations applied"])
	require.Zero(t, f["relocations failed"])
	require.InEpsilon(t, f["relocations applied"]/f["apply"]/1e3, f["apply rate"], 1e-9)
	require.InEpsilon(t, f["relocations applied"]/f["link"]/1e3, f["link rate"], 1e-9)

	root := testutil.RepoRoot()
	rep, err = Resolve(filepath.Join(root, "testdata", "klp", "livepatch-sample.ko"), filepath.Join(root, "testdata", "kallsyms", "example.txt"))
	require.NoError(t, err)
	f = values(t, rep)
	require.Equal(t, 7.0, f["relocations"]) // the sample's .klp.rela entries (README: "7 relocations")
	require.Positive(t, f["resolve_ns_per_reloc"])
	require.InEpsilon(t, f["kernel_old_walk_ns_per_reloc"]/f["resolve_ns_per_reloc"], f["old_walk_vs_resolve"], 1e-9)
	require.Positive(t, f["whole_check_ms"])
	require.Positive(t, f["fleet_raw_ms"])
	require.InEpsilon(t, f["fleet_compact_ms"]/f["fleet_raw_ms"], f["fleet_compact_vs_raw"], 1e-9)
}

// bench cfi, small: each mode's figures for the hold asked, the ratio the
// quotient of the two p99s, and the readers did look up meanwhile.
func TestCFIReport(t *testing.T) {
	quickBench(t)
	hold := 100 * time.Microsecond
	rep, err := CFI(CFIOptions{Modules: 20, Readers: 1, Runs: 1, Holds: []time.Duration{hold}})
	require.NoError(t, err)
	require.Equal(t, "20 module adds, 1 readers", rep.Input)
	f := values(t, rep)
	for _, mode := range []cfi.Reclaim{cfi.Synchronous, cfi.Deferred} {
		tag := fmt.Sprintf("%s hold=%v", mode, hold)
		require.Positive(t, f[tag+" add p99"], tag)
		require.LessOrEqual(t, f[tag+" add p50"], f[tag+" add p99"], tag)
		require.Positive(t, f[tag+" total"], tag)
		require.Positive(t, f[tag+" lookups/s"], tag)
	}
	sync, deferred := fmt.Sprintf("%s hold=%v", cfi.Synchronous, hold), fmt.Sprintf("%s hold=%v", cfi.Deferred, hold)
	require.InEpsilon(t, f[sync+" add p99"]/f[deferred+" add p99"], f["p99 sync/deferred hold=100µs"], 1e-9)
	require.Positive(t, f["lookup"])

	_, err = CFI(CFIOptions{Modules: -1})
	require.EqualError(t, err, "need at least one module and one reader")
}
