package gpuhost.cgroup.v2_test

import data.gpuhost.cgroup.v2 as check

test_pass_v2 if {
	check.deny == set() with input as {"target": {"kind": "host"}, "cgroup": {"version": 2, "source": "statfs /sys/fs/cgroup"}}
}

test_fail_v1 if {
	check.deny == {"cgroup v1 is in use (from /etc/default/grub: systemd.unified_cgroup_hierarchy=0); want the unified cgroup v2 hierarchy"} with input as {"target": {"kind": "image"}, "cgroup": {"version": 1, "source": "/etc/default/grub: systemd.unified_cgroup_hierarchy=0"}}
}

test_fail_v1_points_at_the_grub_line if {
	f := {
		"target": {"kind": "image"},
		"cgroup": {"version": 1, "source": "/etc/default/grub: systemd.unified_cgroup_hierarchy=0"},
		"kernel": {"cmdline": ["systemd.unified_cgroup_hierarchy=0"], "cmdline_locations": {"systemd.unified_cgroup_hierarchy": {"file": "/etc/default/grub", "line": 4}}},
	}
	check.deny == {{
		"msg": "cgroup v1 is in use (from /etc/default/grub: systemd.unified_cgroup_hierarchy=0); want the unified cgroup v2 hierarchy",
		"file": "/etc/default/grub",
		"line": 4,
	}} with input as f
}
