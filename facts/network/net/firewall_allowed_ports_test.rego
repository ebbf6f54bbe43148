package gpuhost.net.firewall_allowed_ports_test

import data.gpuhost.net.firewall_allowed_ports as check

params := {"allowed_ports": [22]}

facts(ports) := {"target": {"kind": "image"}, "network": {"listening": [], "firewall": {"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": ports}}}

test_pass_only_allowed if {
	check.deny == set() with input as facts([22]) with data.gpuhost.params as params
	check.deny == set() with input as facts([]) with data.gpuhost.params as params
	check.skip == set() with input as facts([22]) with data.gpuhost.params as params
}

test_fail_extra_ports if {
	check.deny == {
		{"msg": "the nftables firewall accepts inbound port 80, which is not in allowed_ports", "subject": "port/80"},
		{"msg": "the nftables firewall accepts inbound port 6443, which is not in allowed_ports", "subject": "port/6443"},
	} with input as facts([22, 80, 6443]) with data.gpuhost.params as params
}

test_skip_no_firewall if {
	check.skip == {"no firewall is configured"} with input as {"target": {"kind": "rootfs"}, "network": {"listening": [], "firewall": {"backend": "none", "enabled": false, "default_input_policy": "accept", "allowed_ports": []}}}
		with data.gpuhost.params as params
	check.skip == {"no firewall is configured"} with input as {"target": {"kind": "rootfs"}, "network": {"listening": []}}
		with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter allowed_ports is not set"} with input as facts([22]) with data.gpuhost.params as {}
}

