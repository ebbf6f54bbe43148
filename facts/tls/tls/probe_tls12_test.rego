package gpuhost.tls.probe_tls12_test

import data.gpuhost.tls.probe_tls12 as check

params := {"weak_tls_protocols": ["SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"]}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

probe(addr, loopback, v12, v13) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": v12, "tls13_accepted": v13, "weak_suites": [],
}

test_pass_tls13_only if {
	f := facts([probe("10.0.0.5:443", false, false, true)])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_fail_tls12_accepted if {
	f := facts([
		probe("10.0.0.5:443", false, true, true),
		probe("[::]:8443", false, true, false),
		probe("10.0.0.5:9443", false, false, true),
		probe("127.0.0.1:8443", true, true, true),
	])
	check.deny == {"10.0.0.5:443 accepts a TLS 1.2 handshake", "[::]:8443 accepts a TLS 1.2 handshake"} with input as f
		with data.gpuhost.params as params
}

test_error_when_a_listener_timed_out if {
	timed_out := object.union(probe("10.0.0.5:443", false, true, false), {"error": "tls1.3: timed out: connected, but no ServerHello within 2s"})
	f := facts([timed_out, object.union(probe("127.0.0.1:9000", true, false, false), {"error": "tls1.2: reset by the peer during the handshake"})])
	check.error == {"10.0.0.5:443 could not be fully probed, so its verdict is unknown: tls1.3: timed out: connected, but no ServerHello within 2s"} with input as f
		with data.gpuhost.params as params
	check.deny == {"10.0.0.5:443 accepts a TLS 1.2 handshake"} with input as f with data.gpuhost.params as params
}

test_skip_offline if {
	check.skip == {"TLS probes need a live host; target kind is image", "no listening TLS port was probed"} with input as {"target": {"kind": "image"}}
		with data.gpuhost.params as params
}

test_skip_no_probes if {
	check.skip == {"no listening TLS port was probed"} with input as facts([]) with data.gpuhost.params as params
}

test_skip_when_site_allows_tls12 if {
	f := facts([probe("10.0.0.5:443", false, true, true)])
	check.skip == {"TLSv1.2 is not in weak_tls_protocols"} with input as f with data.gpuhost.params as {"weak_tls_protocols": ["TLSv1.1"]}
	check.deny == set() with input as f with data.gpuhost.params as {"weak_tls_protocols": ["TLSv1.1"]}
}

# A DHE-only TLS 1.2 port, which Go's client never saw: the enumerating
# probe's protocols say it accepts TLS 1.2.
test_fail_enumerated_tls12 if {
	dhe := object.union(probe("10.0.0.5:443", false, true, false), {
		"protocols": ["TLSv1.2"], "connections": 7, "suites": [{
			"name": "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "protocol": "TLSv1.2", "key_exchange": "DHE_RSA",
			"cipher": "AES_128_GCM", "mac": "AEAD", "forward_secrecy": true, "aead": true, "cbc": false, "rc4": false,
			"triple_des": false, "des": false, "null": false, "anonymous": false, "export": false,
		}],
	})
	check.deny == {"10.0.0.5:443 accepts a TLS 1.2 handshake"} with input as facts([dhe]) with data.gpuhost.params as params
	only13 := object.union(probe("10.0.0.5:8443", false, false, true), {"protocols": ["TLSv1.3"], "groups": ["ffdhe2048"], "connections": 10})
	check.deny == set() with input as facts([only13]) with data.gpuhost.params as params
}

unreachable(addr, loopback) := object.union(probe(addr, loopback, false, false), {
	"unreachable": true, "connections": 1,
	"error": "filtered: the TCP connect got no answer within 2s",
})

test_error_when_a_listener_is_unreachable if {
	f := facts([unreachable("10.0.0.5:8080", false), unreachable("127.0.0.1:7000", true)])
	check.error == {"10.0.0.5:8080 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as f
		with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_starttls_listener if {
	smtp := object.union(probe("0.0.0.0:25", false, true, false), {"starttls": "smtp", "protocols": ["TLSv1.2"], "connections": 20})
	check.deny == {"0.0.0.0:25 (smtp STARTTLS) accepts a TLS 1.2 handshake"} with input as facts([smtp]) with data.gpuhost.params as params
}
