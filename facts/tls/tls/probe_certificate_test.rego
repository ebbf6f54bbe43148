package gpuhost.tls.probe_certificate_test

import data.gpuhost.tls.probe_certificate as check

params := {"tls_cert_min_days": 30}

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

good_cert := {
	"subject": "CN=node", "issuer": "CN=CA", "not_before": "2025-12-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z",
	"age_seconds": 2678400, "seconds_left": 31536000, "key_type": "EC", "key_bits": 256,
	"signature_algorithm": "ECDSA-SHA256", "sans": ["node"], "self_signed": false,
}

probe(addr, loopback, cert) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": false, "tls13_accepted": true, "weak_suites": [], "certificate": cert,
}

# A chain as the probe keeps it: a leaf, its intermediate, and the root.
chain_cert(depth, subject, issuer) := {
	"depth": depth, "subject": subject, "issuer": issuer, "sha256": "00",
	"not_before": "2025-12-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z", "age_seconds": 2678400, "not_yet_valid": false,
	"seconds_left": 31536000, "key_type": "EC", "key_bits": 256, "signature_algorithm": "ECDSA-SHA256",
	"self_signed": false, "is_ca": depth > 0, "key_usage": [], "ext_key_usage": [], "link": "issued_by_next",
}

leaf := object.union(chain_cert(0, "CN=node", "CN=Inter"), {"key_usage": ["digitalSignature"], "ext_key_usage": ["serverAuth"]})

inter := chain_cert(1, "CN=Inter", "CN=Root")

root := object.union(chain_cert(2, "CN=Root", "CN=Root"), {"self_signed": true, "link": "self_signed"})

chained(addr, certs) := object.union(probe(addr, false, good_cert), {
	"chain": certs,
	"verification": {"store": "/etc/ssl/certs/ca-certificates.crt", "verified": true},
})

test_pass_good_certificate if {
	f := facts([probe("10.0.0.5:443", false, good_cert), {
		"address": "10.0.0.5:8443", "loopback": false, "tls10_accepted": false, "tls11_accepted": false,
		"tls12_accepted": false, "tls13_accepted": true, "weak_suites": [],
	}])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_pass_good_chain if {
	f := facts([chained("10.0.0.5:443", [leaf, inter, root])])
	check.deny == set() with input as f with data.gpuhost.params as params
}

# A document written before the probe kept the chain is judged by its leaf.
test_fail_every_problem if {
	bad := {
		"subject": "CN=old", "issuer": "CN=old", "not_before": "2023-12-01T00:00:00Z", "not_after": "2025-12-01T00:00:00Z",
		"age_seconds": 65750400, "seconds_left": -2678400, "key_type": "RSA", "key_bits": 1024,
		"signature_algorithm": "SHA1-RSA", "sans": [], "self_signed": true,
	}
	check.deny == {
		"10.0.0.5:443: certificate 0 (CN=old): expired on 2025-12-01T00:00:00Z, 31 days before the scan",
		"10.0.0.5:443: certificate 0 (CN=old): self-signed on a non-loopback address",
		"10.0.0.5:443: certificate 0 (CN=old): a 1024-bit RSA key; want 2048 or more",
		"10.0.0.5:443: certificate 0 (CN=old): signed with SHA1-RSA",
		"10.0.0.5:443: certificate 0 (CN=old): no subject alternative name, which clients need to match a host",
	} with input as facts([probe("10.0.0.5:443", false, bad)]) with data.gpuhost.params as params
}

test_fail_expiring_and_small_ec if {
	soon := object.union(good_cert, {"not_after": "2026-01-20T00:00:00Z", "seconds_left": 1641600, "key_bits": 224})
	check.deny == {
		"0.0.0.0:443: certificate 0 (CN=node): expires on 2026-01-20T00:00:00Z, within tls_cert_min_days (30)",
		"0.0.0.0:443: certificate 0 (CN=node): a 224-bit EC key; want 256 or more",
	} with input as facts([probe("0.0.0.0:443", false, soon)]) with data.gpuhost.params as params
	check.deny == {"0.0.0.0:443: certificate 0 (CN=node): a 224-bit EC key; want 256 or more"} with input as facts([probe("0.0.0.0:443", false, soon)])
		with data.gpuhost.params as {"tls_cert_min_days": 10}
}

test_fail_leaf_not_yet_valid if {
	future := object.union(leaf, {"not_before": "2026-01-04T00:00:00Z", "age_seconds": -259200, "not_yet_valid": true})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): not valid until 2026-01-04T00:00:00Z, 3 days after the scan"} with input as facts([chained("10.0.0.5:443", [future, inter, root])])
		with data.gpuhost.params as params

	# A document with the leaf alone says so by its age.
	old := object.union(good_cert, {"not_before": "2026-01-01T05:00:00Z", "age_seconds": -18000})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): not valid until 2026-01-01T05:00:00Z, 5 hours after the scan"} with input as facts([probe("10.0.0.5:443", false, old)])
		with data.gpuhost.params as params
}

