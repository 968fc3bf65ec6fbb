// SPDX-License-Identifier: GPL-2.0-only

package modplt

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// expected is one row of a corpus expected-plt.tsv.
type expected map[string]string

func (e expected) int(t *testing.T, col string) int {
	t.Helper()
	v, err := strconv.Atoi(e[col])
	require.NoError(t, err, "column %s", col)
	return v
}

func readExpected(t *testing.T, path string) map[string]expected {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan())
	cols := strings.Split(sc.Text(), "\t")
	out := map[string]expected{}
	for sc.Scan() {
		row := expected{}
		for i, v := range strings.Split(sc.Text(), "\t") {
			if i < len(cols) {
				row[cols[i]] = v
			}
		}
		out[row["module"]] = row
	}
	require.NoError(t, sc.Err())
	return out
}

// TestCorpusExpectedPLT checks every corpus module against the numbers
// the kernel's own 6.1 algorithm gives (expected-plt.tsv): kernel mode
// must equal them, with and without the erratum 843419 workaround, and
// optimal mode must land between the region and the per-section ideal.
func TestCorpusExpectedPLT(t *testing.T) {
	for _, dir := range []string{"amd64", "arm64", "armhf"} {
		want := readExpected(t, testutil.Corpus(t, filepath.Join(dir, "expected-plt.tsv")))
		mods, err := filepath.Glob(filepath.Join(testutil.Corpus(t, dir), "modules", "*.ko"))
		require.NoError(t, err)
		require.NotEmpty(t, mods)
		for _, path := range mods {
			m, err := Open(path)
			require.NoError(t, err)
			e, ok := want[m.Name]
			require.True(t, ok, "%s: module %s not in expected-plt.tsv", path, m.Name)
			t.Run(dir+"/"+m.Name, func(t *testing.T) {
				k, err := m.Count(Options{})
				require.NoError(t, err)
				assert.Equal(t, e.int(t, "jc"), k.Totals.Branches, "jc")
				assert.Equal(t, e.int(t, "jc_undef"), k.Totals.Undef, "jc_undef")
				assert.Equal(t, e.int(t, "jc_nonzero_addend"), k.Totals.NonZeroAddend, "jc_nonzero_addend")
				assert.Equal(t, e.int(t, "jc_same_section"), k.Totals.SameSection, "jc_same_section")
				assert.Equal(t, e.int(t, "plt_core"), k.PLTCore, "plt_core")
				assert.Equal(t, e.int(t, "plt_init"), k.PLTInit, "plt_init")
				assert.Equal(t, uint64(e.int(t, "plt_sh_size_core")), k.PLTSizeCore, "plt_sh_size_core")
				assert.Equal(t, uint64(e.int(t, "plt_sh_size_init")), k.PLTSizeInit, "plt_sh_size_init")
				assert.Empty(t, k.Warnings)
				if dir == "arm64" {
					ke, err := m.Count(Options{Erratum843419: true})
					require.NoError(t, err)
					assert.Equal(t, e.int(t, "plt_core_erratum"), ke.PLTCore, "plt_core_erratum")
					assert.Equal(t, e.int(t, "plt_init_erratum"), ke.PLTInit, "plt_init_erratum")
					// Without KASLR, 6.1 reserves nothing for branches.
					nk, err := m.Count(Options{NoRandomizeBase: true})
					require.NoError(t, err)
					assert.Equal(t, []int{0, 0}, []int{nk.PLTCore, nk.PLTInit}, "no KASLR")
					assert.Equal(t, e.int(t, "jc"), nk.Totals.Branches, "jc, no KASLR")
				}
				o, err := m.Count(Options{Mode: ModeOptimal})
				require.NoError(t, err)
				fixed := o.FixedPLTs
				for _, r := range []struct {
					got  int
					kern int
					col  string
				}{{o.PLTCore, k.PLTCore, "core"}, {o.PLTInit, k.PLTInit, "init"}} {
					assert.LessOrEqual(t, r.got, r.kern, "optimal %s above kernel", r.col)
					assert.GreaterOrEqual(t, r.got-fixed, e.int(t, "plt_"+r.col+"_region"), "optimal %s below the region floor", r.col)
					assert.LessOrEqual(t, r.got-fixed, e.int(t, "plt_"+r.col+"_ideal"), "optimal %s above the per-section ideal", r.col)
				}
			})
		}
	}
}
