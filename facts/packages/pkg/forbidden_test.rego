package gpuhost.pkg.forbidden_test

import data.gpuhost.pkg.forbidden

params := {"forbidden_packages": ["telnet", "xserver-xorg*"]}

pkgs(names) := [{"name": n, "version": "1", "arch": "amd64", "held": false, "line": i + 1} | some i, n in names]

test_pass_none_installed if {
	forbidden.deny == set() with input as {"packages": pkgs(["sudo", "telnetd"])} with data.gpuhost.params as params
}

test_fail_by_name_and_glob if {
	f := {"packages": pkgs(["sudo", "xserver-xorg-core", "xserver-xorg-video-nvidia", "telnet"])}
	forbidden.deny == {
		{
			"msg": "xserver-xorg-core, xserver-xorg-video-nvidia is installed (params.forbidden_packages: xserver-xorg*)",
			"subject": "xserver-xorg*", "file": "/var/lib/dpkg/status", "line": 2,
		},
		{
			"msg": "telnet is installed (params.forbidden_packages: telnet)",
			"subject": "telnet", "file": "/var/lib/dpkg/status", "line": 4,
		},
	} with input as f with data.gpuhost.params as params
}

test_pass_without_params if {
	forbidden.deny == set() with input as {"packages": pkgs(["telnet"])} with data.gpuhost.params as {}
}
