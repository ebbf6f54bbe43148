package gpuhost.drift.config_files_test

import data.gpuhost.drift.config_files as check

a := "0000000000000000000000000000000000000000000000000000000000000000"

b := "1111111111111111111111111111111111111111111111111111111111111111"

manifest := {"schema": "gpuhost.manifest/v1", "config_files": [
	{"path": "/etc/ssh/sshd_config", "sha256": a},
	{"path": "/etc/containerd/config.toml", "sha256": b},
]}

test_pass_unchanged if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "config_files": [
		{"path": "/etc/containerd/config.toml", "sha256": b},
		{"path": "/etc/ssh/sshd_config", "sha256": a},
	]}
	check.deny == set() with input as f
}

test_fail_changed_gone_new if {
	f := {"target": {"kind": "rootfs"}, "manifest": manifest, "config_files": [
		{"path": "/etc/ssh/sshd_config", "sha256": b},
		{"path": "/etc/modprobe.d/evil.conf", "sha256": a},
	]}
	check.deny == {
		"/etc/ssh/sshd_config changed since the baseline: sha256 111111111111, baked 000000000000",
		"/etc/containerd/config.toml is in the baseline but gone",
		"/etc/modprobe.d/evil.conf is new since the baseline",
	} with input as f
}

test_fail_all_gone if {
	f := {"target": {"kind": "host"}, "manifest": manifest}
	count(check.deny) == 2 with input as f
}
