# METADATA
# title: No listening TLS port accepts a TLS 1.2 handshake
# description: >-
#   Ground truth on a live host: each listening TLS port was probed with a client pinned
#   to TLS 1.2, which must fail. Applies only when TLSv1.2 is in params.weak_tls_protocols.
#   Skips on offline targets and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-003
#   severity: high
#   remediation: >-
#     Find the service that owns the listed address and restrict it to TLS 1.3 (for OpenSSL-based
#     services, MinProtocol = TLSv1.3; for nginx, ssl_protocols TLSv1.3), then restart it.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_tls12

offline_kinds := {"rootfs", "image", "oci"}

probes := object.get(object.get(input, "tls", {}), "probes", [])

tls12_weak if {
	some w in data.gpuhost.params.weak_tls_protocols
	lower(w) == "tlsv1.2"
}

skip contains msg if {
	input.target.kind in offline_kinds
	msg := sprintf("TLS probes need a live host; target kind is %s", [input.target.kind])
}

skip contains "no listening TLS port was probed" if {
	count(probes) == 0
}

skip contains "TLSv1.2 is not in weak_tls_protocols" if {
	not tls12_weak
}

deny contains msg if {
	tls12_weak
	some p in probes
	p.tls12_accepted
	msg := sprintf("%s accepts a TLS 1.2 handshake", [p.address])
}
