// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

var (
	oracleRecord = flag.String("oracle.record", "", "write testdata/oracle/GEN-ARCH/ (such as 6.12-amd64) from -oracle.dumps (testdata/oracle/gen.mk)")
	oracleDumps  = flag.String("oracle.dumps", "", "a kernel run's report, unpacked (testdata/oracle/gen.mk)")
)

// kallsymsDigest is what GEN-ARCH/kallsyms.digest holds of a kallsyms:
// vmlinux's symbols, their number and a hash of their "ADDRESS TYPE NAME"
// lines in the kernel's order.
type kallsymsDigest struct {
	Symbols int
	Hash    uint64
}

func digestOf(syms []Symbol) kallsymsDigest {
	h := xxhash.New()
	for _, s := range syms {
		fmt.Fprintf(h, "%016x %c %s\n", s.Address, s.Type, s.Name)
	}
	return kallsymsDigest{Symbols: len(syms), Hash: h.Sum64()}
}

func (d kallsymsDigest) String() string {
	return fmt.Sprintf("symbols %d\nxxhash %016x\n", d.Symbols, d.Hash)
}

// TestImageOracle: the table klpresolve reads out of Debian's 6.1, 6.12
// and 7.2 images (amd64 and arm64) is the /proc/kallsyms of the same kernel
// booted under qemu without KASLR (testdata/oracle/gen.mk), vmlinux's
// symbols in its order, names, types and addresses: their number and
// hash, as the boots recorded them. With -oracle.record, it records them
// from -oracle.dumps instead, with each loaded module's sections.
func TestImageOracle(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "oracle")
	if *oracleRecord != "" {
		recordOracle(t, filepath.Join(dir, *oracleRecord), *oracleDumps)
		return
	}
	for _, gen := range []string{"6.1", "6.12", "7.2"} {
		for _, arch := range []string{"amd64", "arm64"} {
			t.Run(gen+"-"+arch, func(t *testing.T) {
				testutil.LightKernel(t, gen, arch)
				b, err := os.ReadFile(filepath.Join(dir, gen+"-"+arch, "kallsyms.digest"))
				require.NoError(t, err)
				var want kallsymsDigest
				var release string
				for l := range strings.Lines(string(b)) {
					switch {
					case strings.HasPrefix(l, "release "):
						release = strings.TrimSpace(l[len("release "):])
					case strings.HasPrefix(l, "symbols "), strings.HasPrefix(l, "xxhash "):
						_, err := fmt.Sscanf(l, "symbols %d", &want.Symbols)
						if err != nil {
							_, err = fmt.Sscanf(l, "xxhash %x", &want.Hash)
						}
						require.NoError(t, err, l)
					}
				}
				require.Equal(t, testutil.DebianKernelRelease(gen, arch), release)
				var img string
				if gen == "6.1" {
					img = testutil.Vmlinuz(t, arch) // scripts/vmlinuz's: the same package's
				} else {
					_, img = testutil.DebianKernel(t, gen, arch)
				}
				ix, err := Open(img, Options{})
				require.NoError(t, err)
				var syms []Symbol
				ix.Symbols(Vmlinux, func(s Symbol) bool { syms = append(syms, s); return true })
				got := digestOf(syms)
				assert.Equal(t, want, got)
			})
		}
	}
}

// recordOracle writes out's kallsyms.digest and NAME.sections from a
// kernel run's report (lib.sh): its /proc/kallsyms, and the sections
// sysfs lists for each module it loaded.
func recordOracle(t *testing.T, out, dumps string) {
	require.NotEmpty(t, dumps, "-oracle.dumps")
	require.NoError(t, os.MkdirAll(out, 0o755))
	lines := testutil.ReadSymbolLines(t, filepath.Join(dumps, "kallsyms"))
	var syms []Symbol
	for _, l := range lines {
		if l.Object == Vmlinux {
			syms = append(syms, Symbol{Name: l.Name, Address: l.Addr, Type: l.Type[0]})
		}
	}
	d := digestOf(syms)
	dmesg, err := os.ReadFile(filepath.Join(dumps, "dmesg"))
	require.NoError(t, err)
	release := ""
	if i := strings.Index(string(dmesg), "Linux version "); i >= 0 {
		release, _, _ = strings.Cut(string(dmesg[i+len("Linux version "):]), " ")
	}
	require.NotEmpty(t, release, "the kernel's banner in dmesg")
	name := filepath.Base(out)
	head := fmt.Sprintf("# %s: /proc/kallsyms of Debian's %s booted under qemu with nokaslr (testdata/oracle/gen.mk): vmlinux's symbols\nrelease %s\n", name, release, release)
	require.NoError(t, os.WriteFile(filepath.Join(out, "kallsyms.digest"), []byte(head+d.String()), 0o644))

	// Each module's sections, as sysfs listed them.
	f, err := os.Open(filepath.Join(dumps, "sections"))
	require.NoError(t, err)
	defer f.Close()
	bySec := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), " ")
		if ok {
			bySec[mod] = append(bySec[mod], "section "+rest)
		}
	}
	require.NoError(t, sc.Err())
	for mod, secs := range bySec {
		slices.Sort(secs)
		body := fmt.Sprintf("# %s: where Debian's %s put %s's sections (sysfs), loaded as testdata/oracle/gen.mk orders\nmodule %s\n%s\n", mod, release, mod, mod, strings.Join(secs, "\n"))
		require.NoError(t, os.WriteFile(filepath.Join(out, mod+".sections"), []byte(body), 0o644))
	}
	t.Logf("%s: %d vmlinux symbols, %d modules", out, d.Symbols, len(bySec))
}
