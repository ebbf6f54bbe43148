# METADATA
# title: Firewall drops inbound traffic by default
# description: >-
#   An nftables or ufw firewall must be enabled and its input policy must be drop or reject,
#   so that only explicitly allowed ports are reachable.
# scope: package
# custom:
#   id: GH-NET-002
#   severity: high
#   remediation: >-
#     Enable ufw with "ufw default deny incoming" and "ufw enable", or give the nftables input
#     chain "policy drop;" and enable nftables.service; allow only the ports you need.
#   controls:
#     nist-800-53: [SC-7, SC-7(5), CM-7]
#   targets: [rootfs, image, host, facts]
#   requires: [firewall]
package gpuhost.net.firewall_default_drop

found := object.get(object.get(input, "network", {}), "firewall", null)

# The collector reports backend "none" when neither ufw nor nftables is set up.
fw := found if {
	found != null
	found.backend != "none"
} else := null

deny contains "no firewall (nftables or ufw) is configured" if {
	fw == null
}

deny contains msg if {
	fw != null
	not fw.enabled
	msg := sprintf("the %s firewall is configured but not enabled", [fw.backend])
}

deny contains msg if {
	fw != null
	not lower(fw.default_input_policy) in {"drop", "reject"}
	msg := sprintf("the %s firewall's default input policy is %q; want drop or reject", [fw.backend, fw.default_input_policy])
}
