# METADATA
# title: nginx enables only TLS 1.3
# description: >-
#   Every ssl_protocols directive nginx reads (and every TLS server that sets none and so
#   gets nginx's default) must enable no protocol listed in params.weak_tls_protocols.
#   TLSv1.1 counts as weak. Skips when nginx has no TLS configuration.
# scope: package
# custom:
#   id: GH-TLS-002
#   severity: high
#   location: /etc/nginx/nginx.conf
#   remediation: >-
#     Set "ssl_protocols TLSv1.3;" in the http block (and in every server block that sets its
#     own), then run "nginx -t" and reload nginx.
#   controls:
#     nist-800-53: [SC-8, SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [tls]
package gpuhost.tls.nginx_protocols

entries := object.get(input.tls, "nginx", [])

weak(p) if {
	some w in data.gpuhost.params.weak_tls_protocols
	lower(w) == lower(p)
}

skip contains "nginx has no TLS configuration" if {
	count(entries) == 0
}

deny contains "parameter weak_tls_protocols is not set" if {
	not data.gpuhost.params.weak_tls_protocols
}

# Each finding names the directive's file and line, and the protocol, so a
# SARIF consumer points at the line and tells two weak protocols apart.
deny contains {"msg": msg, "file": e.file, "line": e.line, "subject": p} if {
	some e in entries
	some p in e.protocols
	weak(p)
	msg := sprintf("%s:%d: ssl_protocols enables %s", [e.file, e.line, p])
}

deny contains {"msg": msg, "file": e.file, "line": e.line} if {
	some e in entries
	count(object.get(e, "protocols", [])) == 0
	msg := sprintf("%s:%d: no protocols recorded for this TLS server; nginx's default enables TLS 1.2 and older", [e.file, e.line])
}
