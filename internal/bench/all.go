// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"os"
	"path/filepath"
	"time"
)

// All is every benchmark of the project, in one document for CI to store
// and compare.
type All struct {
	Started string    `json:"started"`
	Reports []*Report `json:"reports"`
	Skipped []string  `json:"skipped,omitempty"` // benchmarks whose input is absent
}

// RunAll runs every benchmark on its standard input: the shared corpus
// under corpus (skipped, and said so, where a file is absent) and the
// repository's own fixtures under repo. self, when not nil, adds
// kallsyms' one-shot figures (see Kallsyms).
func RunAll(repo, corpus string, self []string) (*All, error) {
	out := &All{Started: time.Now().UTC().Format(time.RFC3339)}
	have := func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	}
	c := func(rel string) string { return filepath.Join(corpus, rel) }
	host := c("host/kallsyms-6.18.44-firecracker.txt")
	amd64 := c("amd64/kallsyms-6.1.0-57-amd64.txt")
	steps := []struct {
		name  string
		needs []string
		run   func() (*Report, error)
	}{
		{"kallsyms", []string{host}, func() (*Report, error) { return Kallsyms(host, self) }},
		{"resolve", []string{amd64}, func() (*Report, error) {
			return Resolve(filepath.Join(repo, "testdata", "klp", "big.ko.zst"), amd64)
		}},
		{"plt amdgpu", []string{c("arm64/modules/amdgpu.ko")}, func() (*Report, error) { return PLT(c("arm64/modules/amdgpu.ko")) }},
		{"link amdgpu", []string{c("arm64/modules/amdgpu.ko")}, func() (*Report, error) { return Link(c("arm64/modules/amdgpu.ko")) }},
		{"link xfs", []string{c("amd64/modules/xfs.ko")}, func() (*Report, error) { return Link(c("amd64/modules/xfs.ko")) }},
		{"cfi", nil, func() (*Report, error) { return CFI(CFIOptions{}) }},
	}
	for _, s := range steps {
		ok := true
		for _, p := range s.needs {
			if !have(p) {
				out.Skipped = append(out.Skipped, s.name+": "+p+" not present")
				ok = false
			}
		}
		if !ok {
			continue
		}
		r, err := s.run()
		if err != nil {
			return nil, err
		}
		out.Reports = append(out.Reports, r)
	}
	return out, nil
}
