// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// hex8 must agree with strconv on every byte value in every position.
func TestHex16(t *testing.T) {
	check := func(s []byte) {
		// Each half of the 16 digits, with valid digits in the other.
		v32, ok := hex16(append([]byte("01234567"), s...))
		v := uint32(v32)
		if ok2 := func() bool { _, ok := hex16(append(append([]byte(nil), s...), "89abcdef"...)); return ok }(); ok2 != ok {
			t.Fatalf("%q: high half %v, low half %v", s, ok2, ok)
		}
		want, err := strconv.ParseUint(string(s), 16, 32)
		if err != nil {
			require.False(t, ok, "%q", s)
			return
		}
		require.True(t, ok, "%q", s)
		require.Equal(t, uint32(want), v, "%q", s)
	}
	for pos := range 8 {
		for c := range 256 {
			s := []byte("0123abcD")
			s[pos] = byte(c)
			check(s)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check([]byte(fmt.Sprintf("%08x", r.Uint32())))
		check([]byte(fmt.Sprintf("%08X", r.Uint32())))
	}
	// The "ffffffff" upper half takes its own path: every byte value in
	// every position of the lower half, and an upper half one byte off.
	for pos := range 8 {
		for c := range 256 {
			s := []byte("ffffffff0123abcD")
			s[8+pos] = byte(c)
			v, ok := hex16(s)
			want, err := strconv.ParseUint(string(s), 16, 64)
			require.Equal(t, err == nil, ok, "%q", s)
			if ok {
				require.Equal(t, want, v, "%q", s)
			}
			s = []byte("ffffffff0123abcD")
			s[pos] = byte(c)
			v, ok = hex16(s)
			want, err = strconv.ParseUint(string(s), 16, 64)
			require.Equal(t, err == nil, ok, "%q", s)
			if ok {
				require.Equal(t, want, v, "%q", s)
			}
		}
	}
	v, ok := hex16([]byte("ffffffff81000000"))
	require.True(t, ok)
	require.Equal(t, uint64(0xffffffff81000000), v)
}

func TestFirstCtl(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x21 + r.IntN(256-0x21))
			if r.IntN(30) == 0 {
				b[i] = byte(r.IntN(0x21))
			}
		}
		want := len(b)
		for i, c := range b {
			if c < 0x21 {
				want = i
				break
			}
		}
		require.Equal(t, want, firstCtl(b), "%q", b)
	}
}

// hex8 refuses a word with any byte that is not a hex digit, whatever the
// carries between neighbouring bytes (two odd bytes at once, every pair of
// positions, values around each boundary and with the high bit set).
func TestHex8Pairs(t *testing.T) {
	odd := []byte{0x00, 0x20, 0x2f, 0x30, 0x39, 0x3a, 0x40, 0x41, 0x46, 0x47, 0x60, 0x61, 0x66, 0x67,
		0x7f, 0x80, 0x9f, 0xaf, 0xb0, 0xb9, 0xba, 0xc6, 0xc7, 0xd0, 0xe6, 0xff}
	for i := range 8 {
		for j := i + 1; j < 8; j++ {
			for _, a := range odd {
				for _, b := range odd {
					s := []byte("3a5F09c7")
					s[i], s[j] = a, b
					want, err := strconv.ParseUint(string(s), 16, 32)
					v, ok := hex8(binary.LittleEndian.Uint64(s))
					require.Equal(t, err == nil, ok, "%q", s)
					if ok {
						require.Equal(t, uint32(want), v, "%q", s)
					}
				}
			}
		}
	}
}

// ctlMask32's lowest set bit is the first byte below 0x21 of 32, and it is
// 0 when there is none; every byte value is tried in every position, after
// and before other control bytes (whose borrows must not move it).
func TestCtlMask32(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		want := 32
		for i, c := range b {
			if c < 0x21 {
				want = i
				break
			}
		}
		m := ctlMask32(b)
		if want == 32 {
			require.Zero(t, m, "%q", b)
		} else {
			require.Equal(t, want, bits.TrailingZeros32(m), "%q", b)
		}
	}
	base := bytes.Repeat([]byte{'a'}, 32)
	for pos := range 32 {
		for c := range 256 {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			check(b)
			if pos > 0 {
				b[pos-1] = 0x20 // a blank before it: its borrow runs upwards
				check(b)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				b[i] = byte(0x21 + r.IntN(0x7f-0x21))
			}
		}
		check(b)
	}
}

// Line counts from the reader's per-piece counts equal a direct count, for
// any piece size and any bounds (the parser asks at line boundaries, but
// the arithmetic must hold anywhere).
func TestWholeInputLines(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		data := make([]byte, r.IntN(5000))
		for i := range data {
			data[i] = 'x'
			if r.IntN(9) == 0 {
				data[i] = '\n'
			}
		}
		piece := 1 + r.IntN(700)
		w := &wholeInput{data: data, piece: piece}
		for i := 0; i*piece < len(data); i++ {
			w.nl = append(w.nl, bytes.Count(data[i*piece:min((i+1)*piece, len(data))], []byte{'\n'}))
		}
		plain := &wholeInput{data: data}
		for range 20 {
			from := r.IntN(len(data) + 1)
			to := from + r.IntN(len(data)-from+1)
			want := bytes.Count(data[from:to], []byte{'\n'})
			if to > from && data[to-1] != '\n' {
				want++
			}
			require.Equal(t, want, w.lines(from, to), "piece %d [%d:%d]", piece, from, to)
			require.Equal(t, want, plain.lines(from, to))
		}
	}
}
