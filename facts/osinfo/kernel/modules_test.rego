package gpuhost.kernel.modules_test

import data.gpuhost.kernel.modules as check

params := {"kernel_modules_disabled": ["cramfs", "usb-storage"]}

install(command) := {"install": {"command": command, "file": "/etc/modprobe.d/cis.conf", "line": 3}}

blacklist := {"blacklist": {"file": "/etc/modprobe.d/cis.conf", "line": 7}}

doc(modules) := {"kernel_modules": {"files": ["/etc/modprobe.d/cis.conf"], "modules": modules}}

live(modules, loaded) := {"kernel_modules": {"files": [], "modules": modules, "loaded": loaded}}

by_subject(findings) := {f.subject: f | some f in findings}

test_skip_without_params if {
	count(check.skip) == 1 with input as doc({}) with data.gpuhost.params as {}
	check.deny == set() with input as doc({}) with data.gpuhost.params as {}
}

test_pass_install_false_or_true if {
	check.deny == set() with input as doc({"cramfs": install("/bin/false"), "usb_storage": install("/bin/true")})
		with data.gpuhost.params as params
}

test_fail_missing if {
	f := by_subject(check.deny) with input as doc({"cramfs": install("/bin/false")}) with data.gpuhost.params as params
	f == {"usb-storage": {"msg": `usb-storage can be loaded: no modprobe.d file has "install usb-storage /bin/false"`, "subject": "usb-storage"}}
}

test_fail_blacklist_only_points_at_it if {
	f := by_subject(check.deny) with input as doc({"cramfs": blacklist, "usb_storage": install("/bin/true")})
		with data.gpuhost.params as params
	f.cramfs == {
		"msg": `cramfs can be loaded: no modprobe.d file has "install cramfs /bin/false", and its blacklist line keeps only its aliases from loading it`,
		"subject": "cramfs", "file": "/etc/modprobe.d/cis.conf", "line": 7,
	}
	count(f) == 1
}

test_fail_other_command if {
	f := by_subject(check.deny) with input as doc({"cramfs": install("/sbin/modprobe --ignore-install cramfs"), "usb_storage": install("/bin/false")})
		with data.gpuhost.params as params
	f.cramfs.msg == `cramfs can be loaded: its install line runs "/sbin/modprobe --ignore-install cramfs", not /bin/false or /bin/true`
	f.cramfs.line == 3
}

test_live_loaded if {
	f := by_subject(check.deny) with input as live({"cramfs": install("/bin/false")}, ["cramfs", "usb_storage"])
		with data.gpuhost.params as params
	f.cramfs.msg == "cramfs is loaded in the running kernel, though modprobe.d keeps it from loading again; unload it (modprobe -r cramfs) or reboot"
	f["usb-storage"].msg == `usb-storage can be loaded: no modprobe.d file has "install usb-storage /bin/false"; the running kernel has it loaded`
}

test_live_pass if {
	check.deny == set() with input as live({"cramfs": install("/bin/false"), "usb_storage": install("/bin/false")}, ["ext4"])
		with data.gpuhost.params as params
}
