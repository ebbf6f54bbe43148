package gpuhost.tls.probe_chain_test

import data.gpuhost.tls.probe_chain as check

facts(probes) := {"target": {"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"}, "tls": {"nginx": [], "probes": probes}}

store := "/etc/ssl/certs/ca-certificates.crt"

cert(depth, subject, issuer, link) := {
	"depth": depth, "subject": subject, "issuer": issuer, "sha256": "00",
	"not_before": "2025-12-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z", "age_seconds": 2678400, "not_yet_valid": false,
	"seconds_left": 31536000, "key_type": "EC", "key_bits": 256, "signature_algorithm": "ECDSA-SHA256",
	"self_signed": link == "self_signed", "is_ca": depth > 0, "key_usage": [], "ext_key_usage": [], "link": link,
}

leaf := cert(0, "CN=node", "CN=Inter", "issued_by_next")

inter := cert(1, "CN=Inter", "CN=Root", "issued_by_next")

root := cert(2, "CN=Root", "CN=Root", "self_signed")

verified := {"store": store, "verified": true}

probe(addr, loopback, chain, verification) := {
	"address": addr, "loopback": loopback, "tls10_accepted": false, "tls11_accepted": false,
	"tls12_accepted": false, "tls13_accepted": true, "protocols": ["TLSv1.3"], "weak_suites": [],
	"certificate": {
		"subject": chain[0].subject, "issuer": chain[0].issuer, "not_before": "2025-12-01T00:00:00Z", "not_after": "2027-01-01T00:00:00Z",
		"age_seconds": 2678400, "seconds_left": 31536000, "key_type": "EC", "key_bits": 256,
		"signature_algorithm": "ECDSA-SHA256", "sans": ["node"], "self_signed": false,
	},
	"chain": chain, "verification": verification,
}

test_pass_verified_chain if {
	f := facts([
		probe("10.0.0.5:443", false, [leaf, inter, root], verified),
		probe("10.0.0.5:8443", false, [leaf, object.union(inter, {"link": "store"})], verified),
	])
	check.deny == set() with input as f
	check.error == set() with input as f
	check.skip == set() with input as f
}

test_fail_out_of_order if {
	wrong := object.union(leaf, {"link": "wrong_issuer"})
	early := object.union(root, {"depth": 1})
	late := object.union(inter, {"depth": 2, "link": "store"})
	check.deny == {
		"10.0.0.5:443: certificate 1 (CN=Root) is not the issuer of certificate 0 (CN=node), which names CN=Inter: the chain is out of order or carries a certificate that does not belong",
		"10.0.0.5:443: certificate 1 (CN=Root) is a self-signed root, yet certificates follow it: the chain is out of order or carries certificates that do not belong",
	} with input as facts([probe("10.0.0.5:443", false, [wrong, early, late], verified)])
}

test_fail_bad_signature if {
	forged := object.union(leaf, {"link": "bad_signature", "link_error": "x509: ECDSA verification failure"})
	check.deny == {
		"10.0.0.5:443: the key of certificate 1 (CN=Inter), which certificate 0 (CN=node) names as its issuer, does not verify its signature: x509: ECDSA verification failure",
		"10.0.0.5:443: the chain does not verify against /etc/ssl/certs/ca-certificates.crt: x509: certificate signed by unknown authority",
	} with input as facts([probe("10.0.0.5:443", false, [forged, inter, root], {"store": store, "verified": false, "error": "x509: certificate signed by unknown authority"})])
}

test_fail_missing_intermediate if {
	alone := object.union(leaf, {"link": "missing"})
	check.deny == {
		"10.0.0.5:443: certificate 0 (CN=node) was sent without its issuer CN=Inter, which the trust store /etc/ssl/certs/ca-certificates.crt does not hold either: the chain is incomplete",
		"10.0.0.5:443: the chain does not verify against /etc/ssl/certs/ca-certificates.crt: x509: certificate signed by unknown authority",
	} with input as facts([probe("10.0.0.5:443", false, [alone], {"store": store, "verified": false, "error": "x509: certificate signed by unknown authority"})])
}

test_fail_unverified_self_signed if {
	self := object.union(root, {"depth": 0, "subject": "CN=node", "issuer": "CN=node"})
	check.deny == {"0.0.0.0:443: the chain does not verify against /etc/ssl/certs/ca-certificates.crt: x509: certificate signed by unknown authority"} with input as facts([probe("0.0.0.0:443", false, [self], {"store": store, "verified": false, "error": "x509: certificate signed by unknown authority"})])
}

