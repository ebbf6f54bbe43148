package gpuhost.audit.log_fixtures_test

kept := {
	"path": "/etc/audit/auditd.conf", "max_log_file_action": "keep_logs", "space_left_action": "email",
	"admin_space_left_action": "single", "disk_full_action": "halt", "disk_error_action": "halt",
}

defaults := object.union(kept, {"max_log_file_action": "rotate", "space_left_action": "syslog", "admin_space_left_action": "suspend", "disk_full_action": "suspend", "disk_error_action": "syslog"})

local := {"audisp_remote_active": false, "journal_upload": false}
