package gpuhost.tls.probe_legacy_protocols_test

import data.gpuhost.tls.probe_legacy_protocols as check

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

probe(addr, loopback, v10, v11) := {
	"address": addr, "loopback": loopback, "tls10_accepted": v10, "tls11_accepted": v11,
	"tls12_accepted": true, "tls13_accepted": false, "weak_suites": [],
}

test_pass_modern if {
	f := facts([probe("10.0.0.5:443", false, false, false)])
	check.deny == set() with input as f with data.gpuhost.params.weak_tls_protocols as []
	check.skip == set() with input as f with data.gpuhost.params.weak_tls_protocols as []
}

# TLS 1.0 and 1.1 fail even where params allow every version.
test_fail_legacy_whatever_params_allow if {
	f := facts([
		probe("10.0.0.5:443", false, true, true),
		probe("0.0.0.0:8443", false, false, true),
		probe("127.0.0.1:9443", true, true, true),
	])
	check.deny == {
		"10.0.0.5:443 accepts TLS 1.0",
		"10.0.0.5:443 accepts TLS 1.1",
		"0.0.0.0:8443 accepts TLS 1.1",
	} with input as f with data.gpuhost.params.weak_tls_protocols as []
}

test_error_when_filtered if {
	p := object.union(probe("10.0.0.5:443", false, false, false), {"error": "tls1.0: filtered: the TCP connect got no answer within 2s"})
	check.error == {"10.0.0.5:443 could not be fully probed, so its verdict is unknown: tls1.0: filtered: the TCP connect got no answer within 2s"} with input as facts([p])
}

test_skip_offline if {
	check.skip == {"TLS probes need a live host; target kind is rootfs", "no listening TLS port was probed"} with input as {"target": {"kind": "rootfs"}}
}

# The enumerating probe's protocols decide, SSL 3.0 included; the flags of
# older documents are not read once protocols are there.
test_fail_enumerated_protocols if {
	p := object.union(probe("10.0.0.5:443", false, false, false), {"protocols": ["SSLv3", "TLSv1", "TLSv1.2"], "connections": 12})
	check.deny == {"10.0.0.5:443 accepts SSL 3.0", "10.0.0.5:443 accepts TLS 1.0"} with input as facts([p])
		with data.gpuhost.params.weak_tls_protocols as []
	modern := object.union(probe("10.0.0.5:443", false, true, true), {"protocols": ["TLSv1.2", "TLSv1.3"], "connections": 12})
	check.deny == set() with input as facts([modern]) with data.gpuhost.params.weak_tls_protocols as []
}

# A port that accepted nothing is an error naming what was tried, never a
# pass.
test_error_when_nothing_accepted if {
	msg := "no protocol version accepted: SSLv3 to TLSv1.2 were each offered all 331 registered cipher suites, TLSv1.3 its 9 suites and 19 groups; the server answered TLSv1.3 alert handshake_failure"
	p := object.union(probe("10.0.0.5:443", false, false, false), {"tls12_accepted": false, "connections": 5, "error": msg})
	check.error == {sprintf("10.0.0.5:443 could not be fully probed, so its verdict is unknown: %s", [msg])} with input as facts([p])
	check.deny == set() with input as facts([p])
}

test_error_when_unreachable if {
	p := object.union(probe("10.0.0.5:8080", false, false, false), {
		"tls12_accepted": false, "unreachable": true, "connections": 1,
		"error": "connection refused: the listener is gone or refuses this address",
	})
	check.error == {"10.0.0.5:8080 could not be reached, so its verdict is unknown: connection refused: the listener is gone or refuses this address"} with input as facts([p])
	check.deny == set() with input as facts([p])
}

test_fail_starttls_legacy if {
	p := object.union(probe("0.0.0.0:110", false, false, false), {"starttls": "pop3", "protocols": ["TLSv1", "TLSv1.2"], "connections": 30})
	check.deny == {"0.0.0.0:110 (pop3 STARTTLS) accepts TLS 1.0"} with input as facts([p]) with data.gpuhost.params.weak_tls_protocols as []
}
