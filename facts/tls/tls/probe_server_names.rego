# METADATA
# title: Internet-facing TLS ports send a certificate that covers each name they serve
# description: >-
#   A server picks its certificate by the name a client sends (SNI) and, for a wildcard
#   socket, by the address the client connected to. For each listening TLS port the probe
#   asks again with each name the port is known by (every exact server_name of an nginx
#   server that listens with ssl on that port, and each DNS name of the certificate the port
#   sends without a name) and, on a wildcard listener, at each of the host's addresses. Each
#   name must get a certificate whose subject alternative names cover it as a client matches
#   them (one wildcard label at most; the common name is not read). A different certificate
#   one of those views gets is judged by GH-TLS-005 and GH-TLS-008 like the port's own. A
#   view whose certificate could not be fetched makes this check an error. Loopback-only
#   listeners are judged by GH-TLS-007. Skips on offline targets and when no port was probed.
# scope: package
# custom:
#   id: GH-TLS-009
#   severity: high
#   location: /etc/nginx/nginx.conf
#   remediation: >-
#     Give each server that answers to the listed name a certificate with that name among its
#     subject alternative names (nginx: the ssl_certificate of the server block whose
#     server_name lists it), or drop the name from the server that cannot serve it; reload
#     the service.
#   controls:
#     nist-800-53: [SC-8, SC-17]
#   targets: [host, facts]
#   requires: [tls_probe]
package gpuhost.tls.probe_server_names

import data.gpuhost.tls.probe_lib as lib

skip contains msg if some msg in lib.skip

error contains msg if some msg in lib.errors(false)

error contains msg if some msg in lib.view_errors(false)

deny contains f.msg if {
	some f in lib.name_mismatch
	not f.loopback
}
