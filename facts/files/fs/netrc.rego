# METADATA
# title: No user keeps a .netrc
# description: >-
#   No .netrc may be in /home or a directory directly below it, where ComplianceAsCode's
#   no_netrc_files looks: it holds ftp and curl passwords in the clear, for whoever reads it.
# scope: package
# custom:
#   id: GH-FS-013
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     Remove each .netrc named, and move its credentials to a secret store.
#   controls:
#     nist-800-53: [IA-5, CM-6]
#     cis: ["6.2.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.netrc

import data.gpuhost.fs.lib

deny contains {"msg": sprintf("%s holds passwords in the clear", [p]), "file": p, "subject": p} if {
	some p in lib.files.trust_files
	endswith(p, "/.netrc")
}

error contains msg if some msg in lib.homes_errors
