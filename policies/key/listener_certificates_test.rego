package gpuhost.key.listener_certificates_test

import data.gpuhost.key.listener_certificates as check

probe(addr, loopback, age) := {"address": addr, "loopback": loopback, "error": "", "certificate": {"not_before": "2026-01-01T00:00:00Z", "age_seconds": age}}

test_fresh_certificates_pass if {
	check.deny == set() with input as {"target": {"kind": "host"}, "tls": {"probes": [probe("0.0.0.0:443", false, 30 * 86400)]}}
		with data.gpuhost.params as {}
}

test_old_certificates_fail_loopback_too if {
	check.deny == {
		{"msg": "0.0.0.0:443 presents a certificate issued 91 days ago (not before 2026-01-01T00:00:00Z), past the 90-day rotation", "subject": "0.0.0.0:443"},
		{"msg": "loopback-only 127.0.0.1:9108 presents a certificate issued 400 days ago (not before 2026-01-01T00:00:00Z), past the 90-day rotation", "subject": "127.0.0.1:9108"},
	} with input as {"target": {"kind": "host"}, "tls": {"probes": [probe("0.0.0.0:443", false, 91 * 86400), probe("127.0.0.1:9108", true, 400 * 86400)]}}
		with data.gpuhost.params as {}
}

test_params_set_the_period if {
	count(check.deny) == 1 with input as {"target": {"kind": "host"}, "tls": {"probes": [probe("0.0.0.0:443", false, 31 * 86400)]}}
		with data.gpuhost.params as {"rotation_max_age_days": 30}
}

test_cut_short_is_an_error if {
	p := object.union(probe("127.0.0.1:9108", true, 1), {"error": "timed out"})
	count(check.error) == 1 with input as {"target": {"kind": "host"}, "tls": {"probes": [p]}}
}

test_offline_skips if {
	count(check.skip) > 0 with input as {"target": {"kind": "image"}}
}
