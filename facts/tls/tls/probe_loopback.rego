# METADATA
# title: Loopback-only TLS listeners meet the TLS checks
# description: >-
#   The findings of GH-TLS-003 to GH-TLS-006, GH-TLS-008 and GH-TLS-009 (TLS 1.2 where it is
#   weak, TLS 1.0 and 1.1, weak TLS 1.2 suites where TLS 1.2 is allowed, certificate problems
#   other than self-signing, in every certificate of every chain, a chain out of order, and a
#   name its certificate does not cover) for listeners
#   bound to a loopback address only, each named "loopback-only". A chain that does not verify
#   against the target's CA bundle is allowed there, as self-signing is. Such a listener
#   (a sidecar on 127.0.0.1) is reachable only from the host itself, so its weight is the
#   site's choice: the severity is params.tls_loopback_severity (medium by default), and the
#   reports show the severity it took. A wildcard listener (0.0.0.0, [::]) is not loopback-only.
#   A loopback listener the probe could not reach (a firewall that filters loopback traffic
#   to it) or whose probe was cut short makes this check an error. Skips on offline targets
#   and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-007
#   severity: medium
#   location: /etc/ssl/openssl.cnf
#   severity_param: tls_loopback_severity
#   remediation: >-
#     Fix the listed local service as GH-TLS-003 to GH-TLS-006 and GH-TLS-008 describe, or, where a site accepts
#     the risk of local-only TLS, lower tls_loopback_severity or waive the check for that host.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_loopback

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(true)

error contains msg if some msg in lib.view_errors(true)

error contains f.msg if {
	some f in lib.staple_unknown
	f.loopback
}

deny contains "parameter tls_loopback_severity is not set" if {
	not data.gpuhost.params.tls_loopback_severity
}

deny contains f.msg if {
	some f in (((((lib.legacy | lib.tls12) | lib.suites) | lib.certificate) | lib.chain_order) | lib.name_mismatch)
	f.loopback
}
