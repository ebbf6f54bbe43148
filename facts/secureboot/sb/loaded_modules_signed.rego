# METADATA
# title: Every loaded out-of-tree module was verified by the kernel with a trusted key
# description: >-
#   On a running host gpuhost reads /proc/modules and takes each module the kernel marks out of
#   tree (taint O). The kernel's own verdict decides: taint E says it loaded the module without a
#   signature it could verify with a key it trusts, and fails. gpuhost also reads the module's file
#   (where the running release's modules.dep puts it), its appended signature, signer and key id,
#   and verifies it with the keys the host trusts: MokListRT (EFI_SIGNATURE_LIST, the Machine
#   Owner Keys shim hands the kernel) and the DKMS certificate where MokListRT holds it. A module
#   file with no signature, or whose signature no longer verifies with the key it names, fails,
#   named; one signed by a key only the kernel's built-in keyring holds passes on the kernel's
#   word. A host that does not boot through shim skips unless params.secure_boot_required is true.
# scope: package
# custom:
#   id: GH-SB-006
#   severity: high
#   location: /var/lib/dkms/mok.pub
#   remediation: >-
#     Enrol the key the modules are signed with (mokutil --import /var/lib/dkms/mok.pub, then
#     confirm in MokManager at the next boot), or rebuild and sign the modules with an enrolled key
#     (dkms autoinstall with the MOK key in /var/lib/dkms), and reload them.
#   controls:
#     nist-800-53: [SI-7, SI-7(15), CM-14]
#   targets: [host, facts]
#   requires: [secureboot]
package gpuhost.sb.loaded_modules_signed

import data.gpuhost.sb.lib

loaded := [m | some m in object.get(lib.sb, "modules", []); m.loaded == true]

skip contains lib.advisory

skip contains "the facts hold no loaded modules' state: it is read only on a running host" if {
	object.get(lib.sb, "firmware", null) == null
	count(loaded) == 0
}

error contains lib.unknown

error contains msg if {
	object.get(lib.sb, "modules_error", "") != ""
	msg := sprintf("the loaded out-of-tree modules could not all be read: %s", [lib.sb.modules_error])
}

error contains finding if {
	some m in loaded
	m.file != ""
	not m.signed
	object.get(m, "error", "") != ""

	# The kernel's own verdict needs no file.
	not contains(object.get(m, "taint", ""), "E")
	finding := lib.at(m.file, sprintf("the file of module %s could not be read: %s", [m.name, m.error]))
}

deny contains {"msg": msg, "subject": m.name} if {
	some m in loaded
	contains(object.get(m, "taint", ""), "E")
	msg := sprintf("module %s was loaded without a signature the kernel could verify with a key it trusts (taint %s)", [m.name, m.taint])
}

deny contains finding if {
	some m in loaded
	m.file != ""
	not m.signed
	object.get(m, "error", "") == ""
	finding := lib.at(m.file, sprintf("module %s (%s) carries no module signature", [m.name, m.file]))
}

deny contains finding if {
	some m in loaded
	m.signed
	contains(object.get(m, "error", ""), "does not verify")
	finding := lib.at(m.file, sprintf("module %s: %s", [m.name, m.error]))
}
