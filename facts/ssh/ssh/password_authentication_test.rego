package gpuhost.ssh.password_authentication_test

import data.gpuhost.ssh.password_authentication as check

facts(pw, kbd) := {"target": {"kind": "host"}, "ssh": {
	"config_path": "/etc/ssh/sshd_config",
	"password_authentication": pw,
	"kbd_interactive_authentication": kbd,
}}

test_pass_both_no if {
	check.deny == set() with input as facts("no", "no")
}

test_fail_password if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PasswordAuthentication is \"yes\"; want no"} with input as facts("yes", "no")
}

test_fail_both if {
	check.deny == {
		"sshd (/etc/ssh/sshd_config): PasswordAuthentication is \"yes\"; want no",
		"sshd (/etc/ssh/sshd_config): KbdInteractiveAuthentication is \"yes\"; want no",
	} with input as facts("yes", "yes")
}

test_fail_missing_field if {
	check.deny == {"sshd (/etc/ssh/sshd_config): KbdInteractiveAuthentication is \"\"; want no"} with input as {"target": {"kind": "host"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "password_authentication": "no"}}
}

daemon(pw, match) := {
	"pid": 812, "source": "process", "config_path": "/tmp/weak/sshd_config", "listen": ["127.0.0.1:2222"],
	"password_authentication": pw, "kbd_interactive_authentication": "no",
	"match": match,
}

match_user := [{"file": "/tmp/weak/sshd_config", "line": 12, "criteria": "User x", "settings": [
	{"keyword": "passwordauthentication", "value": "yes", "file": "/tmp/weak/sshd_config", "line": 13},
	{"keyword": "kbdinteractiveauthentication", "value": "no", "file": "/tmp/weak/sshd_config", "line": 14},
]}]

test_fail_match_turns_passwords_back_on if {
	f := {"target": {"kind": "host"}, "ssh": {"daemons": [daemon("no", match_user)]}}
	check.deny == {{
		"msg": "sshd pid 812 (127.0.0.1:2222; /tmp/weak/sshd_config): Match User x (/tmp/weak/sshd_config:12) turns PasswordAuthentication back to \"yes\" at /tmp/weak/sshd_config:13; want no",
		"file": "/tmp/weak/sshd_config", "line": 13,
	}} with input as f
}

test_every_daemon_is_judged if {
	hardened := object.union(daemon("no", []), {"pid": 900, "listen": ["127.0.0.1:22"], "config_path": "/etc/ssh/sshd_config"})
	f := {"target": {"kind": "host"}, "ssh": {"daemons": [hardened, daemon("yes", [])]}}
	check.deny == {"sshd pid 812 (127.0.0.1:2222; /tmp/weak/sshd_config): PasswordAuthentication is \"yes\"; want no"} with input as f
}

test_kbd_after_a_key_is_a_second_factor if {
	f := json.patch(facts("no", "yes"), [{"op": "add", "path": "/ssh/authentication_methods", "value": ["publickey,keyboard-interactive"]}])
	check.deny == set() with input as f
}

test_kbd_beside_a_key_alone_is_a_password if {
	f := json.patch(facts("no", "yes"), [{"op": "add", "path": "/ssh/authentication_methods", "value": ["publickey", "keyboard-interactive"]}])
	count(check.deny) == 1 with input as f
}

admin_match(methods) := [{"file": "/etc/ssh/sshd_config", "line": 30, "criteria": "Group gpuhost-admin", "settings": array.concat(
	[{"keyword": "kbdinteractiveauthentication", "value": "yes", "file": "/etc/ssh/sshd_config", "line": 31}],
	[{"keyword": "authenticationmethods", "value": m, "file": "/etc/ssh/sshd_config", "line": 32} | some m in methods],
)}]

test_match_kbd_with_key_first_passes if {
	f := json.patch(facts("no", "no"), [{"op": "add", "path": "/ssh/match", "value": admin_match(["publickey,keyboard-interactive"])}])
	check.deny == set() with input as f
}

