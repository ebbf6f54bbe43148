# METADATA
# title: Firewall drops inbound traffic by default
# description: >-
#   An nftables or ufw firewall must be enabled and its input policy must be drop or reject,
#   so that only explicitly allowed ports are reachable. Offline, enabled means the unit is wanted
#   at boot; on a live host it means systemd reports the unit active, and the policy is the one the
#   kernel holds. A live host whose service manager cannot be asked is an error, not a pass. IPv4
#   and IPv6 are judged apart: inet tables filter both, ip tables IPv4 alone, ip6 tables IPv6
#   alone, so a family no input hook filters is wide open and fails, unless it is IPv6 on a live
#   host whose evidence shows IPv6 off.
# scope: package
# custom:
#   id: GH-NET-002
#   severity: high
#   location: /etc/nftables.conf
#   remediation: >-
#     Enable ufw with "ufw default deny incoming" and "ufw enable", or give the nftables input
#     chain "policy drop;" and enable nftables.service; allow only the ports you need.
#   controls:
#     nist-800-53: [SC-7, SC-7(5), CM-7]
#   targets: [rootfs, image, host, facts]
#   requires: [firewall]
package gpuhost.net.firewall_default_drop

import data.gpuhost.lib.locate
import data.gpuhost.net.lib

fw := lib.firewall

deny contains "no firewall (nftables or ufw) is configured" if {
	fw == null
}

deny contains msg if {
	fw != null
	not fw.enabled
	not unit_unknown
	msg := sprintf("the %s firewall is configured but not enabled%s", [fw.backend, unit_note])
}

deny contains finding if {
	fw != null
	lib.families_alike
	not lower(lib.joined_policy) in {"drop", "reject"}
	msg := sprintf("the %s firewall's default input policy is %q; want drop or reject", [fw.backend, lib.joined_policy])
	finding := locate.at(msg, lib.policy_place.file, lib.policy_place.line)
}

# When the families differ, each that does not drop by default is named.
deny contains msg if {
	fw != null
	not lib.families_alike
	some name in lib.judged
	not lib.families[name].filtered
	msg := sprintf("%s is not filtered: no %s or inet table has a filter chain on the input hook, so every %s port is open", [
		lib.family_label[name], lib.family_tables[name], lib.family_label[name],
	])
}

deny contains finding if {
	fw != null
	not lib.families_alike
	some name in lib.judged
	f := lib.families[name]
	f.filtered
	not lower(f.default_input_policy) in {"drop", "reject"}
	msg := sprintf("the %s firewall's default input policy for %s is %q; want drop or reject", [fw.backend, lib.family_label[name], f.default_input_policy])
	at := lib.family_policy_place[name]
	finding := locate.at(msg, at.file, at.line)
}

unit_unknown if fw.unit.state == "unknown"

error contains msg if {
	unit_unknown
	msg := sprintf("cannot tell whether %s is active: %s", [fw.unit.name, object.get(fw.unit, "reason", "no reason given")])
}

default unit_note := ""

unit_note := sprintf(" (%s is %s)", [fw.unit.name, fw.unit.state]) if fw.unit
