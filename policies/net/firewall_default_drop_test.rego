package gpuhost.net.firewall_default_drop_test

import data.gpuhost.net.firewall_default_drop as check

facts(fw) := {"target": {"kind": "image"}, "network": {"listening": [], "firewall": fw}}

test_pass_drop if {
	check.deny == set() with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [22]})
	check.deny == set() with input as facts({"backend": "ufw", "enabled": true, "default_input_policy": "REJECT", "allowed_ports": [22]})
}

test_fail_accept_and_disabled if {
	check.deny == {
		"the ufw firewall is configured but not enabled",
		"the ufw firewall's default input policy is \"accept\"; want drop or reject",
	} with input as facts({"backend": "ufw", "enabled": false, "default_input_policy": "accept", "allowed_ports": []})
}

test_fail_empty_policy if {
	check.deny == {"the nftables firewall's default input policy is \"\"; want drop or reject"} with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "", "allowed_ports": []})
}

test_fail_no_firewall if {
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as {"target": {"kind": "rootfs"}, "network": {"listening": []}}
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as {"target": {"kind": "rootfs"}}
	check.deny == {"no firewall (nftables or ufw) is configured"} with input as facts({"backend": "none", "enabled": false, "default_input_policy": "accept", "allowed_ports": []})
}

test_live_unit_unknown_is_an_error if {
	f := facts({"backend": "nftables", "enabled": false, "default_input_policy": "drop", "allowed_ports": [22], "source": "kernel", "unit": {"name": "nftables.service", "state": "unknown", "reason": "systemd is not running (no /run/systemd/system)"}})
	check.error == {"cannot tell whether nftables.service is active: systemd is not running (no /run/systemd/system)"} with input as f
	check.deny == set() with input as f
}

test_live_unit_inactive_fails if {
	check.deny == {"the nftables firewall is configured but not enabled (nftables.service is inactive)"} with input as facts({"backend": "nftables", "enabled": false, "default_input_policy": "drop", "allowed_ports": [], "source": "kernel", "unit": {"name": "nftables.service", "state": "inactive"}})
	check.deny == set() with input as facts({"backend": "nftables", "enabled": true, "default_input_policy": "drop", "allowed_ports": [], "source": "kernel", "unit": {"name": "nftables.service", "state": "active"}})
}