test_fail_expired_intermediate if {
	expired := object.union(inter, {"not_after": "2025-12-29T00:00:00Z", "seconds_left": -259200})
	check.deny == {"10.0.0.5:443: certificate 1 (CN=Inter): expired on 2025-12-29T00:00:00Z, 3 days before the scan"} with input as facts([chained("10.0.0.5:443", [leaf, expired, root])])
		with data.gpuhost.params as params
	just := object.union(inter, {"seconds_left": 0})
	check.deny == {"10.0.0.5:443: certificate 1 (CN=Inter): expired on 2027-01-01T00:00:00Z, less than an hour before the scan"} with input as facts([chained("10.0.0.5:443", [leaf, just, root])])
		with data.gpuhost.params as params
	hour := object.union(inter, {"seconds_left": -3600})
	check.deny == {"10.0.0.5:443: certificate 1 (CN=Inter): expired on 2027-01-01T00:00:00Z, 1 hour before the scan"} with input as facts([chained("10.0.0.5:443", [leaf, hour, root])])
		with data.gpuhost.params as params
	day := object.union(inter, {"seconds_left": -90000})
	check.deny == {"10.0.0.5:443: certificate 1 (CN=Inter): expired on 2027-01-01T00:00:00Z, 1 day before the scan"} with input as facts([chained("10.0.0.5:443", [leaf, day, root])])
		with data.gpuhost.params as params
}

test_fail_expiring_root if {
	soon := object.union(root, {"seconds_left": 86400})
	check.deny == {"10.0.0.5:443: certificate 2 (CN=Root): expires on 2027-01-01T00:00:00Z, within tls_cert_min_days (30)"} with input as facts([chained("10.0.0.5:443", [leaf, inter, soon])])
		with data.gpuhost.params as params
}

# Keys and signatures count in every certificate, but a root's signature on
# itself, which no client checks.
test_fail_weak_intermediate_not_root_self_signature if {
	weak := object.union(inter, {"key_type": "RSA", "key_bits": 1024, "signature_algorithm": "MD5-RSA"})
	sha1root := object.union(root, {"key_type": "RSA", "key_bits": 2048, "signature_algorithm": "SHA1-RSA"})
	check.deny == {
		"10.0.0.5:443: certificate 1 (CN=Inter): a 1024-bit RSA key; want 2048 or more",
		"10.0.0.5:443: certificate 1 (CN=Inter): signed with MD5-RSA",
	} with input as facts([chained("10.0.0.5:443", [leaf, weak, sha1root])]) with data.gpuhost.params as params
}

test_fail_client_only_leaf if {
	client := object.union(leaf, {"ext_key_usage": ["clientAuth"]})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): extendedKeyUsage clientAuth leaves out serverAuth, so clients refuse it as a TLS server's certificate"} with input as facts([chained("10.0.0.5:443", [client, inter, root])])
		with data.gpuhost.params as params
	anyeku := object.union(leaf, {"ext_key_usage": ["any"]})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): extendedKeyUsage any leaves out serverAuth, so clients refuse it as a TLS server's certificate"} with input as facts([chained("10.0.0.5:443", [anyeku, inter, root])])
		with data.gpuhost.params as params

	# No extendedKeyUsage at all allows any purpose.
	check.deny == set() with input as facts([chained("10.0.0.5:443", [object.union(leaf, {"ext_key_usage": []}), inter, root])])
		with data.gpuhost.params as params
}

test_fail_key_usage_that_serves_no_tls if {
	rsa := object.union(leaf, {"key_type": "RSA", "key_bits": 2048, "key_usage": ["keyCertSign", "cRLSign"]})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): keyUsage cRLSign, keyCertSign allows its RSA key no TLS server use; it needs digitalSignature or keyEncipherment"} with input as facts([chained("10.0.0.5:443", [rsa, inter, root])])
		with data.gpuhost.params as params
	ec := object.union(leaf, {"key_usage": ["keyEncipherment"]})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): keyUsage keyEncipherment allows its EC key no TLS server use; it needs digitalSignature or keyAgreement"} with input as facts([chained("10.0.0.5:443", [ec, inter, root])])
		with data.gpuhost.params as params
	ed := object.union(leaf, {"key_type": "Ed25519", "key_usage": ["keyAgreement"]})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): keyUsage keyAgreement allows its Ed25519 key no TLS server use; it needs digitalSignature"} with input as facts([chained("10.0.0.5:443", [ed, inter, root])])
		with data.gpuhost.params as params
	rsaenc := object.union(rsa, {"key_usage": ["keyEncipherment"]})
	check.deny == set() with input as facts([chained("10.0.0.5:443", [rsaenc, inter, root])]) with data.gpuhost.params as params
}

