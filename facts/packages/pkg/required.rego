# METADATA
# title: Packages the hardening baseline requires are installed
# description: >-
#   sudo, a syslog daemon, time synchronisation, a file integrity checker (AIDE) and a packet
#   filter are what an auditor expects to find on every server. Each entry of
#   params.required_packages is a package name, or names separated by "|" of which one will
#   do ("chrony|ntp"); a finding per entry that nothing satisfies. CIS Ubuntu 22.04 1.3.1,
#   1.4.1, 2.2.1.1, 3.5.3.1.1, 4.2.1.1.
# scope: package
# custom:
#   id: GH-PKG-002
#   severity: low
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Install the package in the image build ("apt-get install PACKAGE"), or drop it from
#     params.required_packages with a reason.
#   controls:
#     nist-800-53: [CM-6]
#     cis-ubuntu-22.04: ["1.3.1", "1.4.1", "2.2.1.1", "2.2.1.4", "3.5.3.1.1", "4.2.1.1"]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.pkg.required

import data.gpuhost.pkg.lib

entries := object.get(data.gpuhost.params, "required_packages", [])

deny contains {"msg": msg, "subject": entry} if {
	some entry in entries
	names := lib.alternatives(entry)
	not any_installed(names)
	msg := sprintf("%s is not installed (params.required_packages)", [concat(" or ", names)])
}

any_installed(names) if {
	some n in names
	n in lib.installed
}
