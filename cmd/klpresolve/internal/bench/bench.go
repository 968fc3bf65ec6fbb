// SPDX-License-Identifier: GPL-2.0-only

// Package bench measures klpresolve against the reference algorithms in one
// run and reports the figures and their ratios. "klpresolve bench" prints
// them; the packages' go test -bench benchmarks measure the same pairs.
package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Figure is one measured quantity.
type Figure struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Comment string  `json:"comment,omitempty"`
	// Target is the figure's goal, where it has one, and whether this
	// run met it.
	Target *Target `json:"target,omitempty"`
}

// Target is a figure's goal: Value Op Bound ("<=", ">=", "<", ">" or
// "==") is met.
type Target struct {
	Op    string  `json:"op"`
	Bound float64 `json:"bound"`
	Met   bool    `json:"met"`
}

// String is the target as the text report says it: "<= 2.5: met".
func (t *Target) String() string {
	verdict := "missed"
	if t.Met {
		verdict = "met"
	}
	return fmt.Sprintf("target %s %s: %s", t.Op, strconv.FormatFloat(t.Bound, 'g', -1, 64), verdict)
}

// meets reports whether v meets the target op bound.
func meets(v float64, op string, bound float64) bool {
	switch op {
	case "<=":
		return v <= bound
	case ">=":
		return v >= bound
	case "<":
		return v < bound
	case ">":
		return v > bound
	}
	return v == bound
}

// Report is the result of one benchmark group.
type Report struct {
	Benchmark  string `json:"benchmark"`
	Input      string `json:"input"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// GOGC is the collector's percent the group ran under in this
	// process (runtime/debug.SetGCPercent; -1: off), nil for a group
	// that times other processes (OneShot, Proc), which run under their
	// own.
	GOGC    *int     `json:"gogc,omitempty"`
	Figures []Figure `json:"figures"`
}

// newReport starts the report of a benchmark group run in this process.
func newReport(benchmark, input string) *Report {
	r := newProcessReport(benchmark, input)
	gc := gcPercent()
	r.GOGC = &gc
	return r
}

// newProcessReport starts the report of a group that times fresh
// processes.
func newProcessReport(benchmark, input string) *Report {
	return &Report{Benchmark: benchmark, Input: input, GOMAXPROCS: runtime.GOMAXPROCS(0)}
}

// gcPercent is the collector's current percent (-1: off). runtime/debug
// has no getter: SetGCPercent returns the setting it replaces, which is
// put back at once. (runtime/metrics reads it too, but its package
// initialization costs every klpresolve process 0.06-0.11 ms.)
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func (r *Report) add(name string, v float64, unit, comment string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit, Comment: comment})
}

// addTarget adds a figure with a target, and whether v meets it.
func (r *Report) addTarget(name string, v float64, unit, op string, bound float64, comment string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit, Comment: comment,
		Target: &Target{Op: op, Bound: bound, Met: meets(v, op, bound)}})
}

// Missed lists the figures whose targets the run missed.
func (r *Report) Missed() []string {
	var out []string
	for _, f := range r.Figures {
		if f.Target != nil && !f.Target.Met {
			out = append(out, f.Name)
		}
	}
	return out
}

// WriteText prints r as aligned text.
func (r *Report) WriteText(w io.Writer) {
	gc := ""
	if r.GOGC != nil {
		gc = ", GOGC=" + gogcText(*r.GOGC)
	}
	fmt.Fprintf(w, "%s on %s (GOMAXPROCS=%d%s)\n", r.Benchmark, r.Input, r.GOMAXPROCS, gc)
	for _, f := range r.Figures {
		comment := f.Comment
		if f.Target != nil {
			comment = strings.TrimSuffix(f.Target.String()+"; "+comment, "; ")
		}
		fmt.Fprintf(w, "  %-34s %14.4g %-10s %s\n", f.Name, f.Value, f.Unit, comment)
	}
}

func gogcText(p int) string {
	if p < 0 {
		return "off"
	}
	return strconv.Itoa(p)
}

// nsPerOp runs fn as a benchmark and returns its time per call and its
// allocations per call.
func nsPerOp(fn func(b *testing.B)) (float64, float64) {
	r := testing.Benchmark(fn)
	if r.N == 0 {
		return 0, 0
	}
	// Allocations per op as go test reports them (integer division):
	// MemAllocs counts the whole process, and one stray allocation of
	// the runtime's over millions of ops is not the op's.
	return float64(r.T.Nanoseconds()) / float64(r.N), float64(r.AllocsPerOp())
}

// bestOf runs each benchmark rounds times, the benchmarks taking turns,
// and returns each one's fastest time per op and its allocations per op
// in that run. On a shared VM a burst of noise lands on single runs:
// taking turns and keeping each side's best compares the sides under the
// same conditions (the ratios of one-shot runs swung by 30%).
func bestOf(rounds int, fns ...func(b *testing.B)) (ns, allocs []float64) {
	ns, allocs = make([]float64, len(fns)), make([]float64, len(fns))
	for r := range rounds {
		for i, fn := range fns {
			t, a := nsPerOp(fn)
			if r == 0 || t < ns[i] {
				ns[i], allocs[i] = t, a
			}
		}
	}
	return ns, allocs
}

// minTime runs fn n times and returns the fastest run: whole-file jobs
// are dominated by page faults and scheduling, and the minimum is the
// repeatable figure.
func minTime(n int, fn func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range n {
		runtime.GC()
		t := time.Now()
		fn()
		best = min(best, time.Since(t))
	}
	return best
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
