# METADATA
# title: No host or user trusts others to log in without a password
# description: >-
#   No .rhosts may be in /root, in /home or a directory directly below it, and there may be no
#   /etc/hosts.equiv, where ComplianceAsCode's no_rsh_trust_files looks: each lets rsh and rlogin
#   in from the hosts it names with no password at all.
# scope: package
# custom:
#   id: GH-FS-014
#   severity: high
#   location: /etc/hosts.equiv
#   remediation: >-
#     Remove each file named; remove rsh-server if it is installed.
#   controls:
#     nist-800-53: [CM-6, CM-7]
#     cis: ["6.2.11"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.rsh_trust

import data.gpuhost.fs.lib

deny contains {"msg": sprintf("%s lets rsh in without a password", [p]), "file": p, "subject": p} if {
	some p in lib.files.trust_files
	trust(p)
}

trust(p) if endswith(p, "/.rhosts")

trust("/etc/hosts.equiv")

error contains msg if some msg in lib.homes_errors
