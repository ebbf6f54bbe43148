package gpuhost.cgroup.memory_controller_test

import data.gpuhost.cgroup.memory_controller as check

host(memory) := {"target": {"kind": "host"}, "cgroup": {"version": 2, "source": "statfs", "memory": memory}}

test_pass_enabled if {
	check.deny == set() with input as host({"controller_enabled": true, "slices": []})
	check.error == set() with input as host({"controller_enabled": true, "slices": []})
}

test_fail_disabled if {
	count(check.deny) == 1 with input as host({"controller_enabled": false, "slices": []})
}

test_error_unknown if {
	count(check.error) == 1 with input as host({"slices": []})
}

test_skip_v1 if {
	count(check.skip) == 1 with input as {"target": {"kind": "host"}, "cgroup": {"version": 1, "source": "statfs"}}
}
