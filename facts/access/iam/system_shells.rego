# METADATA
# title: System accounts have no login shell
# description: >-
#   An account below UID_MIN (1000) is a service's, and nobody logs in as it; a real shell
#   on one turns a leaked or empty password, or a service's compromise, into an interactive
#   login. root keeps its shell, and sync, shutdown and halt their one command, as CIS Ubuntu
#   22.04 5.4.2 allows.
# scope: package
# custom:
#   id: GH-IAM-008
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     Give the account a shell that refuses logins (usermod -s /usr/sbin/nologin NAME), and lock
#     it (usermod -L NAME).
#   controls:
#     nist-800-53: [AC-2, CM-6]
#     cis-ubuntu-22.04: ["5.4.2"]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.system_shells

no_login := {"/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false"}

exempt := {"root", "sync", "shutdown", "halt"}

deny contains {"msg": msg, "subject": u.name, "file": "/etc/passwd"} if {
	some u in input.access.users
	u.uid < 1000
	not u.name in exempt
	not u.shell in no_login
	msg := sprintf("system account %s (uid %d) has the login shell %s", [u.name, u.uid, u.shell])
}
