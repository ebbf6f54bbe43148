# METADATA
# title: sshd accepts keys only, not passwords
# description: >-
#   sshd's effective PasswordAuthentication and KbdInteractiveAuthentication (formerly
#   ChallengeResponseAuthentication) must both be "no" for every running sshd, and no Match block
#   (User, Group, Address or any other) may turn either back on, so that no password can be guessed
#   over the network. keyboard-interactive may stay on where AuthenticationMethods makes a public
#   key come first in every method list that asks a secret (publickey,keyboard-interactive; a list
#   of publickey alone asks none): it then asks a second factor of someone who already holds a key
#   (GH-IAM-006). A Match block whose AuthenticationMethods asks a secret before a key fails while
#   the daemon asks for secrets at all.
# scope: package
# custom:
#   id: GH-SSH-002
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set "PasswordAuthentication no" and "KbdInteractiveAuthentication no" in
#     /etc/ssh/sshd_config (and drop-ins under sshd_config.d that override them), remove them from every Match block, then
#     reload ssh.
#   controls:
#     nist-800-53: [AC-17, IA-2, IA-5]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.password_authentication

import data.gpuhost.ssh.lib

settings := {
	"PasswordAuthentication": "password_authentication",
	"KbdInteractiveAuthentication": "kbd_interactive_authentication",
}

deny contains f if {
	some d in lib.daemons
	some keyword, field in settings
	v := object.get(d, field, "")
	lower(v) != "no"
	not second_factor(keyword, object.get(d, "authentication_methods", []))
	msg := sprintf("%s: %s is %q; want no", [lib.name(d), keyword, v])
	f := lib.finding(msg, d, lower(keyword))
}

deny contains {"msg": msg, "file": s.file, "line": s.line} if {
	some d in lib.daemons
	some keyword, _ in settings
	some s in lib.match_settings(d, lower(keyword))
	lower(s.value) != "no"
	not match_second_factor(d, keyword, s.block)
	msg := sprintf("%s: %s turns %s back to %q at %s; want no", [lib.name(d), s.block, keyword, s.value, s.at])
}

# A Match block's AuthenticationMethods that asks a secret before a key
# lets its users guess one, whatever the global lists say, where the
# daemon asks for secrets at all.
deny contains {"msg": msg, "file": s.file, "line": s.line} if {
	some d in lib.daemons
	some s in lib.match_settings(d, "authenticationmethods")
	not lib.key_first(split(s.value, " "))
	some keyword, field in settings
	lower(object.get(d, field, "")) != "no"
	msg := sprintf("%s: %s sets AuthenticationMethods %q at %s, which asks for %s without a key first; %s", [
		lib.name(d), s.block, s.value, s.at, keyword, "want every list to start with publickey",
	])
}

# The daemon runs an older configuration than the file judged above.
deny contains f if {
	some d in lib.daemons
	some f in lib.older(d)
}

second_factor("KbdInteractiveAuthentication", methods) if lib.key_first(methods)

match_second_factor(d, "KbdInteractiveAuthentication", block) if lib.match_key_first(d, block)

match_second_factor(d, "KbdInteractiveAuthentication", _) if {
	lib.key_first(object.get(d, "authentication_methods", []))
}
