// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klpresolve/klpresolve/kallsyms"
)

// OneShotOptions configures OneShot.
type OneShotOptions struct {
	// Self is the command that measures one operation in a fresh process
	// (see Once) and prints its time in nanoseconds; it is run as
	// Self + [op, Input], op being "read" or "open". klpresolve passes its
	// own executable with "bench once", which opens the index with the
	// options of its commands (Options.MapText).
	Self []string
	// Input is the kallsyms or System.map file measured.
	Input string
	// Rounds: runs of each operation, taking turns, after two of each to
	// warm up (default 20).
	Rounds int
}

// OneShot measures reading Input into memory and indexing it the way a
// one-shot run does: each in a fresh process, timed inside it from just
// before the operation to just after (the process's start and exit left
// out). Both sides then fault in the fresh memory they fill, as a
// klpresolve command does: 5.4 MB read into a reused buffer, as Kallsyms'
// in-process read_file_ms mostly is, takes a quarter of the time of the
// same read into new memory. The figures are the minimum, first quartile
// and median of each side and their ratios.
func OneShot(o OneShotOptions) (*Report, error) {
	if len(o.Self) == 0 {
		return nil, errors.New("no command to measure with")
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = 20
	}
	run := func(op string) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			argv := append(append([]string(nil), o.Self...), op, o.Input)
			var out strings.Builder
			if _, err := runCommand(argv, &out); err != nil {
				return 0, err
			}
			ns, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
			if err != nil || ns <= 0 {
				return 0, fmt.Errorf("%s: printed %q, not a time in nanoseconds", strings.Join(argv, " "), clip(out.String()))
			}
			return time.Duration(ns), nil
		}
	}
	d, err := turns(rounds, 2, run("read"), run("open"))
	if err != nil {
		return nil, err
	}
	read, parse := d[0], d[1]
	rep := newProcessReport("kallsyms one-shot", o.Input)
	rep.add("rounds", float64(rounds), "runs", "of each, in fresh processes, taking turns")
	for _, q := range quantiles {
		rep.add("read_file_"+q.name+"_ms", ms(at(read, q.q)), "ms", "os.ReadFile, fresh process")
		rep.add("parse_index_"+q.name+"_ms", ms(at(parse, q.q)), "ms", "kallsyms.Open (MapText, as the CLI), fresh process")
		name, r := "parse_vs_read_"+q.name, ratio(at(parse, q.q), at(read, q.q))
		if q.name == "median" {
			rep.addTarget(name, r, "x", "<=", 2.5, "")
		} else {
			rep.add(name, r, "x", "")
		}
	}
	return rep, nil
}

// Once performs op ("read": os.ReadFile; "open": kallsyms.Open with opts)
// on path and returns its time: the child side of OneShot.
func Once(op, path string, opts kallsyms.Options) (time.Duration, error) {
	var t time.Time
	switch op {
	case "read":
		t = time.Now()
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		d := time.Since(t)
		runtime.KeepAlive(b)
		return d, nil
	case "open":
		t = time.Now()
		ix, err := kallsyms.Open(path, opts)
		if err != nil {
			return 0, err
		}
		d := time.Since(t)
		runtime.KeepAlive(ix)
		return d, nil
	}
	return 0, fmt.Errorf("unknown operation %q (read or open)", op)
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
