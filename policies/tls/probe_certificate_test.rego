package gpuhost.tls.probe_certificate_test

import data.gpuhost.tls.probe_certificate as check

params := {"tls_cert_min_days": 30}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

good_cert := {
	"subject": "CN=node", "issuer": "CN=CA", "not_after": "2027-01-01T00:00:00Z", "seconds_left": 31536000, "key_type": "EC", "key_bits": 256,
	"signature_algorithm": "ECDSA-SHA256", "sans": ["node"], "self_signed": false,
}

probe(addr, loopback, cert) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": false, "tls13_accepted": true, "weak_suites": [], "certificate": cert,
}

test_pass_good_certificate if {
	f := facts([probe("10.0.0.5:443", false, good_cert), {
		"address": "10.0.0.5:8443", "loopback": false, "tls10_accepted": false, "tls11_accepted": false,
		"tls12_accepted": false, "tls13_accepted": true, "weak_suites": [],
	}])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_fail_every_problem if {
	bad := {
		"subject": "CN=old", "issuer": "CN=old", "not_after": "2025-12-01T00:00:00Z", "seconds_left": -2678400, "key_type": "RSA", "key_bits": 1024,
		"signature_algorithm": "SHA1-RSA", "sans": [], "self_signed": true,
	}
	check.deny == {
		`10.0.0.5:443: certificate "CN=old" expired on 2025-12-01T00:00:00Z`,
		`10.0.0.5:443: certificate "CN=old" is self-signed on a non-loopback address`,
		`10.0.0.5:443: certificate "CN=old" has a 1024-bit RSA key; want 2048 or more`,
		`10.0.0.5:443: certificate "CN=old" is signed with SHA1-RSA`,
		`10.0.0.5:443: certificate "CN=old" has no subject alternative name, which clients need to match a host`,
	} with input as facts([probe("10.0.0.5:443", false, bad)]) with data.gpuhost.params as params
}

test_fail_expiring_and_small_ec if {
	soon := object.union(good_cert, {"not_after": "2026-01-20T00:00:00Z", "seconds_left": 1641600, "key_bits": 224})
	check.deny == {
		`0.0.0.0:443: certificate "CN=node" expires on 2026-01-20T00:00:00Z, within tls_cert_min_days (30)`,
		`0.0.0.0:443: certificate "CN=node" has a 224-bit EC key; want 256 or more`,
	} with input as facts([probe("0.0.0.0:443", false, soon)]) with data.gpuhost.params as params
	check.deny == {`0.0.0.0:443: certificate "CN=node" has a 224-bit EC key; want 256 or more`} with input as facts([probe("0.0.0.0:443", false, soon)])
		with data.gpuhost.params as {"tls_cert_min_days": 10}
}

test_loopback_left_to_the_loopback_check if {
	check.deny == set() with input as facts([probe("127.0.0.1:443", true, object.union(good_cert, {"key_bits": 224}))])
		with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter tls_cert_min_days is not set"} with input as facts([probe("10.0.0.5:443", false, good_cert)])
		with data.gpuhost.params as {}
}

test_error_when_unreachable if {
	p := object.union(probe("10.0.0.5:8080", false, good_cert), {
		"tls13_accepted": false, "unreachable": true, "connections": 1,
		"error": "filtered: the TCP connect got no answer within 2s",
	})
	f := facts([object.remove(p, ["certificate"])])
	check.error == {"10.0.0.5:8080 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as f
		with data.gpuhost.params as params
}

test_fail_starttls_self_signed if {
	p := object.union(probe("0.0.0.0:143", false, object.union(good_cert, {"self_signed": true})), {"starttls": "imap"})
	check.deny == {`0.0.0.0:143 (imap STARTTLS): certificate "CN=node" is self-signed on a non-loopback address`} with input as facts([p])
		with data.gpuhost.params as params
}
