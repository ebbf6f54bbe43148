# METADATA
# title: Firewall opens only allowed ports
# description: >-
#   Every port the firewall accepts inbound must be in params.allowed_ports: the ports its rules
#   admit on the input path (following jumps, gotos and sets), read from the kernel on a live host
#   and from /etc/nftables.conf or ufw offline. An input policy of accept fails, since then every
#   port is open. A rule gpuhost cannot evaluate that may accept more is an error, not a pass.
#   Skips when no firewall is configured (GH-NET-002 reports that). IPv4 and IPv6 are judged apart:
#   a port or an open policy of one family alone is named with its family, and a family no input
#   hook filters has every port open (IPv6 on a live host whose evidence shows it off excepted).
# scope: package
# custom:
#   id: GH-NET-003
#   severity: medium
#   location: /etc/nftables.conf
#   remediation: >-
#     Remove the rule that opens the listed port (ufw delete allow PORT, or the nftables accept
#     rule), or add the port to allowed_ports in the params file if it is meant to be reachable.
#   controls:
#     nist-800-53: [CM-7, SC-7]
#   targets: [rootfs, image, host, facts]
#   requires: [firewall]
package gpuhost.net.firewall_allowed_ports

import data.gpuhost.lib.locate
import data.gpuhost.net.lib

fw := lib.firewall

skip contains "no firewall is configured" if fw == null

deny contains "parameter allowed_ports is not set" if {
	not data.gpuhost.params.allowed_ports
}

# A port points at the rule that opens it.
deny contains finding if {
	data.gpuhost.params.allowed_ports
	fw != null
	some port in ports
	not port in data.gpuhost.params.allowed_ports
	msg := sprintf("the %s firewall accepts inbound port %d%s, which is not in allowed_ports", [fw.backend, port, over(port)])
	at := lib.rule_place(port)
	finding := object.union({"msg": msg, "subject": sprintf("port/%d", [port])}, locate.place(at.file, at.line))
}

deny contains finding if {
	fw != null
	lib.families_alike
	lower(lib.joined_policy) == "accept"
	msg := sprintf("the %s firewall's input policy is accept: every port is open", [fw.backend])
	finding := locate.at(msg, lib.policy_place.file, lib.policy_place.line)
}

deny contains finding if {
	fw != null
	not lib.families_alike
	some name in lib.judged
	why := lib.open_families[name]
	msg := sprintf("every port is open over %s: %s", [lib.family_label[name], why])
	at := lib.family_policy_place[name]
	finding := locate.at(msg, at.file, at.line)
}

# Without families, the joined list; with them, the ports of the judged
# families, so that a port only IPv6 admits on a host with IPv6 off counts
# for nothing.
ports := object.get(fw, "allowed_ports", []) if {
	fw != null
	count(lib.families) == 0
} else := {port | some name in lib.judged; some port in lib.families[name].allowed_ports}

# A port every judged family admits is said as before; one some admit is
# said with their names.
over(port) := "" if {
	count(lib.judged) == count(admitting(port))
} else := sprintf(" over %s", [concat(" and ", sort([lib.family_label[name] | some name in admitting(port)]))])

admitting(port) := {name | some name in lib.judged; port in lib.families[name].allowed_ports}

error contains msg if {
	fw != null
	some r in object.get(fw, "unmodeled", [])
	r.may_accept
	msg := sprintf("%s may accept ports that cannot be listed (%s)", [r.rule, r.reason])
}
