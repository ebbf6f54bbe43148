package tls

import (
	"slices"
	"testing"
)

func TestClientHelloLayout(t *testing.T) {
	for _, v := range probeVersions {
		t.Run(protocolName(v), func(t *testing.T) {
			h := newHello(v, offeredSuites(v), offeredGroups())
			got := parseClientHello(t, h.record(h.message()))
			wantRecord := versionTLS10
			if v == versionSSL30 {
				wantRecord = versionSSL30
			}
			if got.recordVersion != wantRecord || got.version != min(v, versionTLS12) {
				t.Errorf("record version 0x%04x, hello version 0x%04x", got.recordVersion, got.version)
			}
			wantSuites := offeredSuites(v)
			if v < versionTLS13 {
				wantSuites = append(wantSuites, scsvRenegotiation)
			}
			if !slices.Equal(got.suites, wantSuites) {
				t.Errorf("suites %x, want %x", got.suites, wantSuites)
			}
			sigs := slices.Contains(got.extensions, extSignatureAlgorithms)
			switch {
			case v == versionTLS13:
				if len(got.session) != 32 || !slices.Equal(got.versions, []uint16{versionTLS13}) ||
					!slices.Equal(got.groups, offeredGroups()) || !slices.Contains(got.extensions, extKeyShare) || len(got.shares) != 0 || !sigs {
					t.Errorf("TLS 1.3 hello %+v: want a session ID, supported_versions 1.3 alone, every group, an empty key_share and signatures", got)
				}
			default:
				if len(got.session) != 0 || got.versions != nil || !slices.Equal(got.groups, legacyCurves) || sigs != (v == versionTLS12) {
					t.Errorf("hello %+v: want no session ID, no supported_versions, the legacy curves, signatures only at 1.2", got)
				}
			}
		})
	}
}

// A hello of 256 to 511 bytes hangs some servers: whatever the offer, the
// probe's never is one.
func TestClientHelloNeverHangsF5(t *testing.T) {
	all := offeredSuites(versionTLS12)
	for n := 1; n <= len(all); n++ {
		for _, v := range []uint16{versionTLS12, versionTLS13} {
			h := newHello(v, all[:n], offeredGroups())
			msg := h.message()
			if len(msg) >= 256 && len(msg) < 512 {
				t.Fatalf("%s hello with %d suites is %d bytes", protocolName(v), n, len(msg))
			}
			if got := parseClientHello(t, h.record(msg)); got.size != len(msg) {
				t.Fatalf("record holds %d bytes of a %d-byte hello", got.size, len(msg))
			}
		}
	}
}

func TestClientHelloCarriesItsKeyShare(t *testing.T) {
	h := newHello(versionTLS13, []uint16{0x1301}, []uint16{groupFFDHE2048})
	h.share = &keyShare{group: groupFFDHE2048, data: make([]byte, 256)}
	got := parseClientHello(t, h.record(h.message()))
	if len(got.shares) != 1 || got.shares[0].group != groupFFDHE2048 || len(got.shares[0].data) != 256 {
		t.Errorf("key shares %+v, want one ffdhe2048 share of 256 bytes", got.shares)
	}
}
