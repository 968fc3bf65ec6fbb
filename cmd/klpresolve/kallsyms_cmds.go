// SPDX-License-Identifier: GPL-2.0-only

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/klpresolve/klpresolve/ftrace"
	"github.com/klpresolve/klpresolve/kallsyms"
)

func newLookupCmd(a *app) *cobra.Command {
	var format, ftracePath string
	c := &cobra.Command{
		Use:   "lookup SPEC...|-",
		Short: "Resolve [object:]name[,sympos] specs with livepatch's rules",
		Example: `  klpresolve lookup vfs_read type_show,3 ext4:ext4_iget \
    --kallsyms System.map-6.1.0-57-amd64
  # A list, one spec a line (# comments), as JSON
  klpresolve lookup - --format json < specs.txt
  # Can livepatch patch them? (the ftrace call sites of the kernel's vmlinux)
  klpresolve lookup vfs_read tracing_on --kallsyms System.map-6.1.0-57-amd64 \
    --ftrace /boot/vmlinuz-6.1.0-57-amd64`,
		Long: `Resolves each SPEC = [object:]name[,sympos] as klp_find_object_symbol() would:
no object (or vmlinux) means vmlinux; sympos 0 (the default) means the name must be
unique in its object; N means the N-th occurrence in kallsyms order. "-" reads the
specs from standard input, separated by blanks or line ends; a line starting with #
is a comment. With --ftrace, each symbol found is also said to have an ftrace call site
or not, which livepatch needs to patch it as a function (klp_patch_func()).
Exit status 0 when every spec resolves, 1 when any does not.`,
		Args: needArgs(1, -1, "one or more SPECs, [object:]name[,sympos] (- reads them from standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			args, err := a.argsOrStdin(args, "specs", nil) // a bad spec is its own row
			if err != nil {
				return err
			}
			ix, err := a.openIndex()
			if err != nil {
				return err
			}
			var sites *ftrace.Sites
			if ftracePath != "" {
				if sites, err = ftrace.Open(ftracePath, ix); err != nil {
					return &exitError{exitUsage, fmt.Errorf("--ftrace: %w", err)}
				}
			}
			type result struct {
				Spec    string  `json:"spec"`
				Object  string  `json:"object"`
				Name    string  `json:"name"`
				Sympos  uint64  `json:"sympos"`
				Address *string `json:"address"`
				Type    *string `json:"type"`
				Error   *string `json:"error"`
				// Kind: "found", kallsyms.LookupError.KindName, or
				// "bad_spec".
				Kind string `json:"kind"`
				// Ftrace (with --ftrace): "traceable", "not traceable" or
				// "unknown" (ftrace.Verdict).
				Ftrace string `json:"ftrace,omitempty"`
			}
			var out []result
			failed := false
			for _, arg := range args {
				r := result{Spec: arg, Kind: "found"}
				spec, err := kallsyms.ParseSpec(arg)
				var s kallsyms.Symbol
				if err == nil {
					r.Object, r.Name, r.Sympos = spec.Object, spec.Name, spec.Pos
					s, err = ix.LookupListed(spec.Object, spec.Name, spec.Pos)
				}
				if err != nil {
					failed = true
					msg := err.Error()
					if errors.Is(err, kallsyms.ErrNotFound) && (spec.Object == "" || spec.Object == kallsyms.Vmlinux) && !ix.ListsData() {
						// The main job says why, and so does lookup.
						msg += " " + codeOnlyNote(ix.Source())
					}
					r.Error, r.Kind = &msg, "bad_spec"
					var le *kallsyms.LookupError
					if errors.As(err, &le) {
						r.Kind = le.KindName()
					}
					err = errors.New(msg)
				} else {
					addr, typ := fmt.Sprintf("%#x", s.Address), string(s.Type)
					r.Address, r.Type = &addr, &typ
					if sites != nil {
						r.Ftrace = sites.Function(s).String()
					}
				}
				out = append(out, r)
				if format == "text" {
					if err != nil {
						fmt.Fprintf(a.stdout, "%s: error: %v\n", arg, err)
					} else {
						fmt.Fprintf(a.stdout, "%s: %#x %c %s position %d%s\n", arg, s.Address, s.Type, s.Object, s.Pos, traceNote(sites, s))
					}
				}
			}
			return finish(a, format, out, failed)
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	c.Flags().StringVar(&ftracePath, "ftrace", "", "the kernel's ftrace call sites: say whether livepatch can patch each")
	return c
}

// traceNote is a lookup's text for what the call sites say of s ("" without).
func traceNote(sites *ftrace.Sites, s kallsyms.Symbol) string {
	if sites == nil {
		return ""
	}
	switch sites.Function(s) {
	case ftrace.Traceable:
		return "; has an ftrace call site"
	case ftrace.NotTraceable:
		return "; no ftrace call site: livepatch cannot patch it"
	}
	return "; ftrace call site unknown (" + sites.Source() + " cannot tell)"
}

// argsOrStdin returns args with each "-" replaced by the items of standard
// input (readList). what names them in the error when the symbols come
// from standard input too.
func (a *app) argsOrStdin(args []string, what string, check func(string) error) ([]string, error) {
	var out []string
	read := false
	for _, arg := range args {
		if arg != "-" {
			out = append(out, arg)
			continue
		}
		if a.kallsymsPath() == "-" {
			return nil, &exitError{exitUsage, fmt.Errorf("standard input cannot hold both the symbols (--kallsyms -) and the %s (-)", what)}
		}
		if read {
			continue // one stream: a second "-" finds it read
		}
		read = true
		items, err := readListChecked("<stdin>", a.stdin, check)
		if err != nil {
			return nil, &exitError{exitUsage, err}
		}
		out = append(out, items...)
	}
	return out, nil
}

// parseHex reads an address as kallsyms and oopses print it: hex, with or
// without 0x (or 0X). Blanks around a pasted address are not part of it.
func parseHex(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "0x"), 16, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("address %q does not fit in 64 bits", s)
	case err != nil:
		return 0, fmt.Errorf("address %q is not hex", s)
	}
	return v, nil
}

