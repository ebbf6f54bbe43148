package gpuhost.iam.ssh_fixtures_test

params := {"roles": {"admin": ["gpuhost-admin"], "developer": ["gpuhost-dev"], "auditor": ["gpuhost-audit"]}}

admin_match := {"file": "/etc/ssh/sshd_config.d/50-gpuhost.conf", "line": 9, "criteria": "Group gpuhost-admin", "settings": [
	{"keyword": "kbdinteractiveauthentication", "value": "yes", "file": "/etc/ssh/sshd_config.d/50-gpuhost.conf", "line": 10},
	{"keyword": "authenticationmethods", "value": "publickey,keyboard-interactive", "file": "/etc/ssh/sshd_config.d/50-gpuhost.conf", "line": 11},
]}

ssh := {
	"config_path": "/etc/ssh/sshd_config", "use_pam": "yes", "kbd_interactive_authentication": "no",
	"authentication_methods": ["any"], "allow_groups": ["gpuhost-admin", "gpuhost-dev", "gpuhost-audit"],
	"match": [admin_match],
}

pam := [
	{"file": "/etc/pam.d/common-auth", "line": 17, "type": "auth", "control": "[success=1 default=ignore]", "module": "pam_unix.so", "args": []},
	{"file": "/etc/pam.d/sshd", "line": 5, "type": "auth", "control": "required", "module": "pam_google_authenticator.so", "args": []},
]
