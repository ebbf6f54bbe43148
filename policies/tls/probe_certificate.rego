# METADATA
# title: Internet-facing TLS certificates are current and strong
# description: >-
#   The leaf certificate each listening TLS port presented must not be expired or expire
#   within params.tls_cert_min_days of the scan, must not be self-signed, must have an RSA key
#   of 2048 bits or more or an EC key of 256 bits or more, must not be signed with SHA-1, and
#   must carry a subject alternative name. One message per problem. Loopback-only listeners
#   are judged by GH-TLS-007, where self-signed is allowed. A listener the probe could not
#   reach or whose probe was cut short makes this check an error. Skips on offline targets
#   and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-005
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Issue the listed service a certificate from the site's CA with a SAN for every name
#     clients use, an RSA 2048+ or ECDSA P-256+ key and a SHA-256 signature, install it and
#     reload the service; renew before tls_cert_min_days.
#   controls:
#     nist-800-53: [SC-12, SC-17]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_certificate

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(false)

deny contains "parameter tls_cert_min_days is not set" if {
	not data.gpuhost.params.tls_cert_min_days
}

deny contains f.msg if {
	some f in lib.certificate
	not f.loopback
}
