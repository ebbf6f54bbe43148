# METADATA
# title: Only allowed ports listen on non-loopback addresses
# description: >-
#   On a live host, every socket listening on an address other than loopback (127.0.0.0/8, ::1)
#   must use a port in params.allowed_ports. Offline targets have no listening sockets and skip;
#   GH-NET-003 covers what their firewall opens.
# scope: package
# custom:
#   id: GH-NET-001
#   severity: high
#   location: /etc/nftables.conf
#   remediation: >-
#     Stop or disable the listed service, bind it to 127.0.0.1, or add its port to allowed_ports
#     in the params file if it is meant to be reachable.
#   controls:
#     nist-800-53: [CM-7, CM-7(1), SC-7]
#   targets: [host, facts]
#   requires: [network]
package gpuhost.net.allowed_ports

import data.gpuhost.net.lib

skip contains msg if {
	input.target.kind in lib.offline_kinds
	msg := sprintf("listening sockets are only observed on a live host; target kind is %s", [input.target.kind])
}

deny contains "parameter allowed_ports is not set" if {
	not data.gpuhost.params.allowed_ports
}

# Each finding names its socket by protocol and port, so SARIF follows it.
deny contains {"msg": msg, "subject": sprintf("%s/%d", [l.proto, l.port])} if {
	data.gpuhost.params.allowed_ports
	some l in object.get(input.network, "listening", [])
	not lib.loopback(l.address)
	not l.port in data.gpuhost.params.allowed_ports
	msg := sprintf("%s %s port %d%s is listening and not in allowed_ports", [l.proto, l.address, l.port, lib.owner(object.get(l, "process", ""))])
}
