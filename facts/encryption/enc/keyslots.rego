# METADATA
# title: No key slot of an encrypted volume opens with the empty passphrase
# description: >-
#   A LUKS key slot that the empty passphrase opens hands the volume to anyone who holds the
#   disk, whatever cipher protects it. gpuhost tries the empty passphrase on every key slot of
#   each LUKS1 and LUKS2 volume under / and swap, the way cryptsetup would open it (the slot's KDF, its
#   key material, the anti-forensic merge, the header's digest), read from the partition on a
#   live host and from the disk in an image. An image may carry one such slot, the one-time
#   slot the gpuhost-rootfs builder's first boot wipes once it has sealed a key to the host's
#   TPM2; on a booted host none may remain. A slot whose KDF asks for more than a trial spends,
#   and a volume whose header could not be read, leave the check unable to decide, which it
#   says. With no LUKS volume there is no slot to open, and the check passes (GH-ENC-001 and
#   GH-ENC-002 judge whether / and swap are encrypted at all). A root file system tree carries
#   no LUKS header, so the check does not apply to one.
# scope: package
# custom:
#   id: GH-ENC-004
#   severity: critical
#   location: /etc/crypttab
#   remediation: >-
#     Remove the slot (cryptsetup luksKillSlot DEVICE SLOT) once another slot opens the volume:
#     seal a key to the TPM2 (systemd-cryptenroll --tpm2-device=auto DEVICE), or add a real
#     passphrase or recovery key (systemd-cryptenroll --recovery-key DEVICE). On a host booted
#     from a gpuhost image, see why gpuhost-luks-enroll.service failed (journalctl -u
#     gpuhost-luks-enroll); it needs a TPM2.
#   controls:
#     nist-800-53: [SC-28, IA-5]
#     cis: ["1.4.1"]
#   targets: [image, host, facts]
#   requires: [encryption]
package gpuhost.enc.keyslots

import data.gpuhost.enc.lib

# The slots of h the empty passphrase opens that nothing will wipe: on an
# image, first boot wipes the one its enrolment names.
open_slots(h) := [s |
	some s in object.get(lib.crypt(h), "keyslots", [])
	s.empty_passphrase
	not wiped_at_first_boot(s)
]

wiped_at_first_boot(s) if {
	not lib.live
	object.get(s, "first_boot", "") != ""
}

read(h) if "keyslots" in object.keys(lib.crypt(h))

# A slot that opens decides the check, whatever could not be tried.
decided if {
	some h in lib.luks_hops
	count(open_slots(h)) > 0
}

skip contains msg if {
	not decided
	some h in lib.luks_hops
	not read(h)
	why := object.get(lib.crypt(h), "keyslots_error", "the scan did not read its LUKS header")
	msg := sprintf("the key slots of %s could not be tried: %s", [lib.name(h), why])
}

skip contains msg if {
	not decided
	some h in lib.luks_hops
	some s in object.get(lib.crypt(h), "keyslots", [])
	object.get(s, "untried", "") != ""
	msg := sprintf("key slot %s of %s was not tried: %s", [s.id, lib.name(h), s.untried])
}

deny contains msg if {
	some h in lib.luks_hops
	some s in open_slots(h)
	msg := sprintf("key slot %s (%s) of %s opens with the empty passphrase: anyone holding the disk can read it", [s.id, s.kdf, lib.name(h)])
}
