package gpuhost.audit.kernel_rules_test

import data.gpuhost.audit.kernel_rules

matched := {"rules": [], "unloaded": [], "unexpected": [], "not_compared": 0}

test_matched_passes if {
	kernel_rules.deny == set() with input as {"audit": {"kernel": matched}}
	kernel_rules.error == set() with input as {"audit": {"kernel": matched}}
}

test_apart_fails if {
	k := object.union(matched, {
		"unloaded": [{"file": "/etc/audit/rules.d/50-gpuhost.rules", "line": 7, "text": "-w /etc/ssh -p aw -k cfg"}],
		"unexpected": [{"text": "-a always,exit -F arch=b64 -S ptrace"}],
	})
	kernel_rules.deny == {
		{"msg": "/etc/audit/rules.d/50-gpuhost.rules:7 is not loaded in the kernel: -w /etc/ssh -p aw -k cfg", "file": "/etc/audit/rules.d/50-gpuhost.rules", "line": 7},
		{"msg": "the kernel holds a rule no rules file has: -a always,exit -F arch=b64 -S ptrace", "subject": "-a always,exit -F arch=b64 -S ptrace"},
	} with input as {"audit": {"kernel": k}}
}

test_unreadable_is_an_error if {
	kernel_rules.error == {"the kernel's audit rules could not be read: opening the audit netlink socket: permission denied"} with input as {"audit": {"kernel": object.union(matched, {"error": "opening the audit netlink socket: permission denied"})}}
	kernel_rules.error == {"the kernel's audit rules were not read (not a live scan)"} with input as {"audit": {}}
}
