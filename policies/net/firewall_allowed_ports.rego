# METADATA
# title: Firewall opens only allowed ports
# description: >-
#   Every port the firewall configuration accepts inbound must be in params.allowed_ports.
#   This is the configured counterpart of GH-NET-001 and works on offline targets.
#   Skips when no firewall is configured (GH-NET-002 reports that).
# scope: package
# custom:
#   id: GH-NET-003
#   severity: medium
#   remediation: >-
#     Remove the rule that opens the listed port (ufw delete allow PORT, or the nftables accept
#     rule), or add the port to allowed_ports in the params file if it is meant to be reachable.
#   controls:
#     nist-800-53: [CM-7, SC-7]
#   targets: [rootfs, image, host, facts]
#   requires: [firewall]
package gpuhost.net.firewall_allowed_ports

found := object.get(object.get(input, "network", {}), "firewall", null)

# The collector reports backend "none" when neither ufw nor nftables is set up.
fw := found if {
	found != null
	found.backend != "none"
} else := null

skip contains "no firewall is configured" if fw == null

deny contains "parameter allowed_ports is not set" if {
	not data.gpuhost.params.allowed_ports
}

deny contains msg if {
	data.gpuhost.params.allowed_ports
	fw != null
	some port in object.get(fw, "allowed_ports", [])
	not port in data.gpuhost.params.allowed_ports
	msg := sprintf("the %s firewall accepts inbound port %d, which is not in allowed_ports", [fw.backend, port])
}
