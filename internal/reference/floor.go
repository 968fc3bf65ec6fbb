// SPDX-License-Identifier: GPL-2.0-only

package reference

import (
	"bytes"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// ScanHash is the floor of any index keyed by the xxhash of each name:
// it finds every line of a kallsyms or System.map text and hashes its
// name ("addr type name[\t[module]]"), on workers goroutines, and stores
// nothing. Reading the file and then ScanHash is the least an index
// build can cost. It returns the lines with a name and the XOR of their
// hashes (so that the work cannot be optimised away).
func ScanHash(data []byte, workers int) (lines int, sum uint64) {
	workers = max(workers, 1)
	type part struct {
		lines int
		sum   uint64
	}
	parts := make([]part, workers)
	var wg sync.WaitGroup
	from := 0
	for w := range workers {
		to := len(data)
		if w < workers-1 {
			to = max(from, len(data)*(w+1)/workers)
			if i := bytes.IndexByte(data[to:], '\n'); i >= 0 {
				to += i + 1
			} else {
				to = len(data)
			}
		}
		wg.Add(1)
		go func(b []byte, p *part) {
			defer wg.Done()
			p.lines, p.sum = scanHash(b)
		}(data[from:to], &parts[w])
		from = to
	}
	wg.Wait()
	for _, p := range parts {
		lines += p.lines
		sum ^= p.sum
	}
	return lines, sum
}

func scanHash(b []byte) (lines int, sum uint64) {
	for len(b) > 0 {
		end := bytes.IndexByte(b, '\n')
		line := b
		if end >= 0 {
			line, b = b[:end], b[end+1:]
		} else {
			b = nil
		}
		name := nameOf(line)
		if len(name) == 0 {
			continue
		}
		sum ^= xxhash.Sum64(name)
		lines++
	}
	return lines, sum
}

// nameOf returns the name of a line: after the address's and the type's
// blanks (at 16 and 18 in a 64-bit line), up to a tab (a module's line)
// or a carriage return. It looks at as few bytes as it can.
func nameOf(line []byte) []byte {
	var name []byte
	if len(line) > 19 && line[16] == ' ' && line[18] == ' ' {
		name = line[19:]
	} else {
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return nil
		}
		j := bytes.IndexByte(line[i+1:], ' ')
		if j < 0 {
			return nil
		}
		name = line[i+1+j+1:]
	}
	if n := len(name); n > 0 && name[n-1] == '\r' {
		name = name[:n-1]
	}
	if n := len(name); n > 0 && name[n-1] == ']' {
		if k := bytes.IndexByte(name, '\t'); k >= 0 {
			name = name[:k]
		}
	}
	return name
}
