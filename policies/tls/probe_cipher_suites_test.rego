package gpuhost.tls.probe_cipher_suites_test

import data.gpuhost.tls.probe_cipher_suites as check

allow12 := {"weak_tls_protocols": ["SSLv3", "TLSv1", "TLSv1.1"]}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

probe(addr, loopback, suites) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": true, "tls13_accepted": true, "weak_suites": suites,
}

test_pass_aead_only if {
	check.deny == set() with input as facts([probe("10.0.0.5:443", false, [])]) with data.gpuhost.params as allow12
	check.skip == set() with input as facts([probe("10.0.0.5:443", false, [])]) with data.gpuhost.params as allow12
}

test_fail_weak_suites if {
	f := facts([
		probe("10.0.0.5:443", false, ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_GCM_SHA384"]),
		probe("127.0.0.1:9443", true, ["TLS_RSA_WITH_AES_256_GCM_SHA384"]),
	])
	check.deny == {
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: CBC with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_RSA_WITH_AES_128_CBC_SHA: no forward secrecy (static RSA key exchange)",
		"10.0.0.5:443 accepts TLS_RSA_WITH_AES_128_CBC_SHA: CBC with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_RSA_WITH_AES_256_GCM_SHA384: no forward secrecy (static RSA key exchange)",
	} with input as f with data.gpuhost.params as allow12
}

test_skip_when_tls12_is_weak if {
	f := facts([probe("10.0.0.5:443", false, ["TLS_RSA_WITH_AES_128_CBC_SHA"])])
	check.skip == {"TLSv1.2 is in weak_tls_protocols: GH-TLS-003 fails every port that accepts it"} with input as f
		with data.gpuhost.params.weak_tls_protocols as ["TLSv1.2"]
}
