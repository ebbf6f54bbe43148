package gpuhost.tls.probe_cipher_suites_test

import data.gpuhost.tls.probe_cipher_suites as check

allow12 := {"weak_tls_protocols": ["SSLv3", "TLSv1", "TLSv1.1"]}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

# A probe written before the probe enumerated: weak_suites alone.
probe(addr, loopback, suites) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": true, "tls13_accepted": true, "weak_suites": suites,
}

# A suite as the enumerating probe records it.
suite(name, protocol, kex, cipher, mac, classes) := object.union(
	{
		"name": name, "protocol": protocol, "key_exchange": kex, "cipher": cipher, "mac": mac,
		"forward_secrecy": false, "aead": false, "cbc": false, "rc4": false, "triple_des": false,
		"des": false, "null": false, "anonymous": false, "export": false,
	},
	{class: true | some class in classes},
)

enumerated(addr, protocols, suites) := {
	"address": addr, "loopback": false, "tls10_accepted": "TLSv1" in protocols, "tls11_accepted": "TLSv1.1" in protocols,
	"tls12_accepted": "TLSv1.2" in protocols, "tls13_accepted": "TLSv1.3" in protocols,
	"protocols": protocols, "suites": suites, "groups": [], "connections": 9, "weak_suites": [],
}

good_suites := [
	suite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLSv1.2", "ECDHE_RSA", "AES_128_GCM", "AEAD", ["forward_secrecy", "aead"]),
	suite("TLS_AES_256_GCM_SHA384", "TLSv1.3", "", "AES_256_GCM", "AEAD", ["forward_secrecy", "aead"]),
]

