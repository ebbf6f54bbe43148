# METADATA
# title: Packages the hardening baseline forbids are not installed
# description: >-
#   Servers a GPU host has no use for (an X server, FTP, LDAP, NIS, mail and file servers,
#   telnet, rsh, talk) widen what an attacker can reach and must be patched for nothing. Each
#   entry of params.forbidden_packages is a package name or a glob over names; a finding per
#   entry names the installed packages it matches. CIS Ubuntu 22.04, sections 2.1 to 2.3.
# scope: package
# custom:
#   id: GH-PKG-001
#   severity: medium
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Purge the package ("apt-get purge PACKAGE") in the image build, or drop it from
#     params.forbidden_packages with a reason if the host needs it.
#   controls:
#     nist-800-53: [CM-7]
#     cis-ubuntu-22.04: ["2.1.1", "2.2.2", "2.2.5", "2.2.6", "2.2.8", "2.2.9", "2.2.10", "2.2.11",
#       "2.2.12", "2.2.13", "2.2.14", "2.2.17", "2.3.2", "2.3.3", "2.3.4", "2.3.5"]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.pkg.forbidden

import data.gpuhost.pkg.lib

entries := object.get(data.gpuhost.params, "forbidden_packages", [])

deny contains object.union(lib.paragraph(first), {"msg": msg, "subject": entry}) if {
	some entry in entries
	found := lib.matching(entry)
	count(found) > 0
	first := sort(found)[0]
	msg := sprintf("%s is installed (params.forbidden_packages: %s)", [concat(", ", sort(found)), entry])
}
