# METADATA
# title: No internet-facing TLS port accepts SSL 3.0, TLS 1.0 or 1.1
# description: >-
#   Each listening TLS port was sent hellos of its own for SSL 3.0, TLS 1.0 and TLS 1.1, each
#   offering every registered cipher suite; the port accepts a version when its ServerHello chose
#   it. SSL 3.0 is prohibited (RFC 7568) and TLS 1.0 and 1.1 are deprecated (RFC 8996), so this
#   fails whatever params.weak_tls_protocols says about TLS 1.2. A STARTTLS service (SMTP,
#   IMAP, POP3, FTP, LDAP, PostgreSQL, MySQL) is probed after its upgrade. Loopback-only
#   listeners are judged by GH-TLS-007. A listener the probe could not reach or whose probe
#   was cut short makes this check an error. Skips on offline targets and when no port was
#   probed.
# scope: package
# custom:
#   id: GH-TLS-004
#   severity: critical
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Raise the listed service's minimum protocol to TLS 1.2 or better 1.3 (OpenSSL
#     MinProtocol, nginx ssl_protocols, Go tls.Config.MinVersion), then restart it.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_legacy_protocols

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(false)

deny contains f.msg if {
	some f in lib.legacy
	not f.loopback
}