test_error_without_a_store if {
	none := {"store": "", "store_error": "the target has no CA bundle at /etc/ssl/certs/ca-certificates.crt", "verified": false}
	f := facts([
		probe("10.0.0.5:443", false, [object.union(leaf, {"link": "unknown"})], none),
		probe("127.0.0.1:443", true, [object.union(leaf, {"link": "unknown"})], none),
	])
	check.error == {"10.0.0.5:443: whether its certificate chain verifies is unknown: the target has no CA bundle at /etc/ssl/certs/ca-certificates.crt"} with input as f
	check.deny == set() with input as f
}

test_error_cut_short if {
	p := object.union(probe("10.0.0.5:443", false, [leaf, inter, root], verified), {"error": "tls1.2: the certificate could not be read: x"})
	check.error == {"10.0.0.5:443 could not be fully probed, so its verdict is unknown: tls1.2: the certificate could not be read: x"} with input as facts([p])
}

# Loopback listeners are GH-TLS-007's, where an unverified chain is allowed.
test_loopback_left_to_the_loopback_check if {
	wrong := object.union(leaf, {"link": "wrong_issuer"})
	check.deny == set() with input as facts([probe("127.0.0.1:443", true, [wrong, root], {"store": store, "verified": false, "error": "x"})])
}

test_skip_facts_without_chains if {
	old := object.remove(probe("10.0.0.5:443", false, [leaf], verified), {"chain", "verification"})
	check.skip == {"the facts keep each listener's leaf certificate alone (written before the probe read whole chains)"} with input as facts([old])
	check.skip == {"no listening TLS port was probed"} with input as facts([])
	check.skip == {"TLS probes need a live host; target kind is rootfs"} with input as {"target": {"kind": "rootfs"}, "tls": {"nginx": [], "probes": [old]}}
}

test_a_view_with_its_own_chain_is_judged if {
	other := object.union(leaf, {"subject": "CN=vhost", "link": "missing", "issuer": "CN=Elsewhere"})
	view := {
		"server_name": "vhost.example", "name_source": "nginx", "address": "127.0.0.1:443", "same_as_default": false,
		"name_matches": true, "leaf_subject": "CN=vhost", "chain": [other],
		"verification": {"store": store, "verified": false, "error": "x509: certificate signed by unknown authority"},
	}
	p := object.union(probe("10.0.0.5:443", false, [leaf, inter, root], verified), {"views": [view]})
	check.deny == {
		"10.0.0.5:443 for server name vhost.example: certificate 0 (CN=vhost) was sent without its issuer CN=Elsewhere, which the trust store /etc/ssl/certs/ca-certificates.crt does not hold either: the chain is incomplete",
		"10.0.0.5:443 for server name vhost.example: the chain does not verify against /etc/ssl/certs/ca-certificates.crt: x509: certificate signed by unknown authority",
	} with input as facts([p])
}

test_a_view_of_the_same_leaf_adds_nothing if {
	view := {"address": "10.0.0.6:443", "same_as_default": true, "leaf_subject": "CN=node"}
	p := object.union(probe("0.0.0.0:443", false, [leaf, inter, root], verified), {"views": [view]})
	check.deny == set() with input as facts([p])
}

test_error_when_a_view_failed if {
	view := {"address": "10.0.0.6:443", "same_as_default": false, "error": "timed out: connected, but no ServerHello within 2s"}
	p := object.union(probe("0.0.0.0:443", false, [leaf, inter, root], verified), {"views": [view]})
	check.error == {"0.0.0.0:443 at 10.0.0.6:443: the certificate could not be fetched, so its verdict is unknown: timed out: connected, but no ServerHello within 2s"} with input as facts([p])
}

test_an_address_view_is_named_by_its_address if {
	other := object.union(leaf, {"subject": "CN=inner", "link": "missing", "issuer": "CN=Elsewhere"})
	unverified := {"store": store, "verified": false, "error": "x509: certificate signed by unknown authority"}
	view := {"address": "10.0.0.6:443", "same_as_default": false, "leaf_subject": "CN=inner", "chain": [other], "verification": unverified}
	p := object.union(probe("0.0.0.0:443", false, [leaf, inter, root], verified), {"views": [view]})
	check.deny == {
		"0.0.0.0:443 at 10.0.0.6:443: certificate 0 (CN=inner) was sent without its issuer CN=Elsewhere, which the trust store /etc/ssl/certs/ca-certificates.crt does not hold either: the chain is incomplete",
		"0.0.0.0:443 at 10.0.0.6:443: the chain does not verify against /etc/ssl/certs/ca-certificates.crt: x509: certificate signed by unknown authority",
	} with input as facts([p])
}

# A last certificate whose issuer no store holds is no fault where the
# chain verifies: the client's path ended before it.
test_pass_extra_certificate_past_the_anchor if {
	cross := object.union(inter, {"depth": 2, "subject": "CN=Root", "issuer": "CN=Old Root", "link": "missing"})
	check.deny == set() with input as facts([probe("10.0.0.5:443", false, [leaf, object.union(inter, {"link": "issued_by_next"}), cross], verified)])
}
