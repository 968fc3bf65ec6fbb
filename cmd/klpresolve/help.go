// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/klpresolve/klpresolve/kgen"
)

// fitHelp reflows every command's description (Long) to helpWidth
// columns, so that the text can be written as sentences, not lines. A
// paragraph ends at a blank line; a line that begins with "-" or a space
// (a flag, a list, an indented example) begins a line of its own.
func fitHelp(c *cobra.Command) {
	c.Long = reflow(c.Long, helpWidth)
	for _, s := range c.Commands() {
		fitHelp(s)
	}
}

// reflow wraps text to width columns (see fitHelp). A word longer than
// width stays whole.
func reflow(text string, width int) string {
	var out strings.Builder
	var line strings.Builder
	flush := func() {
		if line.Len() > 0 {
			out.WriteString(line.String())
			out.WriteByte('\n')
			line.Reset()
		}
	}
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			flush()
			out.WriteByte('\n')
			continue
		}
		if strings.HasPrefix(l, "-") || strings.HasPrefix(l, " ") {
			flush()
		}
		if strings.HasPrefix(l, " ") {
			// Indented: kept as it is.
			out.WriteString(l)
			out.WriteByte('\n')
			continue
		}
		for _, w := range strings.Fields(l) {
			if line.Len() > 0 && line.Len()+1+len(w) > width {
				flush()
			}
			if line.Len() > 0 {
				line.WriteByte(' ')
			}
			line.WriteString(w)
		}
	}
	flush()
	return strings.TrimRight(out.String(), "\n")
}

// addCompletion adds cobra's completion command, with descriptions of
// our own that fit helpWidth (cobra's show 82-column lines).
func addCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	long := map[string]string{
		"bash": `Write klpresolve's completion script for bash (it needs the
bash-completion package). To load it in this shell:

  source <(klpresolve completion bash)

To load it in every session, as root:

  klpresolve completion bash > /etc/bash_completion.d/klpresolve`,
		"zsh": `Write klpresolve's completion script for zsh. To load it in every
session (after "autoload -U compinit; compinit" in ~/.zshrc):

  klpresolve completion zsh > "${fpath[1]}/_klpresolve"`,
		"fish": `Write klpresolve's completion script for fish. To load it in every
session:

  klpresolve completion fish > ~/.config/fish/completions/klpresolve.fish`,
		"powershell": `Write klpresolve's completion script for PowerShell. To load it in
this shell:

  klpresolve completion powershell | Out-String | Invoke-Expression`,
	}
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Long = "Write klpresolve's completion script for a shell: see each command's help."
		for _, sh := range c.Commands() {
			if l, ok := long[sh.Name()]; ok {
				sh.Long = l
			}
		}
	}
}

// completeValues makes the shell completion offer the values a flag
// takes, where they are few (--format's, check adding junit;
// --kernel-version's generations; plt's --mode; --page-size's sizes),
// folders for --root, --kernels and --kernel-tree, and module files for
// the commands that read one.
func completeValues(c *cobra.Command) {
	values := func(name string) []string {
		switch name {
		case "format":
			if c.Name() == "check" {
				return []string{"text", "json", "junit"}
			}
			return []string{"text", "json"}
		case "kernel-version":
			var gens []string
			for _, g := range kgen.Known() {
				gens = append(gens, g.String())
			}
			return gens
		case "mode":
			return []string{"kernel", "optimal"}
		case "page-size":
			return []string{"4K", "16K", "64K"}
		}
		return nil
	}
	for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			// (RegisterFlagCompletionFunc fails only for a flag
			// registered twice.)
			if v := values(f.Name); v != nil {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(v, cobra.ShellCompDirectiveNoFileComp))
			}
			switch f.Name {
			case "root", "kernels", "kernel-tree":
				// Folders.
				_ = c.RegisterFlagCompletionFunc(f.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return nil, cobra.ShellCompDirectiveFilterDirs
				})
			}
		})
	}
	// The modules a command reads: .ko files (compressed too) and
	// objects. (Not the main job's: its first argument may be a
	// command, whose names a filter of extensions would swallow.)
	switch c.Name() {
	case "resolve", "info", "link", "plt", "check", "convert":
		c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"ko", "o", "xz", "zst", "gz"}, cobra.ShellCompDirectiveFilterFileExt
		}
	}
	for _, s := range c.Commands() {
		completeValues(s)
	}
}
