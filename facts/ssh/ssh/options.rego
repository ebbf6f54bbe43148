# METADATA
# title: sshd's session and authentication options are the baseline's
# description: >-
#   Host-based and rhosts trust off, no user environment, logging at INFO or VERBOSE, few
#   authentication tries and sessions per connection, idle sessions ended, and no X11
#   forwarding: the sshd options of CIS Ubuntu 22.04 section 5.2 beyond the ones the other
#   sshd checks judge. Each entry of params.ssh_options names a keyword and what its effective
#   value (the files' first, else OpenSSH's default) must be: equal to a value, one of a list,
#   or within a minimum and maximum; a Match block that sets it otherwise fails too.
# scope: package
# custom:
#   id: GH-SSH-011
#   severity: medium
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set the option in /etc/ssh/sshd_config (before any Include that sets it, since the first
#     value wins), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17, AC-12, AU-3]
#     cis-ubuntu-22.04: ["5.2.4", "5.2.5", "5.2.6", "5.2.7", "5.2.8", "5.2.11", "5.2.15", "5.2.22"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.options

import data.gpuhost.ssh.lib

wanted := object.get(data.gpuhost.params, "ssh_options", {})

skip contains "the ssh facts carry no sshd options (collected by an older gpuhost)" if {
	count(wanted) > 0
	some d in lib.daemons
	not d.options
}

deny contains subjected(lib.finding(msg, d, keyword), keyword) if {
	some d in lib.daemons
	some keyword, rule in wanted
	v := d.options[keyword]
	not allowed(v, rule)
	msg := sprintf("%s: %s is %s; want %s", [lib.name(d), keyword, v, describe(rule)])
}

deny contains {"msg": msg, "file": s.file, "line": s.line, "subject": keyword} if {
	some d in lib.daemons
	some keyword, rule in wanted
	some s in lib.match_settings(d, keyword)
	not allowed(lower(s.value), rule)
	msg := sprintf("%s: %s sets %s %s at %s; want %s", [lib.name(d), s.block, keyword, s.value, s.at, describe(rule)])
}

allowed(v, rule) if lower(v) == lower(rule.equals)

allowed(v, rule) if lower(v) in {lower(x) | some x in rule["in"]}

allowed(v, rule) if {
	not rule.equals
	not rule["in"]
	n := to_number(v)
	n >= object.get(rule, "min", n)
	n <= object.get(rule, "max", n)
}

describe(rule) := rule.equals if is_string(rule.equals)

describe(rule) := concat(" or ", rule["in"]) if rule["in"]

describe(rule) := sprintf("between %v and %v", [rule.min, rule.max]) if {
	not rule.equals
	not rule["in"]
	rule.min
	rule.max
}

describe(rule) := sprintf("at most %v", [rule.max]) if {
	not rule.equals
	not rule["in"]
	not rule.min
	rule.max
}

describe(rule) := sprintf("at least %v", [rule.min]) if {
	not rule.equals
	not rule["in"]
	rule.min
	not rule.max
}

subjected(f, keyword) := object.union(f, {"subject": keyword}) if is_object(f)

subjected(f, keyword) := {"msg": f, "subject": keyword} if is_string(f)
