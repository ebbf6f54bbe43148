# METADATA
# title: No internet-facing TLS port accepts a TLS 1.2 handshake
# description: >-
#   Ground truth on a live host: each listening TLS port was probed with a client pinned
#   to TLS 1.2, and the port accepts it when its ServerHello chose TLS 1.2, even if the
#   handshake then failed (a server that demands a client certificate still speaks TLS 1.2).
#   Applies only when TLSv1.2 is in params.weak_tls_protocols. Loopback-only listeners are
#   judged by GH-TLS-007. A STARTTLS service (SMTP, IMAP, POP3, FTP, LDAP, PostgreSQL, MySQL)
#   is probed after its upgrade, on every connection. A listener the probe could not reach
#   (refused, or filtered by a firewall) or whose probe was cut short (timed out, reset) makes
#   this check an error. Skips on offline targets and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-003
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Find the service that owns the listed address and restrict it to TLS 1.3 (for OpenSSL-based
#     services, MinProtocol = TLSv1.3; for nginx, ssl_protocols TLSv1.3), then restart it.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_tls12

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

skip contains "TLSv1.2 is not in weak_tls_protocols" if {
	not lib.tls12_weak
}

error contains msg if some msg in lib.errors(false)

deny contains f.msg if {
	some f in lib.tls12
	not f.loopback
}