// maxListLine bounds a line of a list of specs or addresses: a spec is at
// most a module name, a 511-byte symbol name and a position, and a line of
// a megabyte is no list (/dev/zero given by mistake, a binary file).
const maxListLine = 1 << 20

// readList reads the specs or addresses of a list from a file or standard
// input (name, for errors): separated by blanks or line ends, with a line
// whose first non-blank is '#' a comment (no symbol name or address starts
// so). It reads line by line, and stops at a line past maxListLine.
func readList(name string, r io.Reader) ([]string, error) { return readListChecked(name, r, nil) }

// readListChecked is readList with each item checked as it is read (check
// may be nil): the first bad one stops the read, naming its line, so a
// stream that holds no such items (yes, /dev/urandom) fails at once.
func readListChecked(name string, r io.Reader, check func(string) error) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxListLine)
	line := 0
	for sc.Scan() {
		line++
		if f := strings.Fields(sc.Text()); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			for _, item := range f {
				if check != nil {
					if err := check(item); err != nil {
						return nil, fmt.Errorf("%s:%d: %w", name, line, err)
					}
				}
			}
			out = append(out, f...)
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, fmt.Errorf("%s:%d: line longer than %d bytes: not a list of specs or addresses", name, line+1, maxListLine)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func newAddrCmd(a *app) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "addr ADDR...|-",
		Short: "Name each address: symbol+offset/size [object]",
		Example: `  klpresolve addr 0xffffffff813669e0 0xffffffffc0350690
  # Every kernel address in an oops
  grep -o 'ffffffff[0-9a-f]\{8\}' oops.txt |
    klpresolve addr - --kallsyms System.map-6.1.0-57-amd64`,
		Long: `Finds the symbol that contains each ADDR (hex, with or without 0x), as the kernel's
kallsyms_lookup() does: the highest symbol at or below it, the offset into it and the
size up to the next symbol of its object. "-" reads the addresses from standard input,
separated by blanks or line ends, # starting a comment line (grep -o the addresses out
of a log first).
Exit status 0 when every address has a symbol, 1 when any has none.`,
		Args: needArgs(1, -1, "one or more addresses (- reads them from standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			addrs, err := a.argsOrStdin(args, "addresses", func(s string) error { _, err := parseHex(s); return err })
			if err != nil {
				return err
			}
			values := make([]uint64, len(addrs))
			for i, s := range addrs {
				v, err := parseHex(s)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				values[i] = v
			}
			ix, err := a.openIndex()
			if err != nil {
				return err
			}
			type result struct {
				Address string  `json:"address"`
				Symbol  *string `json:"symbol"`
				Object  *string `json:"object"`
				Type    *string `json:"type"`
				Offset  *string `json:"offset"`
				Size    *string `json:"size"`
				Error   *string `json:"error"`
				// Kind: "found", "no_symbol" (below every symbol) or
				// "past_object" (past the last symbol of an object).
				Kind string `json:"kind"`
			}
			out := []result{}
			failed := false
			for _, v := range values {
				r := result{Address: fmt.Sprintf("%#x", v), Kind: "found"}
				info, ok := ix.Addr(v)
				if !ok {
					failed = true
					msg := "no symbol at or below this address"
					r.Kind = "no_symbol"
					if info.Past {
						r.Kind = "past_object"
						where := "vmlinux"
						if info.Object != kallsyms.Vmlinux {
							where = "module " + info.Object
						}
						msg = fmt.Sprintf("in no object: past the last symbol of %s (%s at %#x)", where, info.Name, info.Address)
					}
					r.Error = &msg
					if format == "text" {
						fmt.Fprintf(a.stdout, "%#x: %s\n", v, msg)
					}
				} else {
					typ, off := string(info.Type), fmt.Sprintf("%#x", info.Offset)
					r.Symbol, r.Object, r.Type, r.Offset = &info.Name, &info.Object, &typ, &off
					if info.Size != 0 { // null: not known
						size := fmt.Sprintf("%#x", info.Size)
						r.Size = &size
					}
					if format == "text" {
						fmt.Fprintf(a.stdout, "%#x: %s\n", v, info)
					}
				}
				out = append(out, r)
			}
			return finish(a, format, out, failed)
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return c
}

func newObjectsCmd(a *app) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "objects",
		Short: "List the kernel's objects, with symbol counts and address ranges",
		Example: `  klpresolve objects
  klpresolve objects --kallsyms kernels/host.snap --format json`,
		Args: needArgs(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			ix, err := a.openIndex()
			if err != nil {
				return err
			}
			objs := ix.Objects()
			if format == "json" {
				type o struct {
					Name    string `json:"name"`
					Symbols int    `json:"symbols"`
					Low     string `json:"low"`
					High    string `json:"high"`
					Pseudo  bool   `json:"pseudo"`
				}
				out := struct {
					Objects []o `json:"objects"`
				}{[]o{}}
				for _, x := range objs {
					out.Objects = append(out.Objects, o{x.Name, x.Symbols, fmt.Sprintf("%#x", x.Low), fmt.Sprintf("%#x", x.High), x.Pseudo})
				}
				return writeJSON(a, true, out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "OBJECT\tSYMBOLS\tLOW\tHIGH\t")
			total := 0
			for _, x := range objs {
				name := x.Name
				if x.Pseudo {
					name = "[" + name + "]"
				}
				fmt.Fprintf(tw, "%s\t%d\t%#x\t%#x\t\n", name, x.Symbols, x.Low, x.High)
				total += x.Symbols
			}
			tw.Flush()
			fmt.Fprintf(a.stdout, "%s, %s\n", count(len(objs), "object", "objects"), count(total, "symbol", "symbols"))
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return c
}

func newSnapshotCmd(a *app) *cobra.Command {
	var out string
	var raw bool
	c := &cobra.Command{
		Use:   "snapshot --kallsyms PATH -o FILE",
		Short: "Write a compact snapshot of a kernel's symbols",
		Example: `  # This machine's kernel, for later checks elsewhere
  klpresolve snapshot -o host.snap
  # Another host's, over ssh
  ssh host klpresolve snapshot -o - > kernels/host.snap
  # The form used in place, nothing to decode (three times the size)
  klpresolve snapshot --kallsyms System.map-6.1.0-57-amd64 --raw \
    -o kernels/6.1.0-57.raw`,
		Long: `Writes the index as a snapshot that any --kallsyms flag reads: by default compact
(names and columns in LZ4 blocks, the hash tables packed: 0.4-0.5 of the text), which
loads five to fifteen times faster than the text parses and decodes each chunk of 8 KiB
of names when a lookup first needs it (a microsecond or two each); with --raw the index
as it sits in memory (about 1.2x the text), used in place, nothing left to decode.`,
		Args: needArgs(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{exitUsage, errors.New("snapshot needs -o FILE")}
			}
			ix, err := a.openIndex()
			if err != nil {
				return err
			}
			write, form := ix.WriteSnapshot, "compact"
			if raw {
				write, form = ix.WriteSnapshotRaw, "raw"
			}
			var size int64
			said, err := a.writeOutput(out, func(w io.Writer) error {
				cw := &countingWriter{w: w}
				err := write(cw)
				size = cw.n
				return err
			})
			if errors.Is(err, kallsyms.ErrTooRepetitive) {
				return &exitError{exitUsage, fmt.Errorf("%w: snapshot --raw", err)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(said, "wrote %s: %s, %s, %d bytes (%s)\n", out, count(len(ix.Objects()), "object", "objects"), count(ix.Len(), "symbol", "symbols"), size, form)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "snapshot file to write (atomically); - for standard output")
	c.Flags().BoolVar(&raw, "raw", false, "write the uncompressed form with its hash tables, fastest to load")
	return c
}

// finish ends a command that reports on each of its arguments: the JSON
// array of the reports when that is the format (text was printed as it
// went), then exit status 1 if any failed.
func finish(a *app, format string, out any, failed bool) error {
	if format == "json" {
		doc := struct {
			Results any `json:"results"`
		}{out}
		if err := writeJSON(a, !failed, doc); err != nil {
			return err
		}
	}
	if failed {
		return &exitError{exitFailed, errReported}
	}
	return nil
}

// writeJSON writes v as the command's JSON document (writeDoc), ok its
// verdict: the exit status is 0 when it is true.
func writeJSON(a *app, ok bool, v any) error {
	return writeDoc(a.stdout, a.command, ok, v)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
