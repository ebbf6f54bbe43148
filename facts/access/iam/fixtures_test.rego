package gpuhost.iam.fixtures_test

params := {"roles": {"admin": ["gpuhost-admin"], "developer": ["gpuhost-dev"], "auditor": ["gpuhost-audit"]}}

users := [
	{"name": "root", "uid": 0, "gid": 0, "shell": "/bin/bash", "password": "locked"},
	{"name": "alice", "uid": 1000, "gid": 1000, "shell": "/bin/bash", "password": "locked"},
	{"name": "dev", "uid": 1001, "gid": 1101, "shell": "/bin/bash", "password": "locked"},
	{"name": "eve", "uid": 1002, "gid": 1002, "shell": "/bin/bash", "password": "locked"},
]

groups := [
	{"name": "gpuhost-admin", "gid": 1100, "members": ["alice"]},
	{"name": "gpuhost-dev", "gid": 1101, "members": []},
	{"name": "gpuhost-audit", "gid": 1102, "members": ["eve"]},
]

rule(users, commands, nopasswd) := {
	"file": "/etc/sudoers", "line": 10, "users": users, "hosts": ["ALL"], "run_as": ["ALL"],
	"commands": commands, "all_commands": "ALL" in commands, "no_passwd": nopasswd,
}

sudo(rules, defaults) := {"files": ["/etc/sudoers"], "rules": rules, "defaults": defaults}

default_(name) := {"file": "/etc/sudoers", "line": 2, "scope": "", "name": name, "value": "", "negated": false}

good := {
	"users": users, "groups": groups, "pam_sshd": [], "etc_writable": [],
	"sudo": sudo(
		[rule(["root"], ["ALL"], false), rule(["%gpuhost-admin"], ["ALL"], false), rule(["%gpuhost-dev"], ["/usr/bin/systemctl restart train"], false)],
		[default_("use_pty"), default_("logfile")],
	),
}
