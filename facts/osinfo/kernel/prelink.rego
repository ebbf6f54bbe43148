# METADATA
# title: prelink is not installed
# description: >-
#   prelink rewrites binaries and libraries in place, which defeats file integrity checking (AIDE,
#   the baked manifest's digests) and weakens address space layout randomization. The prelink
#   package must not be installed.
# scope: package
# custom:
#   id: GH-KRN-004
#   severity: medium
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Restore the binaries with "prelink -ua", then remove the package with "apt-get purge prelink".
#   controls:
#     cis-ubuntu-22.04: ["1.6.3"]
#     nist-800-53: [CM-6, SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.kernel.prelink

import data.gpuhost.lib.locate

deny contains object.union({"msg": msg, "subject": "prelink"}, locate.place("/var/lib/dpkg/status", object.get(p, "line", 0))) if {
	some p in input.packages
	p.name == "prelink"
	msg := sprintf("prelink %s is installed", [p.version])
}
