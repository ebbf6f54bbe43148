# METADATA
# title: System OpenSSL refuses protocols below TLS 1.3
# description: >-
#   The system-wide OpenSSL configuration (openssl_conf -> ssl_conf -> system_default)
#   must set MinProtocol to a protocol that is not in params.weak_tls_protocols.
#   An unset MinProtocol leaves the library default, which accepts TLS 1.2.
# scope: package
# custom:
#   id: GH-TLS-001
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Set "MinProtocol = TLSv1.3" in the system_default section that openssl.cnf reaches
#     through openssl_conf and ssl_conf, then restart services that link OpenSSL.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [tls]
package gpuhost.tls.openssl_min_protocol

# OpenSSL's built-in floor when no MinProtocol is configured.
library_default := "TLSv1.2"

openssl := object.get(input.tls, "openssl", null)

weak(p) if {
	some w in data.gpuhost.params.weak_tls_protocols
	lower(w) == lower(p)
}

configured_min := openssl.min_protocol if {
	openssl != null
	openssl.min_protocol != ""
}

deny contains "parameter weak_tls_protocols is not set" if {
	not data.gpuhost.params.weak_tls_protocols
}

deny contains msg if {
	openssl == null
	weak(library_default)
	msg := "no system OpenSSL configuration sets MinProtocol: the library default allows TLS 1.2"
}

deny contains msg if {
	openssl != null
	not configured_min
	weak(library_default)
	msg := sprintf("%s sets no MinProtocol in system_default: the library default allows TLS 1.2", [openssl.config_path])
}

deny contains {"msg": msg, "file": openssl.min_protocol_file, "line": openssl.min_protocol_line} if {
	weak(configured_min)
	openssl.min_protocol_line
	msg := sprintf("%s:%d sets MinProtocol = %s, which is a weak protocol; want TLSv1.3", [openssl.min_protocol_file, openssl.min_protocol_line, configured_min])
}

# Facts from before collectors kept the line: the file alone.
deny contains msg if {
	weak(configured_min)
	not openssl.min_protocol_line
	msg := sprintf("%s sets MinProtocol = %s, which is a weak protocol; want TLSv1.3", [openssl.config_path, configured_min])
}
