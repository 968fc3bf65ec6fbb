// SPDX-License-Identifier: GPL-2.0-only

package apicheck

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/klpresolve/klpresolve/"

// layers puts each package of the module in its layer: a package may
// import packages of lower layers only (docs/architecture.md). Internal
// packages sit at the bottom beside the public leaves cfi, kgen and diag;
// the CLI's own internal packages sit just under it.
var layers = map[string]int{
	"diag": 0, "kgen": 0, "cfi": 0, "internal/...": 0,
	"kallsyms": 1, "modplt": 1, "ftrace": 1, "symvers": 1,
	"klp":                2,
	"pipeline":           3,
	"cmd/klpresolve/...": 4,
	"cmd/klpresolve":     5,
	"scripts":            5, // the scripts' tests
}

func layer(t *testing.T, pkg string) int {
	rel := strings.TrimPrefix(pkg, module)
	if l, ok := layers[rel]; ok {
		return l
	}
	best, bestLen := -1, 0
	for k, l := range layers {
		if p, ok := strings.CutSuffix(k, "/..."); ok && strings.HasPrefix(rel, p+"/") && len(p) > bestLen {
			best, bestLen = l, len(p)
		}
	}
	if best < 0 {
		t.Fatalf("%s: no layer: add it to layers and to docs/architecture.md", rel)
	}
	return best
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	require.NoError(t, err)
	return string(out)
}

// TestLayersPointDown: no package imports one above it, nor one of its
// own layer but for the pairs the architecture names (ftrace reads
// kallsyms' index).
func TestLayersPointDown(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...")
	sameLayer := map[[2]string]bool{{"ftrace", "kallsyms"}: true}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(strings.TrimPrefix(f[0], module), "internal/apicheck") {
			continue
		}
		from := layer(t, f[0])
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := layer(t, imp)
			pair := [2]string{strings.TrimPrefix(f[0], module), strings.TrimPrefix(imp, module)}
			if to > from || to == from && from > 0 && !sameLayer[pair] {
				t.Errorf("%s (layer %d) imports %s (layer %d)", pair[0], from, pair[1], to)
			}
		}
	}
}

// internalName is an exported name of one of the module's internal
// packages, as go doc prints it (elfobj.File).
var internalName = regexp.MustCompile(`\b(elfobj|input|kimage|kconfig|kxz|objbridge|modname|par|atomicfile|hugepage|ksort|reference|testutil)\.[A-Z]`)

// TestNoInternalInPublicAPI: go doc -all of each public package names no
// internal package, so that a caller can name every type and error it is
// handed.
func TestNoInternalInPublicAPI(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}}", module+"...")
	var n int
	for pkg := range strings.Lines(out) {
		pkg = strings.TrimSpace(pkg)
		if strings.Contains(pkg, "/internal") || strings.HasPrefix(pkg, module+"cmd/") || pkg == module+"scripts" || pkg == "" {
			continue
		}
		n++
		doc, err := exec.Command("go", "doc", "-all", pkg).Output()
		require.NoError(t, err, pkg)
		for line := range strings.Lines(string(doc)) {
			assert.NotContains(t, line, "internal/", "%s: %s", pkg, strings.TrimSpace(line))
			if internalName.MatchString(line) {
				t.Errorf("%s names an internal package: %s", pkg, strings.TrimSpace(line))
			}
		}
	}
	assert.GreaterOrEqual(t, n, 9, "public packages found")
}
