package gpuhost.runtime.docker_systemd_cgroup_test

import data.gpuhost.runtime.docker_systemd_cgroup as check

facts(driver) := {"target": {"kind": "image"}, "container_runtime": {
	"docker": {
		"config_path": "/etc/docker/daemon.json",
		"default_runtime": "nvidia",
		"runtimes": ["nvidia"],
		"cgroup_driver": driver,
	},
	"cdi_specs": [],
}}

test_pass_systemd if {
	check.deny == set() with input as facts("systemd")
	check.skip == set() with input as facts("systemd")
}

test_pass_unset_on_v2 if {
	check.deny == set() with input as object.union(facts(""), {"cgroup": {"version": 2, "source": "default"}})
}

test_fail_cgroupfs if {
	check.deny == {"docker (/etc/docker/daemon.json) uses the cgroupfs cgroup driver; want systemd"} with input as object.union(facts("cgroupfs"), {"cgroup": {"version": 2, "source": "default"}})
}

test_fail_unset_on_v1 if {
	msg := "docker (/etc/docker/daemon.json) sets no cgroup driver and cgroup v2 is not known to be in use, so dockerd uses cgroupfs; want systemd"
	check.deny == {msg} with input as object.union(facts(""), {"cgroup": {"version": 1, "source": "cmdline"}})
	check.deny == {msg} with input as facts("")
}

test_skip_no_docker if {
	check.skip == {"docker is not configured"} with input as {"target": {"kind": "image"}, "container_runtime": {"cdi_specs": []}}
}

test_fail_cgroupfs_points_at_its_line if {
	f := object.union(facts("cgroupfs"), {"container_runtime": {"docker": {"locations": {"cgroup_driver": {"file": "/etc/docker/daemon.json", "line": 2}}}}})
	check.deny == {{
		"msg": "docker (/etc/docker/daemon.json) uses the cgroupfs cgroup driver; want systemd",
		"file": "/etc/docker/daemon.json",
		"line": 2,
	}} with input as f
}
