// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// readmeExample is one command of README.md and the output it shows.
type readmeExample struct {
	line    int // of the command in README.md
	command string
	want    string
	block   int // the fenced block it is in (0: an indented go run line)
	page    string
}

// docPages are the pages whose examples TestReadmeExamples runs, in
// this order: a page's examples may use files an earlier page's made
// (the walkthrough's /tmp files).
var docPages = []string{
	"README.md",
	"docs/walkthrough.md",
	"docs/resolving.md",
	"docs/commands.md",
	"docs/json.md",
	"docs/benchmarks.md",
	"docs/library.md",
	"docs/fixtures.md",
}

// readmeMaxLines bounds the README: it is the front door; the detail
// lives in docs/.
const readmeMaxLines = 250

// TestReadmeFrontDoor holds the README to its size and checks that every
// page it links to exists and that every page in docs/ is linked from it.
func TestReadmeFrontDoor(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	readme := string(b)
	assert.LessOrEqual(t, strings.Count(readme, "\n"), readmeMaxLines, "README.md's lines")
	for _, m := range readmeLink.FindAllStringSubmatch(readme, -1) {
		_, err := os.Stat(filepath.Join(root, m[1]))
		assert.NoError(t, err, "README.md links to %s", m[1])
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		assert.Contains(t, readme, "("+rel+")", "README.md links to every page in docs/")
	}
}

var readmeLink = regexp.MustCompile(`\]\(([^)#:]+)\)`)

// readmeExamples returns README.md's examples: in its fenced blocks, each
// "$ " line (a trailing backslash continues it: "$ klpresolve ...", or a
// command that sets up the ones after it in its block) and the lines
// after it up to the next "$ " or the block's end; and each indented "go
// run ./cmd/klpresolve ..." line whose output is the fenced block that
// follows it.
func readmeExamples(readme string) []readmeExample {
	lines := strings.Split(readme, "\n")
	var out []readmeExample
	inBlock, block := false, 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			if inBlock = !inBlock; inBlock {
				block++
			}
			continue
		}
		if !inBlock {
			if cmd, ok := strings.CutPrefix(l, "    go run ./cmd/klpresolve "); ok {
				// Its output: the next fenced block, after blank lines.
				j := i + 1
				for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
					j++
				}
				if j < len(lines) && strings.HasPrefix(lines[j], "```") {
					k := j + 1
					for k < len(lines) && !strings.HasPrefix(lines[k], "```") {
						k++
					}
					out = append(out, readmeExample{i + 1, "klpresolve " + cmd, strings.Join(lines[j+1:k], "\n"), 0, ""})
					i = k
				}
			}
			continue
		}
		cmd, ok := strings.CutPrefix(l, "$ ")
		if !ok {
			continue
		}
		at := i + 1
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		var want []string
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
			i++
			want = append(want, lines[i])
		}
		out = append(out, readmeExample{at, cmd, strings.TrimRight(strings.Join(want, "\n"), "\n"), block, ""})
	}
	return out
}

// Timings and ratios vary from run to run: the comparison leaves them out.
var (
	readmeTime  = regexp.MustCompile(`\d+(\.\d+)?\s*(ms|us|µs|ns|s)\b`)
	readmeRatio = regexp.MustCompile(`[0-9.]+x\b`)
	readmeAttr  = regexp.MustCompile(`time="[0-9.]+"`)
)

var readmeColumns = regexp.MustCompile(` {2,}`)

func readmeNormal(s string) string {
	// Columns padded to a path that the test moves under a longer
	// folder are as wide as that path.
	s = readmeColumns.ReplaceAllString(s, "  ")
	s = readmeAttr.ReplaceAllString(s, `time="T"`)
	s = readmeTime.ReplaceAllString(s, "T")
	return strings.TrimRight(readmeRatio.ReplaceAllString(s, "R"), "\n")
}

