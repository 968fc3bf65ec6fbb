// SPDX-License-Identifier: GPL-2.0-only

package kconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: no input panics; an error is a LineError naming the input;
// a configuration that parses, written back as confdata.c writes it,
// parses to the same options.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("CONFIG_A=y\n# CONFIG_A is not set\n"))
	f.Add([]byte("CONFIG_S=\"a\\\"b\\\\\"\r\n"))
	f.Add([]byte("CONFIG_\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz", strings.NewReader(string(data)))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("error of no documented kind: %v", err)
			}
			return
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(c.values)) {
			v := c.values[name]
			if v != "y" && v != "m" {
				v = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
			}
			fmt.Fprintf(&b, "CONFIG_%s=%s\n", name, v)
		}
		again, err := Parse("again", strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("written back: %v\n%s", err, b.String())
		}
		if !maps.Equal(c.values, again.values) {
			t.Fatalf("written back as\n%s\nparses to %v, not %v", b.String(), again.values, c.values)
		}
	})
}
