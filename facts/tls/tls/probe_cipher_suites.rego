# METADATA
# title: Internet-facing TLS 1.2 ports offer only forward-secret AEAD suites
# description: >-
#   Where params allow TLS 1.2 (TLSv1.2 is not in weak_tls_protocols), each port's cipher
#   suites were enumerated at every version it accepts, as sslscan does: offer every registered
#   suite, note the server's choice, take it away and ask again until it refuses. Each accepted
#   suite fails once for every class it is in: no forward secrecy (static RSA, DH, ECDH, PSK),
#   CBC (with its MAC), no AEAD, RC4, 3DES, single DES, NULL, anonymous and export; a DHE suite
#   also fails over a prime under 2048 bits, and each curve a port accepts for ECDHE before TLS
#   1.3 under 224 bits (NIST SP 800-131A's 112 bits of strength). One message per suite and
#   class. When TLS 1.2 itself is weak, GH-TLS-003 fails those ports and this
#   check skips. Loopback-only listeners are judged by GH-TLS-007. A listener the probe could
#   not reach or whose probe was cut short makes this check an error. Skips on offline
#   targets and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-006
#   severity: high
#   location: /etc/ssl/openssl.cnf
#   remediation: >-
#     Restrict the listed service's TLS 1.2 suites to ECDHE with AES-GCM or ChaCha20-Poly1305
#     (OpenSSL CipherString "ECDHE+AESGCM:ECDHE+CHACHA20", nginx ssl_ciphers) and drop TLS 1.0
#     and 1.1, then restart it.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_cipher_suites

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

skip contains "TLSv1.2 is in weak_tls_protocols: GH-TLS-003 fails every port that accepts it" if {
	lib.tls12_weak
}

error contains msg if some msg in lib.errors(false)

deny contains f.msg if {
	some f in lib.suites
	not f.loopback
}
