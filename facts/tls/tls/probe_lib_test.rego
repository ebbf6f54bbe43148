package gpuhost.tls.probe_lib_test

import data.gpuhost.tls.probe_lib as lib

probe(addr, loopback) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": false, "tls13_accepted": true, "weak_suites": [],
}

test_label_names_loopback if {
	lib.label(probe("127.0.0.1:8443", true)) == "loopback-only 127.0.0.1:8443"
	lib.label(probe("0.0.0.0:8443", false)) == "0.0.0.0:8443"
}

test_errors_split_by_scope if {
	f := {"target": {"kind": "host"}, "tls": {"probes": [
		object.union(probe("127.0.0.1:1", true), {"error": "tls1.2: reset by the peer during the handshake"}),
		probe("10.0.0.5:443", false),
	]}}
	lib.errors(true) == {"loopback-only 127.0.0.1:1 could not be fully probed, so its verdict is unknown: tls1.2: reset by the peer during the handshake"} with input as f
	lib.errors(false) == set() with input as f
}

test_accepted_reads_protocols_or_flags if {
	lib.accepted(object.union(probe("10.0.0.5:443", false), {"protocols": ["SSLv3", "TLSv1.2"]})) == {"SSLv3", "TLSv1.2"}
	lib.accepted(probe("10.0.0.5:443", false)) == {"TLSv1.3"}
	lib.accepted({"address": "10.0.0.5:443", "loopback": false, "weak_suites": []}) == set()
}

test_label_names_starttls if {
	lib.label(object.union(probe("0.0.0.0:25", false), {"starttls": "smtp"})) == "0.0.0.0:25 (smtp STARTTLS)"
	lib.label(object.union(probe("127.0.0.1:143", true), {"starttls": "imap"})) == "loopback-only 127.0.0.1:143 (imap STARTTLS)"
}

# A listener the probe could not connect to is an error of the checks that
# cover it, loopback included, even where the document carries no error
# text.
test_unreachable_is_an_error if {
	filtered := object.union(probe("127.0.0.1:7000", true), {
		"unreachable": true, "tls13_accepted": false,
		"error": "filtered: the TCP connect got no answer within 2s",
	})
	bare := object.union(probe("10.0.0.5:5432", false), {"unreachable": true, "tls13_accepted": false, "starttls": "postgres"})
	f := {"target": {"kind": "host"}, "tls": {"probes": [filtered, bare]}}
	lib.errors(true) == {"loopback-only 127.0.0.1:7000 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as f
	lib.errors(false) == {"10.0.0.5:5432 (postgres STARTTLS) could not be reached, so its verdict is unknown: "} with input as f
}
