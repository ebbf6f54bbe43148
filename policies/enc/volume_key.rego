# METADATA
# title: An encrypted volume's key is the host's own, not the image's
# description: >-
#   Every host booted from one image starts with the image's volume key, and whoever holds the
#   image can read that key through its one-time key slot. Wiping the slot at first boot does not
#   change the key: each host's disk would stay readable with the key taken from the image. So the
#   gpuhost-rootfs builder records the digest of the image's volume key in the LUKS2 header (a
#   gpuhost-image-key token), and first boot re-encrypts the volume with a key of the host's own
#   before it seals a key to the TPM2. In an image the check passes when the image's enabled
#   first-boot enrolment re-encrypts each LUKS volume, and fails otherwise. On a host it fails
#   while a volume is still under the image's key or its re-encryption is unfinished, passes once
#   the header's key is no longer the recorded one, and cannot decide for a volume whose header
#   records no image key (made by other means, or LUKS1), nor for one whose header was not read
#   (in an image: a crypttab volume the image does not hold). With no LUKS volume it passes; a
#   root file system tree carries no header, so the check does not apply to one.
# scope: package
# custom:
#   id: GH-ENC-005
#   severity: high
#   remediation: >-
#     Re-encrypt the volume with a new key while it is in use (cryptsetup reencrypt DEVICE with a
#     passphrase of one of its key slots), then seal a new key to the TPM2 (systemd-cryptenroll
#     --tpm2-device=auto DEVICE). For an image, build it with the gpuhost-rootfs builder's
#     encryption block, whose first boot does both. On a host booted from a gpuhost image, see
#     why gpuhost-luks-enroll.service did not finish (journalctl -u gpuhost-luks-enroll); an
#     interrupted re-encryption resumes when it runs again.
#   controls:
#     nist-800-53: [SC-28, SC-12]
#     cis: ["1.4.1"]
#   targets: [image, host, facts]
#   requires: [encryption]
package gpuhost.enc.volume_key

import data.gpuhost.enc.lib

key(h) := object.get(lib.crypt(h), "volume_key", {})

origin(h) := object.get(key(h), "origin", "")

reencrypted_at_first_boot(h) if {
	not lib.live
	object.get(key(h), "first_boot", "") != ""
}

deny contains msg if {
	not lib.live
	some h in lib.luks_hops
	origin(h) == "image"
	not reencrypted_at_first_boot(h)
	msg := sprintf(
		"%s is encrypted with the image's volume key, and nothing re-encrypts it at first boot: every host booted from the image would share the key",
		[lib.name(h)],
	)
}

deny contains msg if {
	lib.live
	some h in lib.luks_hops
	object.get(key(h), "reencrypting", false)
	msg := sprintf("the re-encryption of %s is unfinished: part of it is still under the old volume key", [lib.name(h)])
}

deny contains msg if {
	lib.live
	some h in lib.luks_hops
	not object.get(key(h), "reencrypting", false)
	origin(h) == "image"
	msg := sprintf("%s is still encrypted with the volume key of the image it was booted from, which every host of that image shares", [lib.name(h)])
}

skip contains msg if {
	some h in lib.luks_hops
	origin(h) == ""
	msg := sprintf("the LUKS header of %s was not read: where its volume key came from is not known", [lib.name(h)])
}

skip contains msg if {
	lib.live
	some h in lib.luks_hops
	not object.get(key(h), "reencrypting", false)
	origin(h) == "unknown"
	msg := sprintf("the LUKS header of %s records no image key: whether other hosts share its volume key cannot be told", [lib.name(h)])
}
