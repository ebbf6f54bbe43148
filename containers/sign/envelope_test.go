package sign

import (
	"bytes"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

// FuzzOpenEnvelope: envelopes come from a registry. OpenEnvelope must not
// panic, and must return a payload only for an envelope the key signed
// over exactly that payload and type.
func FuzzOpenEnvelope(f *testing.F) {
	priv, pub := testsign.ECDSAKeyPEM(f, "")
	s, err := LoadPrivateKey(priv, nil)
	if err != nil {
		f.Fatal(err)
	}
	v, err := LoadPublicKey(pub)
	if err != nil {
		f.Fatal(err)
	}
	stmt := []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)
	good, err := dsse.WrapSigner(s, InTotoPayloadType).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		f.Fatal(err)
	}
	other, err := dsse.WrapSigner(s, "text/plain").SignMessage(bytes.NewReader(stmt))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(other)
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"sig":"AAAA"}]}`))
	f.Add([]byte(`{"signatures":[]}`))
	f.Fuzz(func(t *testing.T, env []byte) {
		p, err := OpenEnvelope(v, env)
		if err != nil {
			return
		}
		// Only the seed the key signed can open: a fuzzer cannot forge
		// ECDSA, so any other accepted input is a verification bypass.
		if !bytes.Equal(p, stmt) {
			t.Fatalf("opened an envelope the key did not sign: payload %q", p)
		}
	})
}
