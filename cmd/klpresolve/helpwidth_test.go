// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/atomicfile"
)

// TestHelpFitsScreen: every command's help (usage, description,
// examples, flags) fits in 80 columns, and no flag's usage is read by
// pflag as a value name (a backquoted word becomes the flag's type:
// "--vermagic modinfo -F vermagic").
func TestHelpFitsScreen(t *testing.T) {
	root := newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, &atomicfile.Temps{})
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	require.Greater(t, len(cmds), 10)
	for _, c := range cmds {
		path := strings.Fields(c.CommandPath())[1:]
		code, out, _ := runCLI(t, append(path, "--help")...)
		require.Equal(t, 0, code, "%v --help", path)
		for i, l := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), helpWidth, "%q --help, line %d: %s", c.CommandPath(), i+1, l)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			assert.NotContains(t, f.Usage, "`", "%s --%s: a backquote makes pflag take a value name from the usage", c.CommandPath(), f.Name)
		})
	}
}

// TestCompletionValues: the shell completion offers the values of the
// flags that take few (cobra's __complete is what the scripts call).
func TestCompletionValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "check", "x.ko", "--format", ""}, "text\njson\njunit\n:4\n"},
		{[]string{"__complete", "x.ko", "--format", ""}, "text\njson\n:4\n"},
		{[]string{"__complete", "check", "x.ko", "--kernel-version", ""}, "6.1\n6.12\n7.2\n:4\n"},
		{[]string{"__complete", "plt", "x.ko", "--mode", ""}, "kernel\noptimal\n:4\n"},
		{[]string{"__complete", "link", "x.ko", "--page-size", ""}, "4K\n16K\n64K\n:4\n"},
		{[]string{"__complete", "bench", "kallsyms", "--format", ""}, "text\njson\n:4\n"},
		{[]string{"__complete", "info", ""}, "ko\no\nxz\nzst\ngz\n:8\n"},
		{[]string{"__complete", "check", "x.ko", "--root", ""}, ":16\n"},
	} {
		code, out, _ := runCLI(t, tc.args...)
		assert.Equal(t, 0, code, "%v", tc.args)
		assert.Equal(t, tc.want, out, "%v", tc.args)
	}
}

// TestFlagUsageOneLine: every flag's usage is one line of at most 80
// characters; the detail is in the command's description and docs/.
func TestFlagUsageOneLine(t *testing.T) {
	root := newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				assert.LessOrEqual(t, len(f.Usage), helpWidth, "%s --%s: %s", c.CommandPath(), f.Name, f.Usage)
				assert.NotContains(t, f.Usage, "\n", "%s --%s", c.CommandPath(), f.Name)
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// TestKernelFlagsWhereRead: the flags that say where a kernel's symbols
// are appear on the commands that read them, and on no other.
func TestKernelFlagsWhereRead(t *testing.T) {
	root := newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, nil)
	readers := map[string]bool{"klpresolve": true, "klpresolve resolve": true, "klpresolve check": true, "klpresolve link": true,
		"klpresolve lookup": true, "klpresolve addr": true, "klpresolve objects": true, "klpresolve snapshot": true, "klpresolve convert": true,
		"klpresolve bench kallsyms": true, "klpresolve bench resolve": true, "klpresolve bench image": true, "klpresolve bench proc": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range []string{"kallsyms", "kernel-version", "lto", "max-symbols"} {
			assert.Equal(t, readers[c.CommandPath()], c.Flags().Lookup(name) != nil, "%s --%s", c.CommandPath(), name)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	code, _, errs := runCLI(t, "info", fixture("livepatch-sample.ko"), "--kallsyms", "k")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "unknown flag: --kallsyms")
}
