package gpuhost.runtime.containerd_systemd_cgroup_test

import data.gpuhost.runtime.containerd_systemd_cgroup as check

why := "GPU containers lose their devices when systemd reloads (NVIDIA/nvidia-docker#1788)"

facts(nvidia, runc_sc, nvidia_sc) := {"target": {"kind": "host"}, "container_runtime": {
	"containerd": {
		"config_path": "/etc/containerd/config.toml",
		"nvidia_runtime": nvidia,
		"default_runtime": "nvidia",
		"systemd_cgroup": runc_sc,
		"nvidia_systemd_cgroup": nvidia_sc,
	},
	"cdi_specs": [],
}}

test_pass_both_true if {
	check.deny == set() with input as facts(true, true, true)
	check.skip == set() with input as facts(true, true, true)
}

test_pass_no_nvidia_runtime if {
	check.deny == set() with input as facts(false, true, null)
}

test_fail_unset if {
	check.deny == {
		sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is unset for the default runtime; %s", [why]),
		sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is unset for the nvidia runtime; %s", [why]),
	} with input as facts(true, null, null)
}

test_fail_false_nvidia if {
	check.deny == {sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is false for the nvidia runtime; %s", [why])} with input as facts(true, true, false)
}

test_fail_missing_field if {
	check.deny == {sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is unset for the default runtime; %s", [why])} with input as {"target": {"kind": "image"}, "container_runtime": {"containerd": {"config_path": "/etc/containerd/config.toml", "nvidia_runtime": false}}}
}

test_skip_no_containerd if {
	check.skip == {"containerd is not configured"} with input as {"target": {"kind": "image"}, "container_runtime": {"cdi_specs": []}}
}

# With the lines known, each finding points at the line that set it: the
# nvidia runtime's in the import that defines it.
test_fail_points_at_the_setting if {
	located := json.patch(facts(true, false, null), [{
		"op": "add", "path": "/container_runtime/containerd/locations",
		"value": {
			"systemd_cgroup": {"file": "/etc/containerd/config.toml", "line": 25},
			"nvidia_systemd_cgroup": {"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 16},
		},
	}])
	check.deny == {
		{
			"msg": sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is false for the default runtime; %s", [why]),
			"file": "/etc/containerd/config.toml", "line": 25,
		},
		{
			"msg": sprintf("containerd (/etc/containerd/config.toml): SystemdCgroup is unset for the nvidia runtime; %s", [why]),
			"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 16,
		},
	} with input as located
}
