package gpuhost.iam.login_defs_test

import data.gpuhost.iam.login_defs

params := {"login_defs": {
	"PASS_MAX_DAYS": {"max": 365},
	"PASS_MIN_DAYS": {"min": 1},
	"PASS_WARN_AGE": {"min": 7, "max": 30},
	"UMASK": {"umask": "027"},
}}

defs(settings) := {"access": {"users": [], "login_defs": {
	"file": "/etc/login.defs", "settings": settings,
	"lines": {k: 10 | some k, _ in settings},
}}}

test_pass if {
	f := defs({"PASS_MAX_DAYS": "365", "PASS_MIN_DAYS": "1", "PASS_WARN_AGE": "7", "UMASK": "077"})
	login_defs.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_each if {
	f := defs({"PASS_MAX_DAYS": "99999", "PASS_WARN_AGE": "3", "UMASK": "022"})
	login_defs.deny == {
		{"msg": "/etc/login.defs sets PASS_MAX_DAYS 99999; want at most 365", "subject": "PASS_MAX_DAYS", "file": "/etc/login.defs", "line": 10},
		{"msg": "/etc/login.defs sets no PASS_MIN_DAYS; want at least 1", "subject": "PASS_MIN_DAYS", "file": "/etc/login.defs"},
		{"msg": "/etc/login.defs sets PASS_WARN_AGE 3; want between 7 and 30", "subject": "PASS_WARN_AGE", "file": "/etc/login.defs", "line": 10},
		{"msg": "/etc/login.defs sets UMASK 022; want a umask with the bits of 027", "subject": "UMASK", "file": "/etc/login.defs", "line": 10},
	} with input as f with data.gpuhost.params as params
}

test_fail_without_the_file if {
	count(login_defs.deny) == 4 with input as {"access": {"users": []}} with data.gpuhost.params as params
}

test_no_params if {
	login_defs.deny == set() with input as defs({}) with data.gpuhost.params as {}
}
