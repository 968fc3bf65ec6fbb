// SPDX-License-Identifier: GPL-2.0-only

package klp

import (
	"encoding/asn1"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/klpresolve/klpresolve/internal/testutil"
)

// signed appends to body what scripts/sign-file appends: the message,
// a struct module_signature of the given fields, and the marker.
func signed(body []byte, msg []byte, fields [8]byte, sigLen uint32) []byte {
	out := append(append([]byte(nil), body...), msg...)
	out = append(out, fields[:]...)
	out = binary.BigEndian.AppendUint32(out, sigLen)
	return append(out, sigMagic...)
}

// The trailer is judged as mod_check_sig() judges it, before any key.
func TestReadSignature(t *testing.T) {
	body := make([]byte, 100)
	msg := make([]byte, 40)
	pkcs7 := [8]byte{0, 0, pkeyIDPKCS7}
	for _, c := range []struct {
		name string
		data []byte
		want *Signature
	}{
		{"unsigned", body, nil},
		{"marker only", []byte(sigMagic), nil},
		{"good", signed(body, msg, pkcs7, 40), &Signature{Bytes: 40}},
		{"sig_len past the module", signed(body, msg, pkcs7, 140), &Signature{
			Problem: "sig_len 140 is not less than the 140 bytes before the module_signature", Fatal: true}},
		{"X.509 id_type", signed(body, msg, [8]byte{0, 0, 1}, 40), &Signature{Bytes: 40,
			Problem: "id_type 1, not PKEY_ID_PKCS7 (2)", Kernel: "module: not signed with expected PKCS#7 message"}},
		{"non-zero hash", signed(body, msg, [8]byte{0, 4, pkeyIDPKCS7}, 40), &Signature{Bytes: 40,
			Problem: "algo, hash, signer_len, key_id_len or padding not zero (00 04 02 00 00 00 00 00)",
			Kernel:  "module: PKCS#7 signature info has unexpected non-zero params", Fatal: true}},
		{"no room", append([]byte("abc"), sigMagic...), &Signature{
			Problem: "the signature marker follows 3 bytes, no room for its 12-byte module_signature", Fatal: true}},
	} {
		assert.Equal(t, c.want, readSignature(c.data), c.name)
	}
	assert.Empty(t, (*Signature)(nil).warning())
	assert.Empty(t, (&Signature{Bytes: 40}).warning())
	assert.Equal(t, `malformed module signature: sig_len 140 is not less than the 140 bytes before the module_signature: every kernel with CONFIG_MODULE_SIG refuses the module, enforcing signatures or not (insmod: Bad message); sign it again with the kernel's scripts/sign-file`,
		readSignature(signed(body, msg, pkcs7, 140)).warning())

	// Open reads it, and warns of a bad one.
	ko, err := readFixture("livepatch-sample.ko")
	require.NoError(t, err)
	m, err := Parse("sample.ko", ko)
	require.NoError(t, err)
	assert.Nil(t, m.Signature)
	m, err = Parse("signed.ko", signed(ko, msg, pkcs7, 40))
	require.NoError(t, err)
	assert.Equal(t, &Signature{Bytes: 40}, m.Signature)
	assert.Empty(t, m.Warnings)
	m, err = Parse("bad.ko", signed(ko, msg, [8]byte{0, 0, pkeyIDPKCS7, 1}, 40))
	require.NoError(t, err)
	require.Len(t, m.Warnings, 1)
	assert.Contains(t, m.Warnings[0], "malformed module signature: algo, hash, signer_len, key_id_len or padding not zero")
}

// Debian signs its modules: every corpus module's trailer reads as a
// PKCS#7 message whose DER encoding spans exactly sig_len bytes.
func TestCorpusSignatures(t *testing.T) {
	testutil.Corpus(t, "amd64/modules") // skips without the corpus
	n := 0
	for _, arch := range []string{"amd64", "arm64", "armhf"} {
		files, _ := filepath.Glob(filepath.Join(testutil.CorpusDir(), arch, "modules", "*.ko"))
		for _, p := range files {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			m, err := Parse(p, data)
			require.NoError(t, err)
			require.NotNil(t, m.Signature, p)
			require.Empty(t, m.Signature.Problem, p)
			end := len(data) - len(sigMagic) - moduleSignatureSize
			msg := data[end-m.Signature.Bytes : end]
			var raw asn1.RawValue
			rest, err := asn1.Unmarshal(msg, &raw)
			require.NoError(t, err, p)
			assert.Empty(t, rest, "%s: the message is exactly sig_len bytes", p)
			assert.Equal(t, asn1.TagSequence, raw.Tag, p)
			var oid asn1.ObjectIdentifier
			_, err = asn1.Unmarshal(raw.Bytes, &oid)
			require.NoError(t, err, p)
			assert.Equal(t, "1.2.840.113549.1.7.2", oid.String(), "%s: PKCS#7 signedData", p)
			n++
		}
	}
	assert.Equal(t, 18, n) // 4 amd64, 8 arm64, 6 armhf
}
