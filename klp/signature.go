// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// sigMagic ends a signed module: scripts/sign-file appends the PKCS#7
// message, a struct module_signature and this (MODULE_SIG_STRING).
const sigMagic = "~Module signature appended~\n"

// moduleSignatureSize is sizeof(struct module_signature): algo, hash,
// id_type, signer_len, key_id_len, three bytes of padding, __be32 sig_len.
const moduleSignatureSize = 12

// pkeyIDPKCS7 is PKEY_ID_PKCS7, the only id_type the kernel takes.
const pkeyIDPKCS7 = 2

// Signature is a module's appended signature, as module_sig_check()
// (kernel/module/signing.c) finds it before it verifies anything.
// Whether the key is one the kernel trusts, and whether the digest
// matches, only the kernel can tell.
type Signature struct {
	// Bytes is the length of the PKCS#7 message (sig_len; 0 when it does
	// not fit the file).
	Bytes int
	// Problem is set when mod_check_sig() fails the trailer itself;
	// Kernel is then what the kernel prints, if anything.
	Problem string
	Kernel  string
	// Fatal: the failure is -EBADMSG, which module_sig_check() returns
	// on every kernel with CONFIG_MODULE_SIG, whether it enforces
	// signatures or not. Otherwise (-ENOPKG) the module is refused only
	// where signatures are enforced, as an unsigned one is.
	Fatal bool
}

// readSignature reads data's signature trailer, as module_sig_check()
// and mod_check_sig() do (nil: the module is unsigned).
func readSignature(data []byte) *Signature {
	if len(data) <= len(sigMagic) || !bytes.HasSuffix(data, []byte(sigMagic)) {
		return nil // -ENODATA: "unsigned module"
	}
	modlen := len(data) - len(sigMagic)
	// mod_verify_sig(): no room for the struct is -EBADMSG.
	if modlen <= moduleSignatureSize {
		return &Signature{Problem: fmt.Sprintf("the signature marker follows %d bytes, no room for its %d-byte module_signature", modlen, moduleSignatureSize), Fatal: true}
	}
	ms := data[modlen-moduleSignatureSize : modlen]
	sigLen := binary.BigEndian.Uint32(ms[8:])
	// mod_check_sig(): the message must leave room for the module.
	if uint64(sigLen) >= uint64(modlen-moduleSignatureSize) {
		return &Signature{Problem: fmt.Sprintf("sig_len %d is not less than the %d bytes before the module_signature", sigLen, modlen-moduleSignatureSize), Fatal: true}
	}
	if ms[2] != pkeyIDPKCS7 {
		return &Signature{Bytes: int(sigLen), Problem: fmt.Sprintf("id_type %d, not PKEY_ID_PKCS7 (%d)", ms[2], pkeyIDPKCS7),
			Kernel: "module: not signed with expected PKCS#7 message"}
	}
	if !bytes.Equal(ms[:2], []byte{0, 0}) || !bytes.Equal(ms[3:8], make([]byte, 5)) {
		return &Signature{Bytes: int(sigLen), Problem: fmt.Sprintf("algo, hash, signer_len, key_id_len or padding not zero (% x)", ms[:8]),
			Kernel: "module: PKCS#7 signature info has unexpected non-zero params", Fatal: true}
	}
	return &Signature{Bytes: int(sigLen)}
}

// warning is what Open says of a signature the kernel fails
// before it looks at the key ("" for none).
func (s *Signature) warning() string {
	if s == nil || s.Problem == "" {
		return ""
	}
	kernel := ""
	if s.Kernel != "" {
		kernel = fmt.Sprintf(" (%q)", s.Kernel)
	}
	if s.Fatal {
		return fmt.Sprintf("malformed module signature: %s: every kernel with CONFIG_MODULE_SIG refuses the module, enforcing signatures or not%s (insmod: Bad message); sign it again with the kernel's scripts/sign-file", s.Problem, kernel)
	}
	return fmt.Sprintf("module signature of an unsupported kind: %s: a kernel that enforces module signatures refuses it%s, as it refuses an unsigned one; sign it with the kernel's scripts/sign-file", s.Problem, kernel)
}
