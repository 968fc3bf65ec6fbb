// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// All is every benchmark of the project, in one document for CI to store
// and compare.
type All struct {
	Started string    `json:"started"`
	Reports []*Report `json:"reports"`
	Skipped []string  `json:"skipped,omitempty"` // benchmarks whose input is absent
}

// Inputs names the files RunAll measures on; an empty name skips its
// benchmarks (and RunAll says so).
type Inputs struct {
	Kallsyms       string   // bench kallsyms: a kallsyms file
	Patch          string   // bench resolve: a livepatch module
	PatchKallsyms  string   // bench resolve: the kallsyms Patch resolves against
	LoadedModules  string   // bench kallsyms-loaded: these modules loaded into PatchKallsyms's kernel
	PLTModules     []string // bench plt, one report each
	LinkModules    []string // bench link, one report each
	OneShotCommand []string // when not nil, adds kallsyms' one-shot figures (see Kallsyms)
}

// RunAll runs every benchmark on in's files (a benchmark whose file is
// absent is skipped, and said so), and bench cfi, which needs none.
func RunAll(in Inputs) (*All, error) {
	out := &All{Started: time.Now().UTC().Format(time.RFC3339)}
	have := func(p string) bool {
		if p == "" {
			return false
		}
		_, err := os.Stat(p)
		return err == nil
	}
	type step struct {
		name  string
		needs []string
		run   func() (*Report, error)
	}
	steps := []step{
		{"kallsyms", []string{in.Kallsyms}, func() (*Report, error) { return Kallsyms(in.Kallsyms, in.OneShotCommand) }},
		{"kallsyms-loaded", []string{in.PatchKallsyms, in.LoadedModules}, func() (*Report, error) {
			return KallsymsLoaded(in.PatchKallsyms, in.LoadedModules, in.OneShotCommand)
		}},
		{"resolve", []string{in.Patch, in.PatchKallsyms}, func() (*Report, error) { return Resolve(in.Patch, in.PatchKallsyms) }},
	}
	for _, m := range in.PLTModules {
		steps = append(steps, step{"plt " + stem(m), []string{m}, func() (*Report, error) { return PLT(m) }})
	}
	for _, m := range in.LinkModules {
		steps = append(steps, step{"link " + stem(m), []string{m}, func() (*Report, error) { return Link(m) }})
	}
	steps = append(steps, step{"cfi", nil, func() (*Report, error) { return CFI(CFIOptions{}) }})
	for _, s := range steps {
		ok := true
		for _, p := range s.needs {
			if !have(p) {
				if p == "" {
					p = "no input given"
				} else {
					p += " not present"
				}
				out.Skipped = append(out.Skipped, s.name+": "+p)
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

// stem is a file's name without its directory and extensions: "xfs" for
// "modules/xfs.ko.zst".
func stem(path string) string {
	name, _, _ := strings.Cut(filepath.Base(path), ".")
	return name
}
