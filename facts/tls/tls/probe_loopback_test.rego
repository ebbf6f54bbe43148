package gpuhost.tls.probe_loopback_test

import data.gpuhost.tls.probe_loopback as check

params := {"weak_tls_protocols": ["TLSv1", "TLSv1.1", "TLSv1.2"], "tls_cert_min_days": 30, "tls_loopback_severity": "low"}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

self_signed := {
	"subject": "CN=sidecar", "issuer": "CN=sidecar", "not_after": "2025-06-01T00:00:00Z", "seconds_left": -18489600, "key_type": "EC", "key_bits": 256,
	"signature_algorithm": "ECDSA-SHA256", "sans": ["localhost"], "self_signed": true,
}

sidecar := {
	"address": "127.0.0.1:15000", "loopback": true, "tls10_accepted": true, "tls11_accepted": false,
	"tls12_accepted": true, "tls13_accepted": true, "weak_suites": ["TLS_RSA_WITH_AES_128_GCM_SHA256"],
	"certificate": self_signed,
}

public := object.union(sidecar, {"address": "0.0.0.0:443", "loopback": false})

test_pass_sound_sidecar if {
	ok := object.union(sidecar, {
		"tls10_accepted": false, "tls12_accepted": false, "weak_suites": [],
		"certificate": object.union(self_signed, {"not_after": "2027-01-01T00:00:00Z", "seconds_left": 31536000}),
	})
	check.deny == set() with input as facts([ok]) with data.gpuhost.params as params
}

# Loopback findings are named as such; self-signing is allowed there, and
# wildcard listeners are left to GH-TLS-003..006.
test_fail_names_loopback if {
	check.deny == {
		"loopback-only 127.0.0.1:15000 accepts TLS 1.0",
		"loopback-only 127.0.0.1:15000 accepts a TLS 1.2 handshake",
		"loopback-only 127.0.0.1:15000: certificate 0 (CN=sidecar): expired on 2025-06-01T00:00:00Z, 214 days before the scan",
	} with input as facts([sidecar, public]) with data.gpuhost.params as params
}

test_fail_suites_where_tls12_allowed if {
	check.deny == {
		"loopback-only 127.0.0.1:15000 accepts TLS 1.0",
		"loopback-only 127.0.0.1:15000 accepts TLS_RSA_WITH_AES_128_GCM_SHA256: no forward secrecy (static RSA key exchange)",
		"loopback-only 127.0.0.1:15000: certificate 0 (CN=sidecar): expired on 2025-06-01T00:00:00Z, 214 days before the scan",
	} with input as facts([sidecar]) with data.gpuhost.params as object.union(params, {"weak_tls_protocols": ["TLSv1"]})
}

# A loopback chain out of order fails here; one no trust store vouches for
# is allowed, as self-signing is.
test_fail_loopback_chain_order_not_trust if {
	leaf := {
		"depth": 0, "subject": "CN=sidecar", "issuer": "CN=Inter", "sha256": "00", "not_before": "2025-12-01T00:00:00Z",
		"not_after": "2027-01-01T00:00:00Z", "age_seconds": 2678400, "not_yet_valid": false, "seconds_left": 31536000,
		"key_type": "EC", "key_bits": 256, "signature_algorithm": "ECDSA-SHA256", "self_signed": false, "is_ca": false,
		"key_usage": [], "ext_key_usage": [], "link": "wrong_issuer",
	}
	other := object.union(leaf, {"depth": 1, "subject": "CN=Other", "issuer": "CN=Private Root", "is_ca": true, "link": "missing"})
	ok := object.union(sidecar, {
		"tls10_accepted": false, "tls12_accepted": false, "weak_suites": [], "protocols": ["TLSv1.3"],
		"certificate": object.union(self_signed, {"not_after": "2027-01-01T00:00:00Z", "seconds_left": 31536000, "self_signed": false}),
		"chain": [leaf, other],
		"verification": {"store": "/etc/ssl/certs/ca-certificates.crt", "verified": false, "error": "x509: certificate signed by unknown authority"},
	})
	check.deny == {"loopback-only 127.0.0.1:15000: certificate 1 (CN=Other) is not the issuer of certificate 0 (CN=sidecar), which names CN=Inter: the chain is out of order or carries a certificate that does not belong"} with input as facts([ok])
		with data.gpuhost.params as params
}

test_error_names_loopback if {
	stalled := object.union(sidecar, {"error": "tls1.3: timed out: connected, but no ServerHello within 2s"})
	check.error == {"loopback-only 127.0.0.1:15000 could not be fully probed, so its verdict is unknown: tls1.3: timed out: connected, but no ServerHello within 2s"} with input as facts([stalled, object.union(public, {"error": "x"})])
		with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter tls_loopback_severity is not set"} with input as facts([]) with data.gpuhost.params as {}
	check.skip == {"no listening TLS port was probed"} with input as facts([]) with data.gpuhost.params as {}
}

# A loopback listener the firewall filters is an error here, never a pass.
test_error_when_loopback_unreachable if {
	filtered := {
		"address": "127.0.0.1:7000", "loopback": true, "unreachable": true, "connections": 1,
		"tls10_accepted": false, "tls11_accepted": false, "tls12_accepted": false, "tls13_accepted": false,
		"weak_suites": [], "error": "filtered: the TCP connect got no answer within 2s",
	}
	check.error == {"loopback-only 127.0.0.1:7000 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as facts([filtered])
		with data.gpuhost.params as params
	check.deny == set() with input as facts([filtered]) with data.gpuhost.params as params
}

test_fail_loopback_starttls if {
	ldap := object.union(sidecar, {"address": "127.0.0.1:389", "starttls": "ldap", "tls12_accepted": false, "certificate": object.union(self_signed, {"not_after": "2027-01-01T00:00:00Z", "seconds_left": 31536000})})
	check.deny == {"loopback-only 127.0.0.1:389 (ldap STARTTLS) accepts TLS 1.0"} with input as facts([ldap]) with data.gpuhost.params as params
}

test_error_when_a_loopback_view_failed if {
	p := object.union(sidecar, {"views": [{"server_name": "sidecar.local", "address": "127.0.0.1:15000", "same_as_default": false, "error": "timed out"}]})
	check.error == {"loopback-only 127.0.0.1:15000 for server name sidecar.local: the certificate could not be fetched, so its verdict is unknown: timed out"} with input as facts([p])
		with data.gpuhost.params as params
}

test_error_when_loopback_stapling_is_unknown if {
	leaf := {"depth": 0, "subject": "CN=sidecar", "must_staple": true}
	p := object.union(sidecar, {"chain": [leaf]})
	"loopback-only 127.0.0.1:15000: certificate 0 (CN=sidecar) carries must-staple, and whether the server staples an OCSP response is unknown: the probe could not ask over the handshake it had to use" in check.error with input as facts([p])
		with data.gpuhost.params as params
}
