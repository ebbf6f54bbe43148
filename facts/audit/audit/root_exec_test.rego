package gpuhost.audit.root_exec_test

import data.gpuhost.audit.fixtures_test as fx
import data.gpuhost.audit.root_exec

test_hardened_passes if {
	root_exec.deny == set() with input as {"audit": {"rules": fx.hardened}}
}

test_no_rules_fail if {
	count(root_exec.deny) == 4 with input as {"audit": {"rules": []}}
}

test_b64_only_misses_32bit_execve if {
	rules := [fx.exec("b64", {"name": "euid", "op": "=", "value": "0"}), fx.exec("b64", {"name": "auid", "op": ">=", "value": "1000"})]
	root_exec.deny == {
		"no audit rule records execve by root for arch=b32 (want -a always,exit -F arch=b32 -S execve -F euid=0)",
		"no audit rule records execve by logged-in users for arch=b32 (want -a always,exit -F arch=b32 -S execve -F auid>=1000)",
	} with input as {"audit": {"rules": rules}}
}

test_unfiltered_execve_records_everyone if {
	rules := [fx.rule("syscall", {"list": "exit", "action": "always", "syscalls": ["execve"]})]
	root_exec.deny == set() with input as {"audit": {"rules": rules}}
}

test_never_or_other_uid_records_nothing if {
	rules := [
		fx.rule("syscall", {"list": "exit", "action": "never", "syscalls": ["execve"]}),
		fx.exec("b64", {"name": "euid", "op": "=", "value": "33"}),
		fx.exec("b32", {"name": "auid", "op": "=", "value": "1000"}),
	]
	count(root_exec.deny) == 4 with input as {"audit": {"rules": rules}}
}
