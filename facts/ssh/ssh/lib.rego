# Helpers the sshd checks share. No METADATA and no deny: a library, not a check.
package gpuhost.ssh.lib

import data.gpuhost.lib.locate

# Every sshd to judge: each running daemon of a live host, or the
# configuration file of an image. Facts saved before daemons were collected
# have only the top-level settings, which then stand for the one daemon.
daemons := d if {
	d := object.get(input.ssh, "daemons", [])
	count(d) > 0
} else := [input.ssh]

# finding(msg, d, keyword) places msg on the line of d's files that set
# keyword, so that a report points at the line to change; a keyword left at
# OpenSSH's default has no such line, and the message stands alone.
finding(msg, d, keyword) := locate.at(msg, loc.file, loc.line) if {
	loc := d.locations[keyword]
} else := msg

# The daemon as messages name it: pid, listeners and configuration file.
name(d) := sprintf("sshd pid %d (%s; %s)", [d.pid, concat(", ", d.listen), d.config_path]) if {
	d.pid
} else := sprintf("sshd (%s)", [d.config_path])

# Whether an algorithm matches one of the patterns, ignoring case; a
# pattern ending in "*" matches every name that starts with what precedes it.
matches(alg, patterns) if lower(alg) in {lower(p) | some p in patterns}

matches(alg, patterns) if {
	some p in patterns
	endswith(p, "*")
	startswith(lower(alg), lower(trim_suffix(p, "*")))
}

# The listeners of a daemon whose KEXINIT was read.
wire(d) := [w | some w in object.get(d, "wire", []); object.get(w, "error", "") == ""]

# What a daemon offers of one list (a facts field), each name with where it
# was seen: on the wire where it was read, otherwise in its configuration.
offered(d, field) := {{"name": n, "where": sprintf("on the wire at %s", [w.address])} |
	some w in wire(d)
	some n in object.get(w, field, [])
} if {
	count(wire(d)) > 0
} else := {{"name": n, "where": "in its configuration"} | some n in object.get(d, field, [])}

# The settings of keyword (lower case) under the daemon's Match blocks.
match_settings(d, keyword) := {{
	"block": sprintf("Match %s (%s:%d)", [m.criteria, m.file, m.line]), "value": s.value,
	"at": sprintf("%s:%d", [s.file, s.line]), "file": s.file, "line": s.line,
} |
	some m in object.get(d, "match", [])
	some s in m.settings
	s.keyword == keyword
}

# key_first(lists) holds when no AuthenticationMethods list asks for a
# secret (a password, keyboard-interactive) before a public key: each
# either starts with one ("publickey,keyboard-interactive") or asks none
# ("publickey"). keyboard-interactive then only adds a second factor, and
# no password can be guessed without the key. "any" asks anything.
key_first(lists) if {
	count(lists) > 0
	every l in lists {
		key_before_secrets(l)
	}
}

key_before_secrets(l) if startswith(l, "publickey,")

key_before_secrets(l) if {
	l != "any"
	not asks_secret(l)
}

asks_secret(l) if {
	some m in split(l, ",")
	split(m, ":")[0] in {"password", "keyboard-interactive"}
}

# match_key_first(d, block) holds when the Match block named block sets
# such an AuthenticationMethods.
match_key_first(d, block) if {
	some m in object.get(d, "match", [])
	sprintf("Match %s (%s:%d)", [m.criteria, m.file, m.line]) == block
	some s in m.settings
	s.keyword == "authenticationmethods"
	key_first(split(s.value, " "))
}

# older(d) holds the findings that show a running daemon runs an older
# configuration than its files: a file changed after the daemon last loaded
# them, or the daemon accepts on the wire a login method its file forbids.
# The settings judged from the file are then not what runs, whatever they say.
older(d) := older_file(d) | older_wire(d)

reload_advice := "reload it (systemctl reload ssh)"

older_file(d) := {{"msg": msg, "file": d.newest_config} |
	object.get(d, "config_newer", false) == true
	msg := sprintf("%s runs an older configuration than %s (modified at %s, after the daemon started at %s): %s%s", [
		name(d), d.newest_config, d.newest_config_modified, d.loaded_at, reload_advice, unseen_reload(d),
	])
}

# Without a pid file naming the daemon, its start time is all there is, and
# sshd keeps that across the re-exec a reload does.
unseen_reload(d) := "" if {
	d.loaded_from == "pid_file"
} else := "; it has no PidFile naming it, so a reload does not show here and only a restart clears this"

# The login methods the none probe lists, each with the setting of the file
# that forbids it when "no".
wire_methods := {"password": "PasswordAuthentication", "keyboard-interactive": "KbdInteractiveAuthentication"}

older_wire(d) := {{"msg": msg, "file": d.config_path} |
	some method, keyword in wire_methods
	lower(object.get(d, method_field[keyword], "")) == "no"

	# A Match block may turn the method on for the probe's user or address.
	count(match_settings(d, lower(keyword))) == 0
	some w in wire(d)
	method in object.get(w, "auth_methods", [])
	msg := sprintf("%s runs an older configuration than %s: it offers %s on the wire at %s, which the file forbids (%s no): %s", [
		name(d), d.config_path, method, w.address, keyword, reload_advice,
	])
}

method_field := {"PasswordAuthentication": "password_authentication", "KbdInteractiveAuthentication": "kbd_interactive_authentication"}
