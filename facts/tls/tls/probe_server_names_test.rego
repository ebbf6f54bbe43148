package gpuhost.tls.probe_server_names_test

import data.gpuhost.tls.probe_server_names as check

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

probe(addr, loopback, views) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": false, "tls13_accepted": true, "protocols": ["TLSv1.3"], "weak_suites": [],
	"views": views,
}

named(name, source, matches) := {
	"server_name": name, "name_source": source, "name_file": "/etc/nginx/sites-enabled/api", "name_line": 4,
	"address": "127.0.0.1:443", "same_as_default": true, "name_matches": matches, "leaf_subject": "CN=node",
}

test_pass_every_name_covered if {
	f := facts([probe("0.0.0.0:443", false, [named("api.example", "nginx", true), named("node.example", "certificate", true)])])
	check.deny == set() with input as f
	check.error == set() with input as f
}

test_fail_name_from_nginx_not_covered if {
	check.deny == {"0.0.0.0:443 for server name api.example sends a certificate (CN=node) whose names do not cover api.example, a name nginx serves TLS under at /etc/nginx/sites-enabled/api:4"} with input as facts([probe("0.0.0.0:443", false, [named("api.example", "nginx", false)])])
}

test_fail_name_from_certificate_not_covered if {
	check.deny == {"0.0.0.0:443 for server name www.example sends a certificate (CN=node) whose names do not cover www.example, a name the certificate sent without a name lists"} with input as facts([probe("0.0.0.0:443", false, [named("www.example", "certificate", false)])])
}

test_loopback_left_to_gh_tls_007 if {
	check.deny == set() with input as facts([probe("127.0.0.1:443", true, [named("api.example", "nginx", false)])])
}

test_error_when_a_view_failed if {
	failed := {"server_name": "api.example", "name_source": "nginx", "address": "127.0.0.1:443", "same_as_default": false, "error": "timed out"}
	check.error == {"0.0.0.0:443 for server name api.example: the certificate could not be fetched, so its verdict is unknown: timed out"} with input as facts([probe("0.0.0.0:443", false, [failed])])
}

test_unreachable_address_is_no_error if {
	refused := {"address": "10.0.0.5:443", "same_as_default": false, "unreachable": true, "error": "connection refused"}
	check.error == set() with input as facts([probe("0.0.0.0:443", false, [refused])])
}

test_skip_offline_and_error_when_unreachable if {
	check.skip == {"no listening TLS port was probed"} with input as facts([])
	filtered := object.union(probe("10.0.0.5:443", false, []), {"unreachable": true, "error": "filtered: the TCP connect got no answer within 2s"})
	check.error == {"10.0.0.5:443 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as facts([filtered])
}
