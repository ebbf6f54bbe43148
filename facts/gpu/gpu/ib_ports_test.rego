package gpuhost.gpu.ib_ports_test

import data.gpuhost.gpu.ib_ports as check

port(dev, n, over) := object.union(
	{"device": dev, "port": n, "state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 400, "link_layer": "InfiniBand", "link_downed": 0},
	over,
)

host(ports) := {"infiniband": {"ports": ports, "peermem": true}}

test_pass if {
	check.deny == set() with input as host([port("mlx5_0", 1, {}), port("mlx5_1", 1, {})])
	check.error == set() with input as host([port("mlx5_0", 1, {})])
}

test_fail_down_and_polling if {
	check.deny == {
		{"msg": "InfiniBand port mlx5_1/1 is DOWN (Polling), not ACTIVE (LinkUp)", "subject": "mlx5_1/1"},
		{"msg": "InfiniBand port mlx5_2/1 is INIT (LinkUp), not ACTIVE (LinkUp)", "subject": "mlx5_2/1"},
	} with input as host([
		port("mlx5_0", 1, {}),
		port("mlx5_1", 1, {"state": "DOWN", "phys_state": "Polling"}),
		port("mlx5_2", 1, {"state": "INIT"}),
	])
}

test_ignored_ports_are_not_judged if {
	check.deny == set() with input as host([port("mlx5_0", 2, {"state": "DOWN", "phys_state": "Disabled"})])
		with data.gpuhost.params.ib_ports_ignored as ["mlx5_0/2"]
}

test_rate_and_flaps_from_params if {
	slow := host([port("mlx5_0", 1, {"rate_gbps": 200, "link_downed": 7})])
	check.deny == set() with input as slow
	check.deny == {
		{"msg": "InfiniBand port mlx5_0/1 runs at 200 Gb/s, below params.ib_min_rate_gbps (400)", "subject": "mlx5_0/1"},
		{"msg": "InfiniBand port mlx5_0/1 went down 7 times, above params.ib_link_downed_max (2)", "subject": "mlx5_0/1"},
	} with input as slow
		with data.gpuhost.params.ib_min_rate_gbps as 400
		with data.gpuhost.params.ib_link_downed_max as 2
}

test_error_unreadable if {
	bad := port("mlx5_0", 1, {"error": "x"})
	check.error == {{"msg": "InfiniBand port mlx5_0/1 could not be read: x", "subject": "mlx5_0/1"}} with input as host([bad])
	check.deny == set() with input as host([bad])
}
