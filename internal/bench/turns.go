package bench

import (
	"slices"
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
