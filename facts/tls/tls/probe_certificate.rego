# METADATA
# title: Internet-facing TLS certificates are current and strong
# description: >-
#   Every certificate each listening TLS port sent (every chain its views got too), the leaf
#   and each after it, must be valid at the scan and not expire within params.tls_cert_min_days;
#   must have an RSA or RSA-PSS key of 2048 bits or more, an EC key of 256 or more, or an Ed25519
#   or Ed448 key (any other type fails); and must not be signed with SHA-1, MD5 or MD2 (a root's
#   own signature excepted). The leaf must also not be self-signed, must carry a subject
#   alternative name, and its keyUsage and extendedKeyUsage, where present, must let it serve
#   TLS (digitalSignature or keyEncipherment for RSA, digitalSignature or keyAgreement for EC;
#   serverAuth); a must-staple leaf (RFC 7633) needs an OCSP response stapled when asked.
#   Messages name a certificate by depth (0 the leaf) and subject. Chain trust is GH-TLS-008's.
#   Loopback-only listeners are GH-TLS-007's. A listener the probe could not reach or fully
#   probe makes this check an error. Skips on offline targets and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-005
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Issue the listed service a certificate from the site's CA with a SAN for every name
#     clients use, an RSA 2048+ or ECDSA P-256+ key, a SHA-256 signature and serverAuth in its
#     extendedKeyUsage, under intermediates that are themselves current and strong; install it
#     with its chain and reload the service; renew before tls_cert_min_days.
#   controls:
#     nist-800-53: [SC-12, SC-17]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_certificate

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(false)

error contains msg if some msg in lib.view_errors(false)

error contains f.msg if {
	some f in lib.staple_unknown
	not f.loopback
}

deny contains "parameter tls_cert_min_days is not set" if {
	not data.gpuhost.params.tls_cert_min_days
}

deny contains f.msg if {
	some f in lib.certificate
	not f.loopback
}