test_pass_aead_only if {
	check.deny == set() with input as facts([probe("10.0.0.5:443", false, [])]) with data.gpuhost.params as allow12
	check.skip == set() with input as facts([probe("10.0.0.5:443", false, [])]) with data.gpuhost.params as allow12
	f := facts([enumerated("10.0.0.5:443", ["TLSv1.2", "TLSv1.3"], good_suites)])
	check.deny == set() with input as f with data.gpuhost.params as allow12
	check.error == set() with input as f with data.gpuhost.params as allow12
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

# Each class the enumerating probe records fails on its own, naming the
# suite; a suite accepted at two versions is named once.
test_fail_every_class if {
	f := facts([enumerated("10.0.0.5:443", ["TLSv1", "TLSv1.2"], array.concat(good_suites, [
		suite("TLS_RSA_WITH_AES_128_GCM_SHA256", "TLSv1.2", "RSA", "AES_128_GCM", "AEAD", ["aead"]),
		suite("TLS_DH_RSA_WITH_AES_128_GCM_SHA256", "TLSv1.2", "DH_RSA", "AES_128_GCM", "AEAD", ["aead"]),
		suite("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLSv1.2", "ECDHE_RSA", "AES_256_CBC", "SHA384", ["forward_secrecy", "cbc"]),
		suite("TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", "TLSv1.2", "DHE_RSA", "AES_128_CBC", "SHA256", ["forward_secrecy", "cbc"]),
		suite("TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLSv1", "ECDHE_RSA", "RC4_128", "SHA1", ["forward_secrecy", "rc4"]),
		suite("TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLSv1.2", "ECDHE_RSA", "RC4_128", "SHA1", ["forward_secrecy", "rc4"]),
		suite("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "TLSv1.2", "ECDHE_RSA", "3DES_EDE_CBC", "SHA1", ["forward_secrecy", "cbc", "triple_des"]),
		suite("TLS_DHE_RSA_WITH_DES_CBC_SHA", "TLSv1", "DHE_RSA", "DES_CBC", "SHA1", ["forward_secrecy", "cbc", "des"]),
		suite("TLS_ECDHE_RSA_WITH_NULL_SHA", "TLSv1.2", "ECDHE_RSA", "NULL", "SHA1", ["forward_secrecy", "null"]),
		suite("TLS_DH_anon_WITH_AES_128_GCM_SHA256", "TLSv1.2", "DH_anon", "AES_128_GCM", "AEAD", ["forward_secrecy", "aead", "anonymous"]),
		suite("TLS_RSA_EXPORT_WITH_RC4_40_MD5", "TLSv1", "RSA_EXPORT", "RC4_40", "MD5", ["rc4", "export"]),
	]))])
	check.deny == {
		"10.0.0.5:443 accepts TLS_RSA_WITH_AES_128_GCM_SHA256: no forward secrecy (static RSA key exchange)",
		"10.0.0.5:443 accepts TLS_DH_RSA_WITH_AES_128_GCM_SHA256: no forward secrecy (DH_RSA key exchange)",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: CBC with a SHA-384 MAC",
		"10.0.0.5:443 accepts TLS_DHE_RSA_WITH_AES_128_CBC_SHA256: CBC with a SHA-256 MAC",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_RC4_128_SHA: no AEAD: RC4_128 with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_RC4_128_SHA: RC4, which RFC 7465 bans",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: CBC with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 3DES, a 64-bit block cipher (Sweet32)",
		"10.0.0.5:443 accepts TLS_DHE_RSA_WITH_DES_CBC_SHA: CBC with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_DHE_RSA_WITH_DES_CBC_SHA: single DES",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_NULL_SHA: no AEAD: NULL with a SHA-1 MAC",
		"10.0.0.5:443 accepts TLS_ECDHE_RSA_WITH_NULL_SHA: NULL encryption: the records travel in the clear",
		"10.0.0.5:443 accepts TLS_DH_anon_WITH_AES_128_GCM_SHA256: anonymous key exchange: the server is not authenticated",
		"10.0.0.5:443 accepts TLS_RSA_EXPORT_WITH_RC4_40_MD5: no forward secrecy (RSA_EXPORT key exchange)",
		"10.0.0.5:443 accepts TLS_RSA_EXPORT_WITH_RC4_40_MD5: no AEAD: RC4_40 with an MD5 MAC",
		"10.0.0.5:443 accepts TLS_RSA_EXPORT_WITH_RC4_40_MD5: RC4, which RFC 7465 bans",
		"10.0.0.5:443 accepts TLS_RSA_EXPORT_WITH_RC4_40_MD5: export-grade key exchange or cipher",
	} with input as f with data.gpuhost.params as allow12
}

# The classes decide, not weak_suites, once the probe enumerated.
test_enumerated_ignores_weak_suites if {
	p := object.union(enumerated("10.0.0.5:443", ["TLSv1.2"], good_suites), {"weak_suites": ["TLS_RSA_WITH_AES_128_CBC_SHA"]})
	check.deny == set() with input as facts([p]) with data.gpuhost.params as allow12
}

test_skip_when_tls12_is_weak if {
	f := facts([probe("10.0.0.5:443", false, ["TLS_RSA_WITH_AES_128_CBC_SHA"])])
	check.skip == {"TLSv1.2 is in weak_tls_protocols: GH-TLS-003 fails every port that accepts it"} with input as f
		with data.gpuhost.params.weak_tls_protocols as ["TLSv1.2"]
}

test_error_when_unreachable if {
	p := object.union(probe("10.0.0.5:8080", false, []), {
		"tls12_accepted": false, "tls13_accepted": false, "unreachable": true, "connections": 1,
		"error": "filtered: the TCP connect got no answer within 2s",
	})
	check.error == {"10.0.0.5:8080 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s"} with input as facts([p])
		with data.gpuhost.params as allow12
}

test_fail_starttls_3des if {
	p := object.union(
		enumerated("0.0.0.0:25", ["TLSv1.2"], [suite(
			"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLSv1.2", "RSA", "3DES_EDE_CBC", "SHA1",
			["cbc", "triple_des"],
		)]),
		{"starttls": "smtp"},
	)
	check.deny == {
		"0.0.0.0:25 (smtp STARTTLS) accepts TLS_RSA_WITH_3DES_EDE_CBC_SHA: no forward secrecy (static RSA key exchange)",
		"0.0.0.0:25 (smtp STARTTLS) accepts TLS_RSA_WITH_3DES_EDE_CBC_SHA: CBC with a SHA-1 MAC",
		"0.0.0.0:25 (smtp STARTTLS) accepts TLS_RSA_WITH_3DES_EDE_CBC_SHA: 3DES, a 64-bit block cipher (Sweet32)",
	} with input as facts([p]) with data.gpuhost.params as allow12
}

# A DHE prime under 2048 bits and a curve under 224 fail; 2048 and P-256
# pass.
test_fail_small_key_exchange_groups if {
	dhe := suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "TLSv1.2", "DHE_RSA", "AES_128_GCM", "AEAD", ["forward_secrecy", "aead"])
	p := object.union(enumerated("10.0.0.5:443", ["TLSv1.2"], [object.union(dhe, {"dh_bits": 1024})]), {"curves": [
		{"name": "secp256r1", "bits": 256, "protocol": "TLSv1.2"},
		{"name": "secp160r1", "bits": 160, "protocol": "TLSv1.2"},
		{"name": "0x0099", "bits": 0, "protocol": "TLSv1.2"},
	]})
	check.deny == {
		"10.0.0.5:443 accepts TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: DHE over a 1024-bit group; want 2048 or more",
		"10.0.0.5:443 accepts ECDHE over secp160r1: a 160-bit curve; want 224 or more",
		"10.0.0.5:443 accepts ECDHE over 0x0099: a curve of unknown size",
	} with input as facts([p]) with data.gpuhost.params as allow12
	strong := enumerated("10.0.0.5:443", ["TLSv1.2"], [object.union(dhe, {"dh_bits": 2048})])
	check.deny == set() with input as facts([strong]) with data.gpuhost.params as allow12
}

test_skip_offline if {
	check.skip == {"no listening TLS port was probed"} with input as facts([]) with data.gpuhost.params as allow12
}
