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
// a gzip, zstd, xz or bzip2 stream, or a line of kallsyms or System.map
// text ("ADDRESS TYPE NAME[\t[module]]"; blank lines before it are
// skipped). It is for picking the symbol lists out of a folder that holds
// other files too (a README, a checksum list); it looks no further than
// the first line, so a file it accepts may still fail to parse.
func Sniff(head []byte) bool {
	if isSnapshot(head) || input.Detect(head) != input.None {
		return true
	}
	for len(head) > 0 {
		line, rest, complete := bytes.Cut(head, []byte("\n"))
		if !complete && len(head) >= SniffLen {
			// A line cut short: its name is shorter than SniffLen, but
			// a "[module]" after it may not be; what comes before the
			// module must parse (the blanks before the bracket are a
			// separator; a CR there is part of the name, as the parser
			// takes it mid-line).
			i := bytes.IndexByte(line, '[')
			if i < 0 {
				return false
			}
			line = bytes.TrimRight(line[:i], " \t")
		} else {
			line = bytes.TrimRight(line, " \t\r") // the line's end, as the parser trims it
		}
		if len(line) > 0 {
			_, _, _, _, _, msg := parseLine(line)
			return msg == ""
		}
		head = rest
	}
	return false
}
