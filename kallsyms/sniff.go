// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"

	"github.com/klpresolve/klpresolve/internal/input"
)

// SniffLen is how many bytes of a file Sniff needs at most: a line of a
// symbol list is shorter (its name is under KSYMNameLen bytes).
const SniffLen = 1024

// Sniff reports whether head, the first bytes of a file (SniffLen, or the
// whole file when shorter), begins as a file that Open reads: a snapshot,
// a gzip, zstd, xz or bzip2 stream, a kernel image, or a line of kallsyms or System.map
// text ("ADDRESS TYPE NAME[\t[module]]"; blank lines before it are
// skipped, and a head of blank lines alone is taken when the file goes
// on past it). It is for picking the symbol lists out of a folder that holds
// other files too (a README, a checksum list); it looks no further than
// the first line (only at the start of one longer than SniffLen), so a
// file it accepts may still fail to parse, but one that parses it always
// accepts.
func Sniff(head []byte) bool {
	if isSnapshot(head) || input.Detect(head) != input.None || maybeImage(head) {
		return true
	}
	cut := len(head) >= SniffLen // the file goes on past head
	for len(head) > 0 {
		line, rest, complete := bytes.Cut(head, []byte("\n"))
		if !complete && cut {
			// A line cut short: it may run on for long (a module name,
			// or blanks between the fields, have no limit), so only its
			// start is checked: an address, 1 to 16 hex digits, and the
			// blank after it, as every line that parses begins; or
			// blanks alone, which may be a blank line's.
			if len(bytes.TrimLeft(line, " \t\r")) == 0 {
				return true
			}
			k := 0
			for k < len(line) && hexval[line[k]] >= 0 {
				k++
			}
			return k > 0 && k <= 16 && k < len(line) && line[k] == ' '
		}
		line = bytes.TrimRight(line, " \t\r") // the line's end, as the parser trims it
		if len(line) > 0 {
			_, _, _, _, _, msg := parseLine(line)
			return msg == ""
		}
		head = rest
	}
	// Only blank lines: a file that goes on past head may still hold
	// symbols after them, and what parses is never refused.
	return cut
}
