# METADATA
# title: Internet-facing TLS certificate chains verify
# description: >-
#   The certificate chain each listening TLS port sent, and every other chain its views got,
#   must verify as a client's would against the target's own CA bundle (the first of
#   /etc/ssl/certs/ca-certificates.crt and the other distributions' paths): Go's crypto/x509
#   with the certificates sent after the leaf as intermediates, the bundle as roots, the scan's
#   time, and TLS server authentication as the purpose; host names are GH-TLS-009's. The chain
#   must be in order, each certificate followed by the one that issued it and whose key verifies
#   its signature, no root before the end, and complete: the last one sent is a root, issued by
#   a CA of the bundle, a bundle root cross-signed, or past where the verified path ends.
#   Messages name a certificate by its depth (0 the leaf) and subject. A target with no usable
#   CA bundle makes this check an error. Loopback-only listeners are GH-TLS-007's (order, not
#   trust). Skips on offline targets, when no port was probed, and on facts written before the
#   probe kept whole chains.
# scope: package
# custom:
#   id: GH-TLS-008
#   severity: high
#   location: /etc/ssl/certs/ca-certificates.crt
#   remediation: >-
#     Configure the listed service with its full chain, leaf first and each intermediate after
#     the certificate it issued (nginx: ssl_certificate holds the leaf then the intermediates),
#     from a CA that the hosts' clients trust; a site CA belongs in the hosts' own bundle too
#     (update-ca-certificates, update-ca-trust), which is what this check verifies against.
#   controls:
#     nist-800-53: [SC-17, IA-5]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_chain

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

# A document written before the probe kept whole chains has each leaf alone,
# which says nothing of the chain.
skip contains "the facts keep each listener's leaf certificate alone (written before the probe read whole chains)" if {
	count(lib.skip) == 0
	not any_chain
	some p in lib.probes
	p.certificate
}

any_chain if {
	some p in lib.probes
	p.verification
}

error contains msg if some msg in lib.errors(false)

error contains msg if some msg in lib.view_errors(false)

error contains f.msg if {
	some f in lib.trust_unknown
	not f.loopback
}

deny contains f.msg if {
	some f in (lib.chain_order | lib.chain_trust)
	not f.loopback
}
