package gpuhost.net.exposed_listeners_test

import data.gpuhost.net.exposed_listeners as check

params := {"allowed_ports": [22]}

web := {"proto": "tcp", "address": "0.0.0.0", "port": 8080, "process": "python3"}

fw(extra) := object.union(
	{
		"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [22, 8080], "source": "kernel",
		"admits": [
			{"proto": "tcp", "from": 22, "to": 22, "rule": "inet filter input handle 4: tcp dport 22 accept"},
			{"proto": "tcp", "from": 8080, "to": 8080, "rule": "inet filter services handle 7: tcp dport @web accept"},
		],
	},
	extra,
)

facts(listening, firewall) := {"target": {"kind": "host"}, "network": {"listening": listening, "firewall": firewall}}

test_fail_listener_admitted_by_rule if {
	check.deny == {{"msg": "tcp 0.0.0.0 port 8080 (python3) is not in allowed_ports and is admitted by inet filter services handle 7: tcp dport @web accept", "subject": "tcp/8080"}} with input as facts([web], fw({}))
		with data.gpuhost.params as params
}

test_pass_allowed_loopback_and_dropped if {
	f := facts(
		[
			{"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": "sshd"},
			{"proto": "tcp", "address": "127.0.0.1", "port": 8080, "process": "python3"},
			{"proto": "udp6", "address": "::", "port": 5353, "process": "avahi-daemon"},
			{"proto": "tcp6", "address": "::", "port": 9000},
		],
		fw({}),
	)
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_policy_accept_and_no_firewall if {
	l := {"proto": "tcp6", "address": "::", "port": 9000}
	check.deny == {{"msg": "tcp6 :: port 9000 is not in allowed_ports and is admitted: the nftables firewall's input policy is accept", "subject": "tcp6/9000"}} with input as facts([l], fw({"default_input_policy": "accept"}))
		with data.gpuhost.params as params
	check.deny == {{"msg": "tcp6 :: port 9000 is not in allowed_ports and is admitted: no firewall is configured", "subject": "tcp6/9000"}} with input as facts([l], {"backend": "none", "enabled": false, "default_input_policy": "accept", "allowed_ports": []})
		with data.gpuhost.params as params
}

test_udp_listener_needs_a_udp_admit if {
	l := {"proto": "udp", "address": "0.0.0.0", "port": 8080}
	check.deny == set() with input as facts([l], fw({})) with data.gpuhost.params as params
}

test_error_kernel_unreadable if {
	f := facts([web], fw({"source": "file", "kernel_error": "opening netlink: operation not permitted"}))
	check.error == {"the kernel's ruleset could not be read (opening netlink: operation not permitted): which listeners it admits is unknown"} with input as f
		with data.gpuhost.params as params
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_error_unmodeled_may_admit if {
	l := {"proto": "tcp", "address": "10.0.0.5", "port": 5432, "process": "postgres"}
	f := facts([l], fw({"unmodeled": [{"rule": "inet filter input handle 9: ip saddr 10.0.0.0/8 accept", "reason": "cannot evaluate ip saddr", "may_accept": true}]}))
	check.error == {{"msg": "tcp 10.0.0.5 port 5432 (postgres) may be admitted by inet filter input handle 9: ip saddr 10.0.0.0/8 accept (cannot evaluate ip saddr)", "subject": "tcp/5432"}} with input as f
		with data.gpuhost.params as params
}

test_error_without_firewall_facts if {
	check.error == {"no firewall facts: which listeners are admitted is unknown"} with input as {"target": {"kind": "host"}, "network": {"listening": [web]}}
		with data.gpuhost.params as params
}

test_skip_offline_and_params if {
	check.skip == {"listening sockets are only observed on a live host; target kind is image"} with input as {"target": {"kind": "image"}, "network": {"listening": []}}
		with data.gpuhost.params as params
	check.deny == {"parameter allowed_ports is not set"} with input as facts([web], fw({})) with data.gpuhost.params as {}
}

fam(name, filtered, policy, admits) := {
	"family": name, "filtered": filtered, "default_input_policy": policy, "source": "kernel",
	"allowed_ports": [p | some a in admits; some p in numbers.range(a.from, a.to)], "admits": admits,
}

ssh_rule := {"proto": "tcp", "from": 22, "to": 22, "rule": "ip filter INPUT handle 3: tcp dport 22 accept"}

web_rule := {"proto": "tcp", "from": 8080, "to": 8080, "rule": "inet filter input handle 5: tcp dport 8080 accept"}

by_family(families, extra) := object.union(fw({"families": families, "default_input_policy": "accept"}), extra)

web6 := {"proto": "tcp6", "address": "::", "port": 8080, "process": "python3"}

# table ip only: an IPv6 socket on :: is reachable over IPv6 though IPv4
# drops its port.
test_fail_ipv6_reachable_without_ip6_table if {
	f := facts([web6], by_family([fam("ipv4", true, "drop", [ssh_rule]), fam("ipv6", false, "accept", [])], {}))
	check.deny == {{"msg": "tcp6 :: port 8080 (python3) is not in allowed_ports and is reachable over IPv6: no ip6 or inet table filters input", "subject": "tcp6/8080"}} with input as f
		with data.gpuhost.params as params
}

test_fail_each_family_named if {
	policy := {"proto": "tcp", "from": 1024, "to": 65535, "rule": "policy accept of ip6 filter input"}
	f := facts([web6], by_family([fam("ipv4", true, "drop", [web_rule]), fam("ipv6", true, "accept", [policy])], {}))
	check.deny == {
		{"msg": "tcp6 :: port 8080 (python3) is not in allowed_ports and is reachable over IPv4: admitted by inet filter input handle 5: tcp dport 8080 accept", "subject": "tcp6/8080"},
		{"msg": "tcp6 :: port 8080 (python3) is not in allowed_ports and is reachable over IPv6: admitted by policy accept of ip6 filter input", "subject": "tcp6/8080"},
	} with input as f
		with data.gpuhost.params as params
}

test_pass_ipv4_socket_ignores_ipv6 if {
	f := facts([web], by_family([fam("ipv4", true, "drop", [ssh_rule]), fam("ipv6", false, "accept", [])], {}))
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_pass_ipv6_off if {
	off := {"enabled": false, "evidence": "disable_ipv6 is 1 in every entry of /proc/sys/net/ipv6/conf (all, default, lo)"}
	f := facts([web6], by_family([fam("ipv4", true, "drop", [ssh_rule]), fam("ipv6", false, "accept", [])], {"ipv6": off}))
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_address_decides_the_family if {
	families := [fam("ipv4", true, "drop", [ssh_rule]), fam("ipv6", false, "accept", [])]
	mapped := {"proto": "tcp6", "address": "::ffff:10.0.0.5", "port": 8080}
	check.deny == set() with input as facts([mapped], by_family(families, {})) with data.gpuhost.params as params
	v6 := {"proto": "udp6", "address": "fd00::2", "port": 5353}
	check.deny == {{"msg": "udp6 fd00::2 port 5353 is not in allowed_ports and is reachable over IPv6: no ip6 or inet table filters input", "subject": "udp6/5353"}} with input as facts([v6], by_family(families, {}))
		with data.gpuhost.params as params
}

test_fail_no_firewall_by_family if {
	none := {
		"backend": "none", "enabled": false, "default_input_policy": "accept", "allowed_ports": [], "source": "kernel",
		"families": [fam("ipv4", false, "accept", []), fam("ipv6", false, "accept", [])],
	}
	check.deny == {{"msg": "tcp 0.0.0.0 port 8080 (python3) is not in allowed_ports and is reachable over IPv4: no firewall is configured", "subject": "tcp/8080"}} with input as facts([web], none)
		with data.gpuhost.params as params
}

test_error_unmodeled_names_the_family if {
	l := {"proto": "tcp6", "address": "fd00::2", "port": 5432, "process": "postgres"}
	u := {"rule": "ip6 filter INPUT handle 9: ip6 saddr fd00::/8 accept", "reason": "cannot evaluate ip6 saddr", "may_accept": true}
	f := facts([l], by_family([fam("ipv4", true, "drop", [ssh_rule]), fam("ipv6", true, "drop", [])], {"unmodeled": [u]}))
	check.error == {{"msg": "tcp6 fd00::2 port 5432 (postgres) may be reachable over IPv6: admitted by ip6 filter INPUT handle 9: ip6 saddr fd00::/8 accept (cannot evaluate ip6 saddr)", "subject": "tcp6/5432"}} with input as f
		with data.gpuhost.params as params
	check.deny == set() with input as f with data.gpuhost.params as params
}

# Destination NAT (issue 48): published ports, and listeners NAT hides.
nat_families(ipv4_extra, ipv6_extra) := [
	object.union(
		{
			"family": "ipv4", "filtered": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "kernel",
			"admits": [{"proto": "tcp", "from": 22, "to": 22, "rule": "inet filter input handle 4: tcp dport 22 accept"}],
		},
		ipv4_extra,
	),
	object.union(
		{
			"family": "ipv6", "filtered": true, "default_input_policy": "drop", "allowed_ports": [22], "source": "kernel",
			"admits": [{"proto": "tcp", "from": 22, "to": 22, "rule": "inet filter input handle 4: tcp dport 22 accept"}],
		},
		ipv6_extra,
	),
]

sshd := {"proto": "tcp6", "address": "::", "port": 22, "process": "sshd"}

redirect := {"proto": "tcp", "from": 2222, "to": 2222, "to_port": 22, "admitted": true, "rule": "ip nat pre handle 2: tcp dport 2222 redirect to :22"}

test_fail_port_redirected_onto_a_listener if {
	f := facts([sshd], fw({"families": nat_families({"published": [redirect]}, {})}))
	check.deny == {{
		"msg": "tcp port 2222 is not in allowed_ports and is reachable over IPv4: ip nat pre handle 2: tcp dport 2222 redirect to :22 sends it to tcp6 :: port 22 (sshd)",
		"subject": "tcp/2222",
	}} with input as f with data.gpuhost.params as params
}

test_pass_redirect_not_admitted_allowed_or_without_listener if {
	dropped := object.union(redirect, {"admitted": false})
	check.deny == set() with input as facts([sshd], fw({"families": nat_families({"published": [dropped]}, {})})) with data.gpuhost.params as params
	check.deny == set() with input as facts([sshd], fw({"families": nat_families({"published": [redirect]}, {})})) with data.gpuhost.params as {"allowed_ports": [22, 2222]}
	check.deny == set() with input as facts([web], fw({"families": nat_families({"published": [redirect]}, {})})) with data.gpuhost.params as params
}

test_fail_port_forwarded_to_another_address if {
	dnat := {"proto": "tcp", "from": 8000, "to": 8001, "to_address": "fd30::2", "to_port": 80, "admitted": true, "rule": "inet nat pre handle 3: tcp dport 8000-8001 dnat ip6 to [fd30::2]:80"}
	f := facts([], fw({"families": nat_families({}, {"published": [dnat]})}))
	check.deny == {{
		"msg": "tcp ports 8000-8001 are not in allowed_ports and are reachable over IPv6: inet nat pre handle 3: tcp dport 8000-8001 dnat ip6 to [fd30::2]:80 forwards them to [fd30::2]:80",
		"subject": "tcp/8000-8001",
	}} with input as f with data.gpuhost.params as params
}

test_same_port_redirect_names_the_listener if {
	same := {"proto": "tcp", "from": 8000, "to": 9000, "admitted": true, "rule": "ip nat pre handle 5: tcp dport 8000-9000 redirect"}
	f := facts([web, sshd], fw({"families": nat_families({"published": [same]}, {})}))
	check.deny == {{
		"msg": "tcp port 8080 is not in allowed_ports and is reachable over IPv4: ip nat pre handle 5: tcp dport 8000-9000 redirect sends it to tcp 0.0.0.0 port 8080 (python3)",
		"subject": "tcp/8080",
	}} with input as f with data.gpuhost.params as params
}

# A listener whose port NAT moves elsewhere is not reached as itself, even
# over a family no chain filters; a partial move leaves it reachable.
test_listener_behind_a_moved_port if {
	moved := {"proto": "tcp", "from": 8080, "to": 8080, "to_port": 22, "admitted": false, "rule": "inet nat pre handle 2: tcp dport 8080 redirect to :22"}
	open4 := {"filtered": false, "default_input_policy": "accept", "admits": []}
	check.deny == set() with input as facts([web], fw({"families": nat_families(object.union(open4, {"published": [moved]}), {})}))
		with data.gpuhost.params as params
	partial := object.union(moved, {"partial": true})
	check.deny == {{
		"msg": "tcp 0.0.0.0 port 8080 (python3) is not in allowed_ports and is reachable over IPv4: no ip or inet table filters input",
		"subject": "tcp/8080",
	}} with input as facts([web], fw({"families": nat_families(object.union(open4, {"published": [partial]}), {})}))
		with data.gpuhost.params as params
}

# An nftables view lists what its accepting policy admits: a port a rule
# drops before that policy is closed. ufw's views list nothing, and their
# policy speaks.
test_policy_accept_with_a_dropped_port if {
	accepting := {
		"default_input_policy": "accept",
		"admits": [{"proto": "tcp", "from": 0, "to": 8079, "rule": "policy accept of inet filter input"}],
	}
	check.deny == set() with input as facts([web], fw({"families": nat_families(accepting, {})})) with data.gpuhost.params as params
	ufw := {"backend": "ufw", "source": "file", "families": [{"family": "ipv4", "filtered": true, "default_input_policy": "accept", "allowed_ports": [], "source": "file"}]}
	check.deny == {{
		"msg": "tcp 0.0.0.0 port 8080 (python3) is not in allowed_ports and is reachable over IPv4: the ufw firewall's input policy for IPv4 is accept",
		"subject": "tcp/8080",
	}} with input as facts([web], fw(ufw)) with data.gpuhost.params as params
}
