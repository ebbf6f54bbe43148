# METADATA
# title: ssh logins are limited to the role groups
# description: >-
#   sshd must admit only members of the roles params define (admin, developer, auditor): an
#   AllowGroups whose every group is a role group. Without it every account with a key or a
#   password may log in, service accounts included. Read from sshd's configuration with its
#   includes, and from each running sshd on a live host.
# scope: package
# custom:
#   id: GH-IAM-005
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Add "AllowGroups gpuhost-admin gpuhost-dev gpuhost-audit" to /etc/ssh/sshd_config.d/50-gpuhost.conf.
#   controls:
#     nist-800-53: [AC-3, AC-17]
#     cis: ["5.1.4"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.iam.ssh_groups

import data.gpuhost.iam.lib
import data.gpuhost.ssh.lib as sshlib

skip contains "params.roles define no group" if count(lib.all_role_groups) == 0

configs contains c if {
	c := input.ssh
	count(object.get(c, "daemons", [])) == 0
}

configs contains d if some d in input.ssh.daemons

deny contains sprintf("%s sets no AllowGroups: any account may log in over ssh (want %s)", [c.config_path, concat(" ", sort(lib.all_role_groups))]) if {
	count(lib.all_role_groups) > 0
	some c in configs
	count(object.get(c, "allow_groups", [])) == 0
}

deny contains f if {
	some c in configs
	some g in object.get(c, "allow_groups", [])
	not g in lib.all_role_groups
	f := sshlib.finding(sprintf("%s: AllowGroups admits %s, which is not a role group", [c.config_path, g]), c, "allowgroups")
}
