// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// CorpusDir returns the shared corpus folder (../shared/corpus beside the
// repository, or $KLPRESOLVE_CORPUS) or "" when it is absent.
func CorpusDir() string {
	if d := os.Getenv("KLPRESOLVE_CORPUS"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// internal/testutil/testutil.go -> repo root -> ../shared/corpus
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	d := filepath.Join(root, "..", "shared", "corpus")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Corpus returns the path of rel inside the shared corpus, or skips the
// test with a message naming what is missing. CI always has the corpus.
func Corpus(tb testing.TB, rel string) string {
	tb.Helper()
	d := CorpusDir()
	if d == "" {
		tb.Skipf("shared corpus not present (../shared/corpus or $KLPRESOLVE_CORPUS): skipping test that needs %s", rel)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared corpus file %s not present: %v", rel, err)
	}
	return p
}

// RepoRoot returns the repository's root folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Headers returns the Module.symvers of Debian's kernel headers for
// release ("6.1.0-57-amd64": the package linux-headers-<release>), under
// $KLPRESOLVE_HEADERS or /usr/src, or skips the test with a message naming
// the package. CI installs the ones the tests use (.ci/run).
func Headers(tb testing.TB, release string) string {
	tb.Helper()
	dir := os.Getenv("KLPRESOLVE_HEADERS")
	if dir == "" {
		dir = "/usr/src"
	}
	p := filepath.Join(dir, "linux-headers-"+release, "Module.symvers")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("kernel headers not present (apt-get install linux-headers-%s): skipping test that needs %s", release, p)
	}
	return p
}
