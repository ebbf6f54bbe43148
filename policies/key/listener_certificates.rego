# METADATA
# title: TLS certificates are rotated within the rotation period
# description: >-
#   Keys are rotated every params.rotation_max_age_days (90 by default): the certificate each
#   listening TLS port presented, loopback-only ones included, must have been issued within that
#   many days of the scan, so that a stolen key stops working on a known schedule. Read from the
#   live probe's view of each certificate's notBefore. A listener whose probe was cut short makes
#   this check an error; it skips on offline targets and when no port was probed.
# scope: package
# custom:
#   id: GH-KEY-001
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Issue the listed service a new certificate with a new key (cert-manager, ACME or the site's CA
#     renew both), install it and reload the service; automate it so renewal precedes the limit.
#   controls:
#     nist-800-53: [SC-12, IA-5(1)]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.key.listener_certificates

import data.gpuhost.tls.probe_lib as lib

max_days := object.get(data.gpuhost.params, "rotation_max_age_days", 90)

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(false)

error contains msg if some msg in lib.errors(true)

deny contains {"msg": msg, "subject": p.address} if {
	some p in lib.probes
	c := p.certificate
	c.age_seconds > max_days * 86400
	msg := sprintf(
		"%s presents a certificate issued %d days ago (not before %s), past the %d-day rotation",
		[lib.label(p), floor(c.age_seconds / 86400), c.not_before, max_days],
	)
}
