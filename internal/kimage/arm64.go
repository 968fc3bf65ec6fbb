// SPDX-License-Identifier: GPL-2.0-only

package kimage

import "bytes"

// arm64's Image header (Documentation/arch/arm64/booting.rst; head.S),
// the Image's first 64 bytes, at _text.
const (
	ARM64HeaderSize = 64
	arm64Flags      = 24 // flags: bit 0 set for a big-endian kernel
	arm64Reserved   = 32 // res2, res3, res4: zero
	arm64Magic      = 56 // "ARM\x64"
	arm64FlagBE     = 1
)

// IsARM64Image: arm64's Image header: its magic at 56, after three zero
// reserved words (which no text, such as a tracefs list, has).
func IsARM64Image(head []byte) bool {
	return len(head) >= ARM64HeaderSize && string(head[arm64Magic:arm64Magic+4]) == "ARM\x64" &&
		bytes.Count(head[arm64Reserved:arm64Magic], []byte{0}) == arm64Magic-arm64Reserved
}

// ARM64BigEndian: the Image header's flags say the kernel is big-endian.
func ARM64BigEndian(head []byte) bool {
	return len(head) >= ARM64HeaderSize && head[arm64Flags]&arm64FlagBE != 0
}
