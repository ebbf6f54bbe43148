package gpuhost.iam.sudo_log_test

import data.gpuhost.iam.fixtures_test as fx
import data.gpuhost.iam.sudo_log

test_good_passes if {
	sudo_log.deny == set() with input as {"access": fx.good}
}

test_no_sudo_skips if {
	a := object.remove(fx.good, ["sudo"])
	sudo_log.skip == {"sudo is not installed (no /etc/sudoers)"} with input as {"access": a}
	sudo_log.deny == set() with input as {"access": a}
}

test_sudo_without_pty_or_log_fails if {
	neg := object.union(fx.default_("use_pty"), {"negated": true})
	scoped := object.union(fx.default_("logfile"), {"scope": ":alice"})
	count(sudo_log.deny) == 2 with input as {"access": object.union(fx.good, {"sudo": fx.sudo([], [neg, scoped])})}
}

# A Defaults line that turns the setting off is the line to change; a
# missing setting has none.
test_turned_off_points_at_its_line if {
	neg := object.union(fx.default_("use_pty"), {"negated": true, "line": 7})
	sudo_log.deny == {
		{"msg": "sudoers (/etc/sudoers) does not set Defaults use_pty", "file": "/etc/sudoers", "line": 7},
		"sudoers (/etc/sudoers) keeps no log of what sudo ran (Defaults logfile, log_output or log_servers)",
	} with input as {"access": object.union(fx.good, {"sudo": fx.sudo([], [neg])})}
}
