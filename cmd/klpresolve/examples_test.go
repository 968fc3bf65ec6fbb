// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleCommands are the klpresolve command lines of an Example: lines
// joined where they end in a backslash, comments left out, each cut at
// a pipe or a redirection and split into words (single quotes kept
// together).
func exampleCommands(example string) [][]string {
	var out [][]string
	example = strings.ReplaceAll(example, "\\\n", " ")
	for _, line := range strings.Split(example, "\n") {
		_, cmd, ok := strings.Cut(line, "klpresolve ")
		if !ok || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if i := strings.IndexAny(cmd, "|<>"); i >= 0 {
			cmd = cmd[:i]
		}
		var words []string
		for i, part := range strings.Split(cmd, "'") {
			if i%2 == 1 { // quoted
				words = append(words, part)
				continue
			}
			words = append(words, strings.Fields(part)...)
		}
		out = append(out, words)
	}
	return out
}

// Every command shows examples in its --help, and each example is a
// command line klpresolve accepts: its command exists, its flags parse,
// and its arguments are as many as the command takes.
func TestExamples(t *testing.T) {
	root := newRoot(strings.NewReader(""), io.Discard, io.Discard, nil)
	var cmds []*cobra.Command
	cmds = append(cmds, root)
	for _, c := range root.Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			cmds = append(cmds, c)
		}
	}
	n := 0
	for _, c := range cmds {
		require.NotEmpty(t, c.Example, "%s has no examples", c.CommandPath())
		lines := exampleCommands(c.Example)
		require.NotEmpty(t, lines, "%s: no klpresolve command line in its examples", c.CommandPath())
		for _, args := range lines {
			fresh := newRoot(strings.NewReader(""), io.Discard, io.Discard, nil)
			found, rest, err := fresh.Find(args)
			require.NoError(t, err, "%q", args)
			if c != root {
				assert.True(t, found == fresh.Commands()[indexOf(fresh, c.Name())] || found.HasParent() && found.Parent().Name() == c.Name(),
					"%s's example %q runs %s", c.CommandPath(), args, found.CommandPath())
			}
			require.NoError(t, found.ParseFlags(rest), "%q", args)
			if found.Args != nil {
				require.NoError(t, found.Args(found, found.Flags().Args()), "%q", args)
			}
			n++
		}
	}
	t.Logf("%d example command lines", n)
	assert.Greater(t, n, 20)
}

func indexOf(root *cobra.Command, name string) int {
	for i, c := range root.Commands() {
		if c.Name() == name {
			return i
		}
	}
	return -1
}
