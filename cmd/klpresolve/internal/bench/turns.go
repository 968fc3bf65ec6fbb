// SPDX-License-Identifier: GPL-2.0-only

package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// turns runs each side rounds+warm times, the sides taking turns, and
// returns each side's timings of the last rounds runs, sorted. On a shared
// VM the speed drifts within minutes: taking turns puts both sides under
// the same conditions. The first warm runs of each side fill caches and
// are not kept. The first error ends the measurement.
func turns(rounds, warm int, sides ...func() (time.Duration, error)) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(sides))
	for r := range rounds + warm {
		for i, side := range sides {
			d, err := side()
			if err != nil {
				return nil, err
			}
			if r >= warm {
				out[i] = append(out[i], d)
			}
		}
	}
	for _, d := range out {
		slices.Sort(d)
	}
	return out, nil
}

// quantiles are the figures reported of timings that swing from run to
// run: the minimum and the first quartile are the repeatable ones, the
// median is the typical run.
var quantiles = []struct {
	name string
	q    float64
}{{"min", 0}, {"q1", 0.25}, {"median", 0.5}}

// at is the q-quantile of sorted timings (the nearest rank below).
func at(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }

// runCommand runs argv with its standard output to stdout. A failure is
// an error that names the command and carries what it wrote to standard
// error: a measured command that fails must not pass for a fast one.
func runCommand(argv []string, stdout io.Writer) (*os.ProcessState, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = stdout
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return cmd.ProcessState, nil
}
