# METADATA
# title: An encrypted volume's key is the host's own, not the image's
# description: >-
#   Every host booted from one image starts with the image's volume key, which whoever holds the
#   image can read through its one-time key slot; wiping the slot does not change the key. The
#   gpuhost-rootfs builder records the digest of the image's key in the LUKS2 header (a
#   gpuhost-image-key token), and first boot re-encrypts the volume with a key of the host's own
#   before sealing a key to the TPM2. An image passes when its enabled first-boot enrolment
#   re-encrypts each LUKS volume. A host fails while a volume is under the image's key or its
#   re-encryption is unfinished, and passes once the key is no longer the recorded one. A header
#   that records no image key, or was not read, cannot be decided. With no LUKS volume the check
#   passes; a root file system tree has no header, so it does not apply.
# scope: package
# custom:
#   id: GH-ENC-005
#   severity: high
#   location: /etc/crypttab
#   remediation: >-
#     Re-encrypt the volume with a new key while it is in use ("cryptsetup reencrypt DEVICE",
#     with a passphrase of one of its key slots), then seal a new key to the TPM2 (systemd-cryptenroll
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
