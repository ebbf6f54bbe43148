package gpuhost.kernel.sysctl_test

import data.gpuhost.kernel.sysctl as check

params := {"sysctl_values": {"net.ipv4.ip_forward": "0", "net.ipv4.conf.all.rp_filter": 1}}

at(value, line) := {"value": value, "file": "/etc/sysctl.d/60-cis.conf", "line": line}

doc(configured) := {"sysctl": {"files": [], "configured": configured, "globs": [], "excluded": {}}}

live(configured, running) := {"sysctl": {"files": [], "configured": configured, "globs": [], "excluded": {}, "running": running}}

by_subject(findings) := {f.subject: f | some f in findings}

test_skip_without_params if {
	count(check.skip) == 1 with input as doc({}) with data.gpuhost.params as {"sysctl_values": {}}
}

test_pass_configured if {
	check.deny == set() with input as doc({"net.ipv4.ip_forward": at("0", 1), "net.ipv4.conf.all.rp_filter": at("1", 2)})
		with data.gpuhost.params as params
}

test_numbers_compare_as_the_kernel_reads_them if {
	check.deny == set() with input as doc({"net.ipv4.ip_forward": at("00", 1), "net.ipv4.conf.all.rp_filter": at(" 1", 2)})
		with data.gpuhost.params as params
	check.deny == set() with input as doc({"kernel.printk": at("3  4 1\t7", 1)})
		with data.gpuhost.params as {"sysctl_values": {"kernel.printk": "3 4 1 7"}}
}

test_fail_wrong_and_unset_offline if {
	f := by_subject(check.deny) with input as doc({"net.ipv4.ip_forward": at("1", 4)}) with data.gpuhost.params as params
	f["net.ipv4.ip_forward"] == {
		"msg": "net.ipv4.ip_forward is configured 1 at /etc/sysctl.d/60-cis.conf:4; want 0",
		"subject": "net.ipv4.ip_forward", "file": "/etc/sysctl.d/60-cis.conf", "line": 4,
	}
	f["net.ipv4.conf.all.rp_filter"] == {
		"msg": "net.ipv4.conf.all.rp_filter is not set in any sysctl.d file or /etc/sysctl.conf; want 1",
		"subject": "net.ipv4.conf.all.rp_filter",
	}
}

test_globs_and_exclusions if {
	input_doc := {"sysctl": {
		"files": [],
		"configured": {"net.ipv4.ip_forward": at("0", 1)},
		"globs": [
			{"pattern": "net.ipv4.conf.*.rp_filter", "value": "1", "file": "/usr/lib/sysctl.d/50-default.conf", "line": 20},
			{"pattern": "net.ipv4.conf.a*.rp_filter", "value": "2", "file": "/etc/sysctl.d/70-x.conf", "line": 2},
		],
		"excluded": {},
	}}
	f := by_subject(check.deny) with input as input_doc with data.gpuhost.params as params
	f == {"net.ipv4.conf.all.rp_filter": {
		"msg": "net.ipv4.conf.all.rp_filter is configured 2 by net.ipv4.conf.a*.rp_filter at /etc/sysctl.d/70-x.conf:2; want 1",
		"subject": "net.ipv4.conf.all.rp_filter", "file": "/etc/sysctl.d/70-x.conf", "line": 2,
	}}
	excluded := json.patch(input_doc, [{"op": "add", "path": "/sysctl/excluded", "value": {"net.ipv4.conf.all.rp_filter": {"file": "/usr/lib/sysctl.d/50-default.conf", "line": 21}}}])
	g := by_subject(check.deny) with input as excluded with data.gpuhost.params as params
	g["net.ipv4.conf.all.rp_filter"].msg == "net.ipv4.conf.all.rp_filter is not set in any sysctl.d file or /etc/sysctl.conf; want 1"
}

test_live_says_which_differs if {
	f := by_subject(check.deny) with input as live(
		{"net.ipv4.ip_forward": at("0", 1), "net.ipv4.conf.all.rp_filter": at("2", 2)},
		{"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.rp_filter": "1"},
	)
		with data.gpuhost.params as params
	f["net.ipv4.ip_forward"].msg == "net.ipv4.ip_forward differs in the running kernel: it is configured 0 at /etc/sysctl.d/60-cis.conf:1 and runs as 1; want 0"
	f["net.ipv4.conf.all.rp_filter"].msg == "net.ipv4.conf.all.rp_filter differs in its configuration: it is configured 2 at /etc/sysctl.d/60-cis.conf:2 and runs as 1; want 1"
}

test_live_both_differ if {
	f := by_subject(check.deny) with input as live({}, {"net.ipv4.ip_forward": "1"}) with data.gpuhost.params as params
	f["net.ipv4.ip_forward"].msg == "net.ipv4.ip_forward differs in its configuration and in the running kernel: it is not set in any sysctl.d file or /etc/sysctl.conf and runs as 1; want 0"
	f["net.ipv4.conf.all.rp_filter"].msg == "net.ipv4.conf.all.rp_filter differs in its configuration and in the running kernel: it is not set in any sysctl.d file or /etc/sysctl.conf and is not in the running kernel; want 1"
}

test_live_pass if {
	check.deny == set() with input as live(
		{"net.ipv4.ip_forward": at("0", 1), "net.ipv4.conf.all.rp_filter": at("1", 2)},
		{"net.ipv4.ip_forward": "0", "net.ipv4.conf.all.rp_filter": "1"},
	)
		with data.gpuhost.params as params
}
