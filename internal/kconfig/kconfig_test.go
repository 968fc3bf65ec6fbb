// SPDX-License-Identifier: GPL-2.0-only

package kconfig

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

const sample = `#
# Automatically generated file; DO NOT EDIT.
# Linux/arm64 6.1.0 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT="gcc (Debian 12.2.0-14) 12.2.0"
CONFIG_ARM64=y
CONFIG_ARM64_4K_PAGES=y
# CONFIG_ARM64_64K_PAGES is not set
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
# CONFIG_RANDOMIZE_BASE is not set
CONFIG_EXT4_FS=m
CONFIG_NR_CPUS=256
CONFIG_PHYSICAL_START=0x1000000
CONFIG_CMDLINE="console=\"ttyS0\" path=C:\\x"

# end of General setup
`

// TestParse: each form confdata.c writes, read as the kernel's
// Kconfig reads it.
func TestParse(t *testing.T) {
	c, err := Parse("config-6.1", strings.NewReader(strings.ReplaceAll(sample, "CONFIG_NR_CPUS=256\n", "CONFIG_NR_CPUS=256\r\n")))
	require.NoError(t, err)
	assert.Equal(t, 9, c.Len())
	for name, want := range map[string]string{"ARM64": "y", "CONFIG_EXT4_FS": "m", "NR_CPUS": "256", "PHYSICAL_START": "0x1000000",
		"CC_VERSION_TEXT": "gcc (Debian 12.2.0-14) 12.2.0", "CMDLINE": `console="ttyS0" path=C:\x`} {
		v, ok := c.Value(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, v, name)
	}
	_, ok := c.Value("RANDOMIZE_BASE")
	assert.False(t, ok, "is not set")
	assert.True(t, c.Enabled("MODULE_UNLOAD"))
	assert.True(t, c.Enabled("EXT4_FS"), "m is enabled")
	assert.False(t, c.Enabled("ARM64_64K_PAGES"))
	assert.False(t, c.Enabled("NR_CPUS"), "a number is not y or m")
	assert.False(t, c.Enabled("NO_SUCH_OPTION"))
	assert.Equal(t, "config-6.1", c.Source)
}

// TestOpen: a gzip-compressed configuration (/proc/config.gz) reads as
// the plain one.
func TestOpen(t *testing.T) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write([]byte(sample))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	p := filepath.Join(t.TempDir(), "config.gz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	c, err := Open(p)
	require.NoError(t, err)
	assert.Equal(t, 9, c.Len())
	assert.True(t, c.Enabled("ARM64_4K_PAGES"))
	_, err = Open(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestMalformed: a line of none of the forms is an error naming the
// file and the line.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct{ text, msg string }{
		{"CONFIG_A=y\nFOO=y\n", "cfg:2: not an option: no CONFIG_ prefix"},
		{"CONFIG_A\n", "cfg:1: no '=' after the option's name"},
		{"CONFIG_A B=y\n", `cfg:1: option name "A B" is not letters, digits and underscores`},
		{"CONFIG_=y\n", `cfg:1: option name "" is not`},
		{"\n\nCONFIG_S=\"open\n", "cfg:3: a string value without its closing quote"},
		{"CONFIG_S=\"a\"b\"\n", "cfg:1: a string value without its closing quote"},
		{"CONFIG_S=\"\n", "cfg:1: a string value without its closing quote"},
	} {
		_, err := Parse("cfg", strings.NewReader(tc.text))
		require.ErrorIs(t, err, ErrMalformed, tc.text)
		assert.Contains(t, err.Error(), tc.msg)
		var le *LineError
		require.ErrorAs(t, err, &le)
	}
}

// A later "is not set" unsets what an earlier line set, and a later
// value replaces an earlier one, as conf_read_simple() takes the last.
func TestLastLineWins(t *testing.T) {
	c, err := Parse("cfg", strings.NewReader("CONFIG_A=y\n# CONFIG_A is not set\nCONFIG_B=y\nCONFIG_B=m\n# a comment\n#CONFIG_C is not set\n"))
	require.NoError(t, err)
	_, ok := c.Value("A")
	assert.False(t, ok)
	v, _ := c.Value("B")
	assert.Equal(t, "m", v)
	assert.Equal(t, 1, c.Len())
}

// TestDebianConfig reads the configuration Debian's linux-headers
// package installs (.config beside Module.symvers): every option a
// CONFIG_ line sets, counted here independently, and the ones the
// livepatch loader depends on.
func TestDebianConfig(t *testing.T) {
	p := filepath.Join(filepath.Dir(testutil.Headers(t, "6.1.0-57-amd64")), ".config")
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	set := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "CONFIG_") {
			set++
		}
	}
	c, err := Open(p)
	require.NoError(t, err)
	assert.Equal(t, set, c.Len())
	assert.Greater(t, c.Len(), 5000)
	for _, opt := range []string{"X86_64", "MODULES", "MODULE_UNLOAD", "LIVEPATCH", "STRICT_MODULE_RWX", "RANDOMIZE_BASE", "KALLSYMS_ALL"} {
		assert.True(t, c.Enabled(opt), opt)
	}
	v, ok := c.Value("LOCALVERSION")
	assert.True(t, ok)
	assert.Equal(t, "", v, "a quoted empty string")
	assert.False(t, c.Enabled("ARM64"))
}

// TestRelease: the header's release, as conf_write_heading() writes it;
// none where there is no header.
func TestRelease(t *testing.T) {
	c, err := Parse("config", strings.NewReader("#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.12.117 Kernel Configuration\n#\nCONFIG_64BIT=y\n"))
	if err != nil || c.Release != "6.12.117" {
		t.Fatalf("release %q, %v", c.Release, err)
	}
	c, err = Parse("config", strings.NewReader("CONFIG_64BIT=y\n# Linux/x86 6.12.117 Kernel Configuration\n"))
	if err != nil || c.Release != "6.12.117" {
		t.Fatalf("release %q, %v", c.Release, err)
	}
	c, err = Parse("config", strings.NewReader("# Linux/arm64 not a release at all Kernel Configuration\nCONFIG_64BIT=y\n"))
	if err != nil || c.Release != "" {
		t.Fatalf("release %q, %v", c.Release, err)
	}
}
