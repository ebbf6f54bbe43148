package gpuhost.audit.config_watch_test

import data.gpuhost.audit.config_watch
import data.gpuhost.audit.fixtures_test as fx

test_hardened_passes if {
	config_watch.deny == set() with input as {"audit": {"rules": fx.hardened}} with data.gpuhost.params as fx.params
}

test_no_rules_fail if {
	count(config_watch.deny) == 10 with input as {"audit": {"rules": []}} with data.gpuhost.params as fx.params
}

test_read_watch_is_not_a_write_watch if {
	rules := [fx.rule("watch", {"path": "/etc/ssh", "perms": "r"})]
	config_watch.deny == {
		{"msg": "no audit rule records writes on /etc/ssh (want -w /etc/ssh -p wa)", "subject": "/etc/ssh"},
		{"msg": "no audit rule records attribute changes on /etc/ssh (want -w /etc/ssh -p wa)", "subject": "/etc/ssh"},
	} with input as {"audit": {"rules": rules}} with data.gpuhost.params as {"audit_watch_paths": ["/etc/ssh"]}
}

test_sibling_prefix_does_not_cover if {
	rules := [fx.rule("watch", {"path": "/etc/ss", "perms": "wa"})]
	count(config_watch.deny) == 2 with input as {"audit": {"rules": rules}} with data.gpuhost.params as {"audit_watch_paths": ["/etc/ssh"]}
}

test_empty_params_skip if {
	config_watch.skip == {"params.audit_watch_paths names no path"} with data.gpuhost.params as {}
}