// TestReadmeExamples runs README.md's examples, in order, with this test
// binary standing in for klpresolve, and compares what each prints
// (standard output and error, as a terminal shows them) with what the
// README shows; an example whose shown output has a "..." line need only
// contain the other lines. Paths under /tmp are moved to a temporary
// folder. Left out: the bench commands (their figures are this machine's
// and they run for seconds; TestBenchCommands runs them), and, where the
// corpus or the kernel headers an example names are absent, that example
// and the rest of its block (which it may set up).
func TestReadmeExamples(t *testing.T) {
	if testutil.Sampled() {
		t.Skip("runs every README example as a process (the full run does)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("README examples need bash (pipes):", err)
	}
	root := testutil.RepoRoot()
	var examples []readmeExample
	for i, page := range docPages {
		b, err := os.ReadFile(filepath.Join(root, page))
		require.NoError(t, err)
		for _, ex := range readmeExamples(string(b)) {
			ex.page = page
			if ex.block > 0 {
				ex.block += 1000 * (i + 1) // blocks are per page
			}
			examples = append(examples, ex)
		}
	}
	require.Greater(t, len(examples), 20, "the documentation's examples")

	self := selfAsCLI(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(self, filepath.Join(bin, "klpresolve")))
	tmp := t.TempDir() + "/"
	corpus := testutil.CorpusDir()
	corpusHere := corpus != "" && filepath.Clean(corpus) == filepath.Join(root, "..", "shared", "corpus")
	ran, leftBlock := 0, -1
	for _, ex := range examples {
		if strings.HasPrefix(ex.command, "klpresolve bench") {
			continue
		}
		if ex.block > 0 && ex.block == leftBlock {
			t.Logf("%s:%d: left out with the example before it", ex.page, ex.line)
			continue
		}
		if strings.Contains(ex.command, "../shared/corpus") && !corpusHere {
			t.Logf("%s:%d: left out: it needs the corpus at ../shared/corpus", ex.page, ex.line)
			leftBlock = ex.block
			continue
		}
		if missing := absentSystemFile(ex.command); missing != "" {
			t.Logf("%s:%d: left out: %s is not installed here", ex.page, ex.line, missing)
			leftBlock = ex.block
			continue
		}
		cmd, want := underTmp(ex.command, tmp), underTmp(ex.want, tmp)
		c := exec.Command("bash", "-c", cmd+" 2>&1")
		c.Dir = root
		c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		got, _ := c.Output() // the exit status is the example's own (some fail on purpose)
		ran++
		if !strings.Contains(want, "\n...\n") && !strings.HasPrefix(want, "...\n") && !strings.HasSuffix(want, "\n...") {
			assert.Equal(t, readmeNormal(want), readmeNormal(string(got)), "%s:%d: %s", ex.page, ex.line, ex.command)
			continue
		}
		for _, l := range strings.Split(want, "\n") {
			if l != "..." {
				assert.Contains(t, readmeNormal(string(got)), readmeNormal(l), "%s:%d: %s", ex.page, ex.line, ex.command)
			}
		}
	}
	t.Logf("%d documentation examples run", ran)
}

// underTmp moves the paths under /tmp in s to tmp (not /var/tmp's).
func underTmp(s, tmp string) string {
	const keep = "\x00var-tmp\x00"
	s = strings.ReplaceAll(s, "/var/tmp/", keep)
	s = strings.ReplaceAll(s, "/tmp/", tmp)
	return strings.ReplaceAll(s, keep, "/var/tmp/")
}

// absentSystemFile returns the first file under /usr/src or
// /var/tmp/klpresolve-* a command names that this machine lacks (kernel
// headers: see testutil.Headers; kernels: scripts/debian-kernel), or "".
func absentSystemFile(command string) string {
	for _, f := range strings.Fields(command) {
		// Kernel headers, and the kernels scripts/debian-kernel fetches.
		if f = strings.TrimRight(f, "/"); strings.HasPrefix(f, "/usr/src/") || strings.HasPrefix(f, "/var/tmp/klpresolve-") {
			if _, err := os.Stat(f); err != nil {
				return f
			}
		}
	}
	return ""
}

func TestReadmeExamplesParse(t *testing.T) {
	ex := readmeExamples("intro\n\n    go run ./cmd/klpresolve a.ko --kallsyms k\n\n```\nout 1\nout 2\n```\n" +
		"```\n$ klpresolve x \\\n    --y z\nline\n\n$ klpresolve w | tail -1\nlast\n```\n" +
		"```\n$ mkdir -p /tmp/a\n$ klpresolve v /tmp/a\n```\n")
	require.Equal(t, []readmeExample{
		{3, "klpresolve a.ko --kallsyms k", "out 1\nout 2", 0, ""},
		{10, "klpresolve x  --y z", "line", 1, ""},
		{14, "klpresolve w | tail -1", "last", 1, ""},
		{18, "mkdir -p /tmp/a", "", 2, ""},
		{19, "klpresolve v /tmp/a", "", 2, ""},
	}, ex)
}
