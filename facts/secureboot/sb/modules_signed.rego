# METADATA
# title: Every out-of-tree kernel module is signed by the key the image enrols
# description: >-
#   Under Secure Boot the kernel loads a module only if its appended signature verifies with a
#   key it trusts; for a module DKMS built in the image (the NVIDIA driver) that is the DKMS
#   certificate the operator enrols as a Machine Owner Key. gpuhost reads every module under
#   /lib/modules/*/updates, extra and dkms (.ko, .ko.xz, .ko.zst, .ko.gz), finds its signature
#   ("~Module signature appended~", PKCS#7), and verifies it over the module's bytes with
#   /var/lib/dkms/mok.pub. The image records no other key to enrol, so that certificate counts
#   as enrolled. An unsigned module, one changed after signing, or one signed by another key
#   fails, named. An image that does not boot through shim is not meant for Secure Boot, and the
#   check skips it unless params.secure_boot_required is true.
# scope: package
# custom:
#   id: GH-SB-002
#   severity: high
#   location: /var/lib/dkms/mok.pub
#   remediation: >-
#     Give the gpuhost-gpu provisioner a DKMS signing key and certificate (dkms { signing_key,
#     signing_certificate }) so DKMS signs what it builds, rebuild the modules, and enrol the
#     certificate on every host (mokutil --import /var/lib/dkms/mok.pub).
#   controls:
#     nist-800-53: [SI-7, SI-7(15), CM-14]
#   targets: [rootfs, image, facts]
#   requires: [secureboot]
package gpuhost.sb.modules_signed

import data.gpuhost.sb.lib

skip contains lib.advisory

modules := object.get(lib.sb, "modules", [])

keys := object.get(lib.sb, "trusted_keys", [])

error contains lib.unknown

error contains msg if {
	object.get(lib.sb, "modules_error", "") != ""
	msg := sprintf("the out-of-tree modules could not all be read: %s", [lib.sb.modules_error])
}

error contains msg if {
	some k in keys
	object.get(k, "error", "") != ""
	msg := sprintf("the trusted key %s could not be read: %s", [k.source, k.error])
}

error contains finding if {
	some m in modules
	not m.signed
	object.get(m, "error", "") != ""
	finding := lib.at(m.file, sprintf("%s (%s) could not be read: %s", [m.file, m.name, m.error]))
}

deny contains finding if {
	some m in modules
	not m.signed
	object.get(m, "error", "") == ""
	finding := lib.at(m.file, sprintf("%s (%s) carries no module signature: under Secure Boot the kernel refuses it", [m.file, m.name]))
}

deny contains finding if {
	some m in modules
	m.signed
	object.get(m, "error", "") != ""
	finding := lib.at(m.file, sprintf("%s (%s): %s", [m.file, m.name, m.error]))
}

deny contains finding if {
	some m in modules
	m.signed
	by := object.get(m, "verified_by", "")
	by != ""
	some k in keys
	k.source == by
	not k.enrolled
	finding := lib.at(m.file, sprintf("%s (%s) is signed by %s, which is not enrolled", [m.file, m.name, by]))
}

deny contains msg if {
	count(modules) > 0
	count([k | some k in keys; object.get(k, "error", "") == ""]) == 0
	msg := sprintf(
		"the image has %d out-of-tree modules and no DKMS certificate (/var/lib/dkms/mok.pub) to enrol: no key a host trusts verifies them",
		[count(modules)],
	)
}
