package gpuhost.net.allowed_ports_test

import data.gpuhost.net.allowed_ports as check

params := {"allowed_ports": [22, 443]}

facts(listening) := {"target": {"kind": "host"}, "network": {"listening": listening}}

test_pass_allowed_and_loopback if {
	f := facts([
		{"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": "sshd"},
		{"proto": "tcp6", "address": "::", "port": 443, "process": "nginx"},
		{"proto": "tcp", "address": "127.0.0.53", "port": 53, "process": "systemd-resolve"},
		{"proto": "tcp6", "address": "::1", "port": 631},
		{"proto": "tcp6", "address": "::ffff:127.0.0.1", "port": 9000},
	])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_unexpected_ports if {
	f := facts([
		{"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": "sshd"},
		{"proto": "tcp", "address": "10.0.0.5", "port": 8080, "process": "python3"},
		{"proto": "udp", "address": "0.0.0.0", "port": 5353},
	])
	check.deny == {
		{"msg": "tcp 10.0.0.5 port 8080 (python3) is listening and not in allowed_ports", "subject": "tcp/8080"},
		{"msg": "udp 0.0.0.0 port 5353 is listening and not in allowed_ports", "subject": "udp/5353"},
	} with input as f with data.gpuhost.params as params
}

test_skip_offline if {
	check.skip == {"listening sockets are only observed on a live host; target kind is rootfs"} with input as {"target": {"kind": "rootfs"}, "network": {"listening": []}}
		with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter allowed_ports is not set"} with input as facts([{"proto": "tcp", "address": "0.0.0.0", "port": 8080}])
		with data.gpuhost.params as {}
}
