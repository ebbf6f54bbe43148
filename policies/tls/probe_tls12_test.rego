package gpuhost.tls.probe_tls12_test

import data.gpuhost.tls.probe_tls12 as check

params := {"weak_tls_protocols": ["SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"]}

facts(probes) := {"target": {"kind": "host"}, "tls": {"nginx": [], "probes": probes}}

test_pass_tls13_only if {
	f := facts([
		{"address": "10.0.0.5:443", "tls12_accepted": false, "tls13_accepted": true},
		{"address": "10.0.0.5:9443", "tls12_accepted": false, "tls13_accepted": false, "error": "not TLS"},
	])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_tls12_accepted if {
	f := facts([
		{"address": "10.0.0.5:443", "tls12_accepted": true, "tls13_accepted": true},
		{"address": "[::]:8443", "tls12_accepted": true, "tls13_accepted": false},
		{"address": "10.0.0.5:9443", "tls12_accepted": false, "tls13_accepted": true},
	])
	check.deny == {"10.0.0.5:443 accepts a TLS 1.2 handshake", "[::]:8443 accepts a TLS 1.2 handshake"} with input as f
		with data.gpuhost.params as params
}

test_skip_offline if {
	check.skip == {"TLS probes need a live host; target kind is image", "no listening TLS port was probed"} with input as {"target": {"kind": "image"}}
		with data.gpuhost.params as params
}

test_skip_no_probes if {
	check.skip == {"no listening TLS port was probed"} with input as facts([]) with data.gpuhost.params as params
}

test_skip_when_site_allows_tls12 if {
	f := facts([{"address": "10.0.0.5:443", "tls12_accepted": true, "tls13_accepted": true}])
	check.skip == {"TLSv1.2 is not in weak_tls_protocols"} with input as f with data.gpuhost.params as {"weak_tls_protocols": ["TLSv1.1"]}
	check.deny == set() with input as f with data.gpuhost.params as {"weak_tls_protocols": ["TLSv1.1"]}
}