test_match_kbd_without_methods_fails if {
	f := json.patch(facts("no", "no"), [{"op": "add", "path": "/ssh/match", "value": admin_match([])}])
	count(check.deny) == 1 with input as f
}

# The daemon whose file was edited to "no" and never reloaded: the file
# passes, what runs does not.
unreloaded(config_newer, methods) := {
	"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"],
	"password_authentication": "no", "kbd_interactive_authentication": "no",
	"loaded_at": "2025-03-01T09:00:00Z", "loaded_from": "pid_file", "config_newer": config_newer,
	"newest_config": "/etc/ssh/sshd_config", "newest_config_modified": "2025-03-01T10:00:00Z",
	"wire": [{"address": "127.0.0.1:22", "source": "wire", "auth_methods": methods}],
}

stale_msg := "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config (modified at 2025-03-01T10:00:00Z, after the daemon started at 2025-03-01T09:00:00Z): reload it (systemctl reload ssh)"

wire_msg := "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config: it offers password on the wire at 127.0.0.1:22, which the file forbids (PasswordAuthentication no): reload it (systemctl reload ssh)"

test_fail_edited_not_reloaded if {
	check.deny == {
		{"msg": stale_msg, "file": "/etc/ssh/sshd_config"},
		{"msg": wire_msg, "file": "/etc/ssh/sshd_config"},
	} with input as {"ssh": {"daemons": [unreloaded(true, ["publickey", "password"])]}}
}

test_fail_stale_alone if {
	check.deny == {{"msg": stale_msg, "file": "/etc/ssh/sshd_config"}} with input as {"ssh": {"daemons": [unreloaded(true, ["publickey"])]}}
}

test_fail_wire_alone if {
	check.deny == {{"msg": wire_msg, "file": "/etc/ssh/sshd_config"}} with input as {"ssh": {"daemons": [unreloaded(false, ["publickey", "password"])]}}
}

test_pass_reloaded if {
	check.deny == set() with input as {"ssh": {"daemons": [unreloaded(false, ["publickey"])]}}
}

# Issue 48: a list of publickey alone asks no secret, so keyboard-interactive
# after a key elsewhere is still a second factor; "any" asks anything.
test_key_alone_beside_key_then_kbd_passes if {
	f := json.patch(facts("no", "yes"), [{"op": "add", "path": "/ssh/authentication_methods", "value": ["publickey", "publickey,keyboard-interactive"]}])
	check.deny == set() with input as f
	g := json.patch(facts("no", "yes"), [{"op": "add", "path": "/ssh/authentication_methods", "value": ["any"]}])
	count(check.deny) == 1 with input as g
}

# Issue 48: a Match block's AuthenticationMethods that asks a secret before
# a key, under a key-first global list, lets its users guess one.
test_match_methods_without_a_key_first_fail if {
	weak := [{"file": "/etc/ssh/sshd_config", "line": 40, "criteria": "User ci", "settings": [
		{"keyword": "authenticationmethods", "value": "keyboard-interactive", "file": "/etc/ssh/sshd_config", "line": 41},
	]}]
	f := json.patch(facts("no", "yes"), [
		{"op": "add", "path": "/ssh/authentication_methods", "value": ["publickey,keyboard-interactive"]},
		{"op": "add", "path": "/ssh/match", "value": weak},
	])
	check.deny == {{
		"msg": "sshd (/etc/ssh/sshd_config): Match User ci (/etc/ssh/sshd_config:40) sets AuthenticationMethods \"keyboard-interactive\" at /etc/ssh/sshd_config:41, which asks for KbdInteractiveAuthentication without a key first; want every list to start with publickey",
		"file": "/etc/ssh/sshd_config", "line": 41,
	}} with input as f
	keyed := json.patch(f, [{"op": "replace", "path": "/ssh/match/0/settings/0/value", "value": "publickey publickey,keyboard-interactive"}])
	check.deny == set() with input as keyed
}
