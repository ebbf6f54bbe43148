package gpuhost.audit.log_kept_test

import data.gpuhost.audit.log_fixtures_test as fx
import data.gpuhost.audit.log_kept

test_kept_passes if {
	log_kept.deny == set() with input as {"audit": {"config": fx.kept, "remote": fx.local}}
}

test_defaults_rotate_away if {
	log_kept.deny == {"/etc/audit/auditd.conf: max_log_file_action rotate loses records once the log is full and nothing forwards them"} with input as {"audit": {"config": fx.defaults, "remote": fx.local}}
}

test_rotate_with_forwarding_passes if {
	log_kept.deny == set() with input as {"audit": {"config": fx.defaults, "remote": {"audisp_remote_active": true, "journal_upload": false}}}
}

test_ignore_fails_even_forwarded if {
	c := object.union(fx.kept, {"max_log_file_action": "ignore", "disk_full_action": "ignore"})
	count(log_kept.deny) == 2 with input as {"audit": {"config": c, "remote": {"audisp_remote_active": true, "journal_upload": false}}}
}

test_disk_full_rotate_fails_locally if {
	log_kept.deny == {"/etc/audit/auditd.conf: disk_full_action rotate deletes the oldest records when the disk runs out"} with input as {"audit": {"config": object.union(fx.kept, {"disk_full_action": "rotate"}), "remote": fx.local}}
}

# A setting auditd.conf sets points at its line; one left at auditd's
# default has none.
test_set_action_points_at_its_line if {
	c := object.union(fx.kept, {
		"disk_full_action": "ignore",
		"locations": {"disk_full_action": {"file": "/etc/audit/auditd.conf", "line": 2}},
	})
	log_kept.deny == {{
		"msg": "/etc/audit/auditd.conf: disk_full_action ignore drops every new record when the disk runs out",
		"file": "/etc/audit/auditd.conf",
		"line": 2,
	}} with input as {"audit": {"config": c, "remote": fx.local}}
}
