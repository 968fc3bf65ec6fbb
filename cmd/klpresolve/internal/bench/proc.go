// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ProcOptions configures Proc.
type ProcOptions struct {
	// Tool is the command measured (program and arguments), run with its
	// output to /dev/null; Proc's caller passes its own executable with
	// "objects --kallsyms /proc/kallsyms".
	Tool []string
	// Reference is the command it is compared with; default
	// "cat /proc/kallsyms".
	Reference []string
	// Rounds: runs of each command, taking turns, after two of each to
	// warm up (default 30).
	Rounds int
	// Input, when set, is the file the tool reads: its size (counted by
	// reading it, as /proc files say 0) is reported beside the tool's
	// peak resident memory.
	Input string
}

// Proc times whole processes, as hyperfine does: the tool and the
// reference (by default a one-shot index of /proc/kallsyms against cat of
// the same file), taking turns, each from its start to its exit. The
// figures are the minimum, the first quartile and the median of each
// side and their ratios; on a shared VM single runs swing by a third, and
// the minimum and the quartile are the repeatable ones. A run that fails
// is an error: a tool that exits early would look fast.
func Proc(o ProcOptions) (*Report, error) {
	if len(o.Tool) == 0 {
		return nil, errors.New("no tool to measure")
	}
	ref := o.Reference
	if len(ref) == 0 {
		ref = []string{"cat", "/proc/kallsyms"}
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = 30
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	var rss int64 // the tool's largest peak resident set, in bytes
	run := func(argv []string, tool bool) (time.Duration, error) {
		start := time.Now()
		ps, err := runCommand(argv, null)
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if tool {
			rss = max(rss, maxRSS(ps))
		}
		return d, nil
	}
	d, err := turns(rounds, 2,
		func() (time.Duration, error) { return run(o.Tool, true) },
		func() (time.Duration, error) { return run(ref, false) })
	if err != nil {
		return nil, err
	}
	times, base := d[0], d[1]
	tool := strings.Join(append([]string{filepath.Base(o.Tool[0])}, o.Tool[1:]...), " ")
	rep := newProcessReport("proc", tool)
	rep.add("rounds", float64(rounds), "runs", "of each, taking turns")
	name := strings.Join(ref, " ")
	for _, q := range quantiles {
		rep.add("tool_"+q.name+"_ms", ms(at(times, q.q)), "ms", "")
		rep.add("reference_"+q.name+"_ms", ms(at(base, q.q)), "ms", name)
		name, r := "tool_vs_reference_"+q.name, ratio(at(times, q.q), at(base, q.q))
		if q.name == "median" {
			rep.addTarget(name, r, "x", "<=", 1.2, "for objects --kallsyms /proc/kallsyms against cat")
		} else {
			rep.add(name, r, "x", "")
		}
	}
	if rss > 0 {
		rep.add("tool_max_rss_bytes", float64(rss), "bytes", "the largest peak resident set of a run (getrusage)")
	}
	if o.Input != "" {
		f, err := os.Open(o.Input)
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Input, err)
		}
		rep.add("input_bytes", float64(n), "bytes", "")
		if rss > 0 && n > 0 {
			rep.add("tool_max_rss_vs_input", float64(rss)/float64(n), "x", "the whole process: runtime, binary and index")
		}
	}
	return rep, nil
}
