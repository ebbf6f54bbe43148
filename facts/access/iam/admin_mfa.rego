# METADATA
# title: Administrators log in with a second factor
# description: >-
#   An administrator's ssh key alone must not be enough: sshd must require a key and a one-time
#   code for the admin groups (a Match Group block, or the global setting, with AuthenticationMethods
#   publickey,keyboard-interactive), with UsePAM and keyboard-interactive authentication on, and
#   sshd's PAM stack must ask a second-factor module (pam_google_authenticator or pam_u2f) in its
#   auth phase. Read from sshd's configuration and /etc/pam.d/sshd with its includes.
# scope: package
# custom:
#   id: GH-IAM-006
#   severity: high
#   location: /etc/pam.d/sshd
#   remediation: >-
#     Install libpam-google-authenticator (or libpam-u2f); add "auth required pam_google_authenticator.so"
#     to /etc/pam.d/sshd; in sshd_config set UsePAM yes, KbdInteractiveAuthentication yes and
#     "Match Group gpuhost-admin" with "AuthenticationMethods publickey,keyboard-interactive".
#   controls:
#     nist-800-53: [IA-2(1), IA-2(2), AC-17]
#     cis: ["5.1.2"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh, access]
package gpuhost.iam.admin_mfa

import data.gpuhost.iam.lib
import data.gpuhost.ssh.lib as sshlib

admins := lib.role_groups("admin")

skip contains "params.roles define no admin group" if count(admins) == 0

ssh := input.ssh

# Every method list needs both a key and keyboard-interactive.
two_factor(lists) if {
	count(lists) > 0
	every l in lists {
		methods := split(l, ",")
		"publickey" in methods
		some m in methods
		startswith(m, "keyboard-interactive")
	}
}

# The admin groups get two factors: globally, or in a Match Group naming
# one of them.
admin_methods_ok if two_factor(ssh.authentication_methods)

admin_methods_ok if {
	some m in ssh.match
	startswith(lower(m.criteria), "group ")
	some g in split(trim_space(substring(m.criteria, 6, -1)), ",")
	g in admins
	some s in m.settings
	s.keyword == "authenticationmethods"
	two_factor(split(s.value, " "))
}

second_factor_modules := {"pam_google_authenticator.so", "pam_u2f.so", "pam_oath.so"}

pam_ok if {
	some r in input.access.pam_sshd
	r.type == "auth"
	r.module in second_factor_modules
	not r.control in {"optional", "sufficient"}
}

deny contains f if {
	count(admins) > 0
	not admin_methods_ok
	msg := sprintf("%s does not require publickey,keyboard-interactive for the admin groups (%s)", [ssh.config_path, concat(", ", sort(admins))])
	f := sshlib.finding(msg, ssh, "authenticationmethods")
}

deny contains f if {
	count(admins) > 0
	ssh.use_pam != "yes"
	msg := sprintf("%s: UsePAM is %s, so no PAM module can ask a second factor", [ssh.config_path, ssh.use_pam])
	f := sshlib.finding(msg, ssh, "usepam")
}

deny contains f if {
	count(admins) > 0
	ssh.kbd_interactive_authentication != "yes"
	not kbd_in_admin_match
	msg := sprintf("%s: KbdInteractiveAuthentication is %s, so the one-time code cannot be asked", [ssh.config_path, ssh.kbd_interactive_authentication])
	f := sshlib.finding(msg, ssh, "kbdinteractiveauthentication")
}

deny contains "/etc/pam.d/sshd asks no second factor in its auth phase (pam_google_authenticator, pam_u2f or pam_oath, required)" if {
	count(admins) > 0
	not pam_ok
}

kbd_in_admin_match if {
	some m in ssh.match
	startswith(lower(m.criteria), "group ")
	some s in m.settings
	s.keyword == "kbdinteractiveauthentication"
	lower(s.value) == "yes"
}
