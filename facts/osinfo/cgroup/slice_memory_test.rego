package gpuhost.cgroup.slice_memory_test

import data.gpuhost.cgroup.slice_memory as check

doc(slices) := {"cgroup": {"version": 2, "source": "statfs", "memory": {"slices": slices}}}

user(mem_max, mem_high) := {"name": "user.slice", "memory_max": mem_max, "memory_high": mem_high, "source": "cgroup"}

msgs(findings) := {f.msg | some f in findings}

test_skip_without_params if {
	count(check.skip) == 1 with input as doc([user("max", "max")]) with data.gpuhost.params as {}
}

test_pass_limited if {
	check.deny == set() with input as doc([user("32G", "")]) with data.gpuhost.params as {"slice_memory_limits": ["user.slice"]}
	check.deny == set() with input as doc([user("max", "30G")]) with data.gpuhost.params as {"slice_memory_limits": ["user.slice"]}
}

test_fail_unlimited if {
	msgs(check.deny) == {`user.slice has no memory limit (MemoryMax "max", MemoryHigh "max", from cgroup)`} with input as doc([user("max", "max")]) with data.gpuhost.params as {"slice_memory_limits": ["user.slice"]}
}

test_fail_missing_slice if {
	msgs(check.deny) == {"machine.slice was not found, so it has no memory limit"} with input as doc([user("1G", "")]) with data.gpuhost.params as {"slice_memory_limits": ["machine.slice"]}
}

test_error_when_not_read if {
	count(check.error) == 1 with input as {"cgroup": {"version": 1, "source": "statfs"}} with data.gpuhost.params as {"slice_memory_limits": ["user.slice"]}
}
