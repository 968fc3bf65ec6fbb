// SPDX-License-Identifier: GPL-2.0-only

package kallsyms

import (
	"encoding/binary"
	"math/bits"
)

// XXH64's primes (xxhash.h).
const (
	prime1 uint64 = 11400714785074694791
	prime2 uint64 = 14029467366897019727
	prime3 uint64 = 1609587929392839161
	prime4 uint64 = 9650029242287828579
	prime5 uint64 = 2870177450012600261
)

// hashShort is xxhash.Sum64(b[:n]) for n < 32, seed 0, without a branch:
// b must have 32 readable bytes. XXH64 hashes a short input in steps of
// 8, 4 and 1 bytes, as many of each as its length asks; this takes every
// possible step and keeps a step's result only where the length asks for
// it (conditional moves). A branch per step mispredicted on most names,
// and each misprediction threw away the work already started on the next
// lines; without them, the hashes of consecutive names overlap.
func hashShort(b []byte, n int) uint64 {
	_ = b[31]
	nw := n >> 3
	h := prime5 + uint64(n)
	h1 := word8(h, binary.LittleEndian.Uint64(b))
	if nw > 0 {
		h = h1
	}
	h2 := word8(h, binary.LittleEndian.Uint64(b[8:]))
	if nw > 1 {
		h = h2
	}
	h3 := word8(h, binary.LittleEndian.Uint64(b[16:]))
	if nw > 2 {
		h = h3
	}
	off := nw << 3
	r := n & 7
	h4 := bits.RotateLeft64(h^uint64(binary.LittleEndian.Uint32(b[off:]))*prime1, 23)*prime2 + prime3
	if r >= 4 {
		h = h4
	}
	off += r &^ 3
	t := r & 3
	h5 := byte1(h, b[off])
	if t > 0 {
		h = h5
	}
	h6 := byte1(h, b[off+1])
	if t > 1 {
		h = h6
	}
	h7 := byte1(h, b[off+2])
	if t > 2 {
		h = h7
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

// word8 is XXH64's step for 8 bytes of a short input.
func word8(h, w uint64) uint64 {
	k := bits.RotateLeft64(w*prime2, 31) * prime1
	return bits.RotateLeft64(h^k, 27)*prime1 + prime4
}

// byte1 is XXH64's step for 1 byte.
func byte1(h uint64, c byte) uint64 {
	return bits.RotateLeft64(h^uint64(c)*prime5, 11) * prime1
}