test_fail_policy_accept if {
	f := {"target": {"kind": "host"}, "network": {"listening": [], "firewall": {"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22], "source": "kernel"}}}
	check.deny == {"the nftables firewall's input policy is accept: every port is open"} with input as f with data.gpuhost.params as params
}

test_error_unmodeled_rule_that_may_accept if {
	f := {"target": {"kind": "host"}, "network": {"listening": [], "firewall": {
		"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "kernel",
		"unmodeled": [
			{"rule": "inet filter input handle 9: ip saddr 10.0.0.0/8 accept", "reason": "cannot evaluate ip saddr", "may_accept": true},
			{"rule": "inet filter input handle 3: ip saddr 192.0.2.1 drop", "reason": "cannot evaluate ip saddr", "may_accept": false},
		],
	}}}
	check.error == {"inet filter input handle 9: ip saddr 10.0.0.0/8 accept may accept ports that cannot be listed (cannot evaluate ip saddr)"} with input as f with data.gpuhost.params as params
	check.deny == set() with input as f with data.gpuhost.params as params
}

fam(name, filtered, policy, ports) := {"family": name, "filtered": filtered, "default_input_policy": policy, "allowed_ports": ports, "source": "kernel"}

live(families, extra) := {"target": {"kind": "host"}, "network": {"listening": [], "firewall": object.union(
	{"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22, 80], "source": "kernel", "families": families},
	extra,
)}}

test_fail_ipv6_unfiltered_every_port_open if {
	f := live([fam("ipv4", true, "drop", [22]), fam("ipv6", false, "accept", [])], {})
	check.deny == {"every port is open over IPv6: no ip6 or inet table filters input"} with input as f with data.gpuhost.params as params
}

test_fail_ipv6_policy_accept if {
	f := live([fam("ipv4", true, "drop", [22]), fam("ipv6", true, "accept", [22])], {})
	check.deny == {"every port is open over IPv6: the nftables firewall's input policy for IPv6 is accept"} with input as f with data.gpuhost.params as params
}

test_fail_port_of_one_family_is_named if {
	f := live([fam("ipv4", true, "drop", [22, 80]), fam("ipv6", true, "drop", [22, 443])], {"default_input_policy": "drop"})
	check.deny == {
		{"msg": "the nftables firewall accepts inbound port 80 over IPv4, which is not in allowed_ports", "subject": "port/80"},
		{"msg": "the nftables firewall accepts inbound port 443 over IPv6, which is not in allowed_ports", "subject": "port/443"},
	} with input as f with data.gpuhost.params as params
}

test_fail_port_of_both_families_keeps_the_joined_words if {
	f := live([fam("ipv4", true, "drop", [22, 80]), fam("ipv6", true, "drop", [22, 80])], {"default_input_policy": "drop"})
	check.deny == {{"msg": "the nftables firewall accepts inbound port 80, which is not in allowed_ports", "subject": "port/80"}} with input as f
		with data.gpuhost.params as params
}

test_pass_ipv6_off if {
	off := {"enabled": false, "evidence": "/proc/net/if_inet6 does not exist: the kernel has no IPv6 (the ipv6 module is absent or ipv6.disable=1)"}
	f := live([fam("ipv4", true, "drop", [22]), fam("ipv6", false, "accept", [8080])], {"default_input_policy": "drop", "ipv6": off})
	check.deny == set() with input as f with data.gpuhost.params as params
}

# A ruleset read from a file points each port at the first rule that admits
# it, and an open policy at the line that sets it.
test_fail_points_at_the_rule_and_the_policy if {
	fw := {
		"backend": "nftables", "enabled": true, "default_input_policy": "accept", "allowed_ports": [22, 80], "source": "file",
		"path": "/etc/nftables.conf", "policy_location": {"file": "/etc/nftables.conf", "line": 5},
		"admits": [
			{"proto": "tcp", "from": 1, "to": 21, "rule": "policy accept of inet filter input", "file": "/etc/nftables.conf", "line": 5},
			{"proto": "tcp", "from": 22, "to": 22, "rule": "/etc/nftables.conf:6: tcp dport 22 accept", "file": "/etc/nftables.conf", "line": 6},
			{"proto": "tcp", "from": 80, "to": 80, "rule": "/etc/nftables.conf:7: tcp dport 80 accept", "file": "/etc/nftables.conf", "line": 7},
			{"proto": "udp", "from": 80, "to": 80, "rule": "/etc/nftables.conf:9: udp dport 80 accept", "file": "/etc/nftables.conf", "line": 9},
		],
	}
	check.deny == {
		{"msg": "the nftables firewall accepts inbound port 80, which is not in allowed_ports", "subject": "port/80", "file": "/etc/nftables.conf", "line": 7},
		{"msg": "the nftables firewall's input policy is accept: every port is open", "file": "/etc/nftables.conf", "line": 5},
	} with input as {"target": {"kind": "image"}, "network": {"listening": [], "firewall": fw}}
		with data.gpuhost.params as params
}

test_fail_family_policy_accept_points_at_its_line if {
	ip6 := object.union(fam("ipv6", true, "accept", [22]), {"policy_location": {"file": "/etc/nftables.conf", "line": 12}})
	f := live([fam("ipv4", true, "drop", [22]), ip6], {})
	check.deny == {{"msg": "every port is open over IPv6: the nftables firewall's input policy for IPv6 is accept", "file": "/etc/nftables.conf", "line": 12}} with input as f
		with data.gpuhost.params as params
}

# A run of ports is one finding, however many ports it opens, and an
# allowed port inside it cuts it in two.
test_fail_run_is_one_finding if {
	fw := {
		"backend": "nftables", "enabled": true, "default_input_policy": "drop", "source": "kernel",
		"allowed_ports": [], "allowed_port_ranges": [{"from": 1, "to": 65535}],
	}
	check.deny == {
		{"msg": "the nftables firewall accepts inbound ports 1-21, none of which is in allowed_ports", "subject": "ports/1-21"},
		{"msg": "the nftables firewall accepts inbound ports 23-65535, none of which is in allowed_ports", "subject": "ports/23-65535"},
	} with input as {"target": {"kind": "host"}, "network": {"listening": [], "firewall": fw}}
		with data.gpuhost.params as params
}

# Facts from before the runs list the ports; consecutive ones are one run.
test_fail_listed_ports_join_into_runs if {
	check.deny == {
		{"msg": "the nftables firewall accepts inbound ports 80-82, none of which is in allowed_ports", "subject": "ports/80-82"},
		{"msg": "the nftables firewall accepts inbound port 6443, which is not in allowed_ports", "subject": "port/6443"},
	} with input as facts([6443, 22, 81, 80, 82, 80]) with data.gpuhost.params as params
}

# Where the families admit overlapping runs, each part is said with the
# families that admit it.
test_fail_family_runs_are_cut_where_the_families_differ if {
	ip4 := object.union(fam("ipv4", true, "drop", []), {"allowed_port_ranges": [{"from": 22, "to": 22}, {"from": 8000, "to": 8010}]})
	ip6 := object.union(fam("ipv6", true, "drop", []), {"allowed_port_ranges": [{"from": 8005, "to": 8020}]})
	f := live([ip4, ip6], {"default_input_policy": "drop"})
	check.deny == {
		{"msg": "the nftables firewall accepts inbound ports 8000-8004 over IPv4, none of which is in allowed_ports", "subject": "ports/8000-8004"},
		{"msg": "the nftables firewall accepts inbound ports 8005-8010, none of which is in allowed_ports", "subject": "ports/8005-8010"},
		{"msg": "the nftables firewall accepts inbound ports 8011-8020 over IPv6, none of which is in allowed_ports", "subject": "ports/8011-8020"},
	} with input as f with data.gpuhost.params as params
}

# Destination NAT (issue 48): what a nat rule publishes is open, named by
# the families that publish it.
nat_fw(v4, v6) := {"target": {"kind": "image"}, "network": {"listening": [], "firewall": {
	"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "file",
	"families": [
		{"family": "ipv4", "filtered": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "file", "published": v4},
		{"family": "ipv6", "filtered": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "file", "published": v6},
	],
}}}

test_fail_published_ports if {
	redirect := {"proto": "tcp", "from": 2222, "to": 2222, "to_port": 22, "admitted": true, "rule": "/etc/nftables.conf:9: tcp dport 2222 redirect to :22", "file": "/etc/nftables.conf", "line": 9}
	dnat := {"proto": "tcp", "from": 8000, "to": 8010, "to_address": "10.30.0.2", "to_port": 80, "admitted": true, "rule": "/etc/nftables.conf:10: tcp dport 8000-8010 dnat ip to 10.30.0.2:80", "file": "/etc/nftables.conf", "line": 10}
	check.deny == {
		{
			"msg": "the nftables firewall redirects inbound tcp port 2222 to port 22 (/etc/nftables.conf:9: tcp dport 2222 redirect to :22), which is not in allowed_ports",
			"subject": "port/2222", "file": "/etc/nftables.conf", "line": 9,
		},
		{
			"msg": "the nftables firewall forwards inbound tcp ports 8000-8010 over IPv4 to 10.30.0.2:80 (/etc/nftables.conf:10: tcp dport 8000-8010 dnat ip to 10.30.0.2:80), none of which is in allowed_ports",
			"subject": "ports/8000-8010", "file": "/etc/nftables.conf", "line": 10,
		},
	} with input as nat_fw([redirect, dnat], [redirect]) with data.gpuhost.params as params
}

test_pass_published_but_dropped_or_allowed if {
	redirect := {"proto": "tcp", "from": 2222, "to": 2222, "to_port": 22, "admitted": true, "rule": "ip nat pre handle 2: tcp dport 2222 redirect to :22"}
	check.deny == set() with input as nat_fw([object.union(redirect, {"admitted": false})], []) with data.gpuhost.params as params
	check.deny == set() with input as nat_fw([redirect], [redirect]) with data.gpuhost.params as {"allowed_ports": [22, 2222]}
}
