# METADATA
# title: Root filesystem is encrypted at rest
# description: >-
#   The device under / must lead to an encrypting device (LUKS, plain dm-crypt, BitLocker) on
#   every path down to a disk. On a live host the chain is read from sysfs (the device-mapper
#   slaves of the device / is mounted from). In an image or rootfs it is followed from the fstab
#   entry for / through the LVM metadata backups (/etc/lvm/backup) to a mapping /etc/crypttab
#   opens; a crypttab entry that / does not lead to does not count, and in a disk image the
#   entry must name a LUKS volume the image holds. A crypttab line for a device the target does
#   not hold is a finding of its own.
# scope: package
# custom:
#   id: GH-ENC-001
#   severity: high
#   location: /etc/crypttab
#   remediation: >-
#     Install the image onto a LUKS2 volume (cryptsetup luksFormat, listed in /etc/crypttab and
#     unlocked in the initramfs, for example by TPM2 or a network key) and mount / from the mapping,
#     directly or through an LVM volume group whose physical volumes are the mapping.
#   controls:
#     nist-800-53: [SC-28, SC-28(1)]
#   targets: [rootfs, image, host, facts]
#   requires: [encryption]
package gpuhost.enc.root_encrypted

import data.gpuhost.lib.locate

enc := input.encryption

root := object.get(enc, "root", null)

crypttab := object.get(enc, "crypttab", [])

live if input.target.kind == "host"

root_device := root.device if {
	root != null
	object.get(root, "device", "") != ""
}

# The collector walked the chain and every path down from / met a crypt device.
encrypted if root.encrypted == true

# Facts saved before chains were followed offline: / mounted straight from a
# crypttab mapping is a crypt device itself.
encrypted if {
	not live
	some e in crypttab
	not e.absent
	root_device in {sprintf("/dev/mapper/%s", [e.name]), sprintf("/dev/disk/by-id/dm-name-%s", [e.name])}
}

hop_text(h) := sprintf("%s (%s)", [h.device, h.kind])

chain := concat(" -> ", [hop_text(h) | some h in root.hops]) if {
	count(object.get(root, "hops", [])) > 0
} else := concat(" -> ", object.get(root, "chain", [])) if root != null

deny contains msg if {
	live
	not encrypted
	root == null
	msg := "could not find the block device under /, so it cannot be shown to be encrypted"
}

deny contains msg if {
	live
	not encrypted
	root != null
	msg := sprintf(
		"/ is on %s, and not every path down from it passes an encrypting device-mapper target (chain: %s)",
		[object.get(root, "device", "an unknown device"), chain],
	)
}

deny contains finding if {
	not live
	not encrypted
	root_device
	msg := sprintf("/ is mounted from %s, and not every path down from it passes a mapping listed in /etc/crypttab (chain: %s)", [root_device, chain])
	finding := at_fstab(msg)
}

deny contains msg if {
	not live
	not encrypted
	not root_device
	count(crypttab) == 0
	msg := "/etc/crypttab has no entries, so no encrypted volume is set up for /"
}

deny contains msg if {
	not live
	not encrypted
	not root_device
	count(crypttab) > 0
	msg := "/etc/fstab names no device for /, so / cannot be followed to a mapping listed in /etc/crypttab"
}

# A crypttab line for a device the target does not hold (no volume of the
# image answers to it, no such device on the host) opens nothing at boot: it
# is a finding of its own, never evidence of encryption. A line the host
# opens only on demand (noauto) may name a device that comes and goes.
deny contains finding if {
	some e in crypttab
	e.absent == true
	not "noauto" in object.get(e, "options", [])
	msg := sprintf("/etc/crypttab maps %s to %s, which the %s does not hold: the line encrypts nothing", [e.name, e.device, target_word])
	finding := at_crypttab(e, msg)
}

default target_word := "image"

target_word := "host" if live

at_crypttab(e, msg) := locate.at(msg, object.get(e, "file", ""), object.get(e, "line", 0))

# at_fstab points a finding at the fstab line that mounts /, when the facts
# know it.
at_fstab(msg) := locate.at(msg, object.get(root, "file", ""), object.get(root, "line", 0))
