package gpuhost.net.lib_test

import data.gpuhost.net.lib

test_loopback if {
	lib.loopback("127.0.0.53")
	lib.loopback("::1")
	lib.loopback("::ffff:127.0.0.1")
	not lib.loopback("0.0.0.0")
	not lib.loopback("::")
}

test_owner if {
	lib.owner("sshd") == " (sshd)"
	lib.owner("") == ""
}

test_firewall_none_is_null if {
	lib.firewall == null with input as {"network": {"firewall": {"backend": "none"}}}
	lib.firewall == null with input as {}
	lib.firewall.backend == "ufw" with input as {"network": {"firewall": {"backend": "ufw"}}}
}

fam(name, filtered, policy) := {"family": name, "filtered": filtered, "default_input_policy": policy, "allowed_ports": [], "source": "kernel"}

fw_with(families, extra) := {"network": {"firewall": object.union(
	{"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [], "families": families},
	extra,
)}}

test_listener_families if {
	lib.listener_families("tcp", "0.0.0.0") == {"ipv4"}
	lib.listener_families("udp", "10.0.0.5") == {"ipv4"}
	lib.listener_families("tcp6", "::") == {"ipv4", "ipv6"}
	lib.listener_families("udp6", "::") == {"ipv4", "ipv6"}
	lib.listener_families("tcp6", "::ffff:10.0.0.5") == {"ipv4"}
	lib.listener_families("tcp6", "fd00::2") == {"ipv6"}
	lib.listener_families("tcp6", "fe80::1") == {"ipv6"}
}

test_judged_families if {
	both := [fam("ipv4", true, "drop"), fam("ipv6", false, "accept")]
	lib.judged == {"ipv4", "ipv6"} with input as fw_with(both, {})
	lib.judged == {"ipv4", "ipv6"} with input as fw_with(both, {"ipv6": {"enabled": true, "evidence": "IPv6 addresses on eth0 (/proc/net/if_inet6)"}})
	lib.judged == {"ipv4"} with input as fw_with(both, {"ipv6": {"enabled": false, "evidence": "no interface but lo has an IPv6 address (/proc/net/if_inet6)"}})
	lib.judged == set() with input as fw_with([], {})
	lib.judged == set() with input as {}
}

test_families_alike if {
	lib.families_alike with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", true, "DROP")], {})
	not lib.families_alike with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", false, "accept")], {})
	not lib.families_alike with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", true, "accept")], {})
	lib.families_alike with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", false, "accept")], {"ipv6": {"enabled": false, "evidence": "x"}})
	lib.families_alike with input as fw_with([], {})
	lib.joined_policy == "drop" with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", true, "DROP")], {})
	lib.joined_policy == "accept" with input as fw_with([fam("ipv4", true, "drop"), fam("ipv6", false, "accept")], {"default_input_policy": "accept"})
}

test_open_families if {
	f := [fam("ipv4", true, "accept"), fam("ipv6", false, "accept")]
	lib.open_families == {
		"ipv4": "the nftables firewall's input policy for IPv4 is accept",
		"ipv6": "no ip6 or inet table filters input",
	} with input as fw_with(f, {})
	lib.open_families.ipv6 == "no firewall is configured" with input as fw_with(f, {"backend": "none"})
	lib.open_families == {} with input as fw_with([fam("ipv4", true, "drop")], {})
	lib.open_families == {} with input as {}
}

test_places if {
	f := fw_with(
		[object.union(fam("ipv4", true, "accept"), {"policy_location": {"file": "/etc/nftables.conf", "line": 5}}), fam("ipv6", false, "accept")],
		{
			"policy_location": {"file": "/etc/nftables.conf", "line": 5},
			"admits": [
				{"proto": "tcp", "from": 22, "to": 22, "rule": "inet filter input handle 4: tcp dport 22 accept"},
				{"proto": "tcp", "from": 80, "to": 90, "rule": "/etc/nftables.conf:6: tcp dport 80-90 accept", "file": "/etc/nftables.conf", "line": 6},
			],
		},
	)
	lib.policy_place == {"file": "/etc/nftables.conf", "line": 5} with input as f
	lib.family_policy_place == {"ipv4": {"file": "/etc/nftables.conf", "line": 5}, "ipv6": lib.nowhere} with input as f
	lib.rule_place(85) == {"file": "/etc/nftables.conf", "line": 6} with input as f
	lib.rule_place(22) == lib.nowhere with input as f
	lib.policy_place == lib.nowhere with input as fw_with([], {})
	lib.policy_place == lib.nowhere with input as {}
}