test_loopback_left_to_the_loopback_check if {
	check.deny == set() with input as facts([probe("127.0.0.1:443", true, object.union(good_cert, {"key_bits": 224}))])
		with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter tls_cert_min_days is not set"} with input as facts([probe("10.0.0.5:443", false, good_cert)])
		with data.gpuhost.params as {}
}

test_error_cut_short_and_skip_offline if {
	p := object.union(probe("10.0.0.5:443", false, good_cert), {"error": "tls1.3: the certificate could not be fetched: x"})
	check.error == {"10.0.0.5:443 could not be fully probed, so its verdict is unknown: tls1.3: the certificate could not be fetched: x"} with input as facts([p])
		with data.gpuhost.params as params
	check.skip == {"no listening TLS port was probed"} with input as facts([]) with data.gpuhost.params as params
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
	check.deny == {`0.0.0.0:143 (imap STARTTLS): certificate 0 (CN=node): self-signed on a non-loopback address`} with input as facts([p])
		with data.gpuhost.params as params
}

# Issue 48: keys other than RSA and EC are sized or refused, never passed
# for want of a rule.
test_fail_small_pss_dsa_and_unknown_keys if {
	pss := object.union(good_cert, {"key_type": "RSA-PSS", "key_bits": 1024})
	dsa := object.union(good_cert, {"key_type": "DSA", "key_bits": 2048})
	odd := object.union(good_cert, {"key_type": "1.2.643.7.1.1.1.1", "key_bits": 0})
	check.deny == {
		"10.0.0.5:443: certificate 0 (CN=node): a 1024-bit RSA-PSS key; want 2048 or more",
		"10.0.0.5:444: certificate 0 (CN=node): a 2048-bit DSA key, which TLS 1.3 does not allow; want RSA 2048+ or EC 256+",
		"10.0.0.5:445: certificate 0 (CN=node): a key of type 1.2.643.7.1.1.1.1, which is none of RSA, EC, Ed25519 or Ed448",
	} with input as facts([probe("10.0.0.5:443", false, pss), probe("10.0.0.5:444", false, dsa), probe("10.0.0.5:445", false, odd)])
		with data.gpuhost.params as params
	big := object.union(good_cert, {"key_type": "RSA-PSS", "key_bits": 3072})
	ed := object.union(good_cert, {"key_type": "Ed448", "key_bits": 448})
	check.deny == set() with input as facts([probe("10.0.0.5:443", false, big), probe("10.0.0.5:444", false, ed)]) with data.gpuhost.params as params
}

test_error_when_a_view_failed if {
	p := object.union(probe("0.0.0.0:443", false, good_cert), {"views": [{"server_name": "api.example", "address": "127.0.0.1:443", "same_as_default": false, "error": "reset by the peer during the handshake"}]})
	check.error == {"0.0.0.0:443 for server name api.example: the certificate could not be fetched, so its verdict is unknown: reset by the peer during the handshake"} with input as facts([p])
		with data.gpuhost.params as params
}

test_must_staple_needs_a_stapled_response if {
	staple := object.union(leaf, {"must_staple": true})
	bare := object.union(chained("10.0.0.5:443", [staple, inter, root]), {"ocsp_stapled": false})
	check.deny == {"10.0.0.5:443: certificate 0 (CN=node): carries must-staple (TLS Feature status_request), yet the server stapled no OCSP response when asked: clients that honour it refuse the connection"} with input as facts([bare])
		with data.gpuhost.params as params
	stapled := object.union(bare, {"ocsp_stapled": true})
	check.deny == set() with input as facts([stapled]) with data.gpuhost.params as params
	unknown := chained("10.0.0.5:443", [staple, inter, root])
	check.error == {"10.0.0.5:443: certificate 0 (CN=node) carries must-staple, and whether the server staples an OCSP response is unknown: the probe could not ask over the handshake it had to use"} with input as facts([unknown])
		with data.gpuhost.params as params
}
