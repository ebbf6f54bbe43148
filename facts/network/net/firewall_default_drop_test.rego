package gpuhost.net.firewall_default_drop_test

import data.gpuhost.net.firewall_default_drop as check

facts(fw) := {"target": {"kind": "image"}, "network": {"listening": [], "firewall": fw}}

test_pass_drop if {
	check.deny == set() with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [22]})
	check.deny == set() with input as facts({"backend": "ufw", "enabled": true, "default_input_policy": "REJECT", "allowed_ports": [22]})
}

test_fail_accept_and_disabled if {
	check.deny == {
		"the ufw firewall is configured but not enabled",
		"the ufw firewall's default input policy is \"accept\"; want drop or reject",
	} with input as facts({"backend": "ufw", "enabled": false, "default_input_policy": "accept", "allowed_ports": []})
}

test_fail_empty_policy if {
	check.deny == {"the nftables firewall's default input policy is \"\"; want drop or reject"} with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "", "allowed_ports": []})
}

test_fail_no_firewall if {
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as {"target": {"kind": "rootfs"}, "network": {"listening": []}}
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as {"target": {"kind": "rootfs"}}
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as facts({"backend": "none", "enabled": false, "default_input_policy": "accept", "allowed_ports": []})
}

test_live_unit_unknown_is_an_error if {
	f := facts({"backend": "nftables", "enabled": false, "default_input_policy": "drop", "allowed_ports": [22], "source": "kernel", "unit": {"name": "nftables.service", "state": "unknown", "reason": "systemd is not running (no /run/systemd/system)"}})
	check.error == {"cannot tell whether nftables.service is active: systemd is not running (no /run/systemd/system)"} with input as f
	check.deny == set() with input as f
}

test_live_unit_inactive_fails if {
	check.deny == {"the nftables firewall is configured but not enabled (nftables.service is inactive)"} with input as facts({"backend": "nftables", "enabled": false, "default_input_policy": "drop", "allowed_ports": [], "source": "kernel", "unit": {"name": "nftables.service", "state": "inactive"}})
	check.deny == set() with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [], "source": "kernel", "unit": {"name": "nftables.service", "state": "active"}})
}

fam(name, filtered, policy) := {"family": name, "filtered": filtered, "default_input_policy": policy, "allowed_ports": [22], "source": "kernel"}

live(families, extra) := facts(object.union(
	{
		"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22], "source": "kernel",
		"unit": {"name": "nftables.service", "state": "active"}, "families": families,
	},
	extra,
))

test_pass_both_families_drop if {
	f := live([fam("ipv4", true, "drop"), fam("ipv6", true, "drop")], {"default_input_policy": "drop"})
	check.deny == set() with input as f
}

# table ip only, or iptables-nft without ip6tables: IPv6 has no input hook.
test_fail_ipv6_unfiltered if {
	f := live([fam("ipv4", true, "drop"), fam("ipv6", false, "accept")], {})
	check.deny == {"IPv6 is not filtered: no ip6 or inet table has a filter chain on the input hook, so every IPv6 port is open"} with input as f
}

test_fail_ipv4_unfiltered if {
	f := live([fam("ipv4", false, "accept"), fam("ipv6", true, "drop")], {})
	check.deny == {"IPv4 is not filtered: no ip or inet table has a filter chain on the input hook, so every IPv4 port is open"} with input as f
}

# ip6tables-nft leaves an empty table ip6 filter with an accepting INPUT.
test_fail_ipv6_accept_policy if {
	f := live([fam("ipv4", true, "drop"), fam("ipv6", true, "accept")], {})
	check.deny == {"the nftables firewall's default input policy for IPv6 is \"accept\"; want drop or reject"} with input as f
}

test_pass_ipv6_off if {
	off := {"enabled": false, "evidence": "disable_ipv6 is 1 in every entry of /proc/sys/net/ipv6/conf (all, default, lo)"}
	f := live([fam("ipv4", true, "drop"), fam("ipv6", false, "accept")], {"default_input_policy": "drop", "ipv6": off})
	check.deny == set() with input as f
	check.error == set() with input as f
}

# An image's file is judged with IPv6 on: the image says nothing of it.
test_fail_offline_file_ipv4_only if {
	f := facts({
		"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22], "source": "file", "path": "/etc/nftables.conf",
		"families": [object.union(fam("ipv4", true, "drop"), {"source": "file"}), object.union(fam("ipv6", false, "accept"), {"source": "file"})],
	})
	check.deny == {"IPv6 is not filtered: no ip6 or inet table has a filter chain on the input hook, so every IPv6 port is open"} with input as f
}

test_alike_families_keep_the_joined_words if {
	f := live([fam("ipv4", true, "accept"), fam("ipv6", true, "accept")], {})
	check.deny == {"the nftables firewall's default input policy is \"accept\"; want drop or reject"} with input as f
}

# A ruleset read from a file points at the line that sets the policy.
test_fail_accept_points_at_the_policy_line if {
	at := {"file": "/etc/nftables.conf", "line": 5}
	f := facts({
		"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22], "source": "file",
		"path": "/etc/nftables.conf", "policy_location": at,
	})
	check.deny == {{"msg": "the nftables firewall's default input policy is \"accept\"; want drop or reject", "file": "/etc/nftables.conf", "line": 5}} with input as f
}

test_fail_family_accept_points_at_its_policy_line if {
	ip6 := object.union(fam("ipv6", true, "accept"), {"source": "file", "policy_location": {"file": "/etc/nftables.d/v6.nft", "line": 4}})
	f := facts({
		"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22], "source": "file", "path": "/etc/nftables.conf",
		"families": [object.union(fam("ipv4", true, "drop"), {"source": "file"}), ip6],
	})
	check.deny == {{"msg": "the nftables firewall's default input policy for IPv6 is \"accept\"; want drop or reject", "file": "/etc/nftables.d/v6.nft", "line": 4}} with input as f
}
