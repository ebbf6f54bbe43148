# METADATA
# title: Root filesystem is encrypted at rest
# description: >-
#   On a live host, / must sit on an encrypting device-mapper target (LUKS, plain dm-crypt,
#   BitLocker), as read from the block device chain. In an image or rootfs the check reads
#   intent instead - / must be mounted from /dev/mapper/<name> for a name in /etc/crypttab,
#   or, where that cannot be told offline (root device unknown, or a device-mapper device such
#   as an LVM volume that may sit on a crypttab mapping), /etc/crypttab must have an entry.
# scope: package
# custom:
#   id: GH-ENC-001
#   severity: high
#   remediation: >-
#     Install the image onto a LUKS2 volume (cryptsetup luksFormat, listed in /etc/crypttab and
#     unlocked in the initramfs, for example by TPM2 or a network key) and mount / from the mapping.
#   controls:
#     nist-800-53: [SC-28, SC-28(1)]
#   targets: [rootfs, image, host, facts]
#   requires: [encryption]
package gpuhost.enc.root_encrypted

enc := input.encryption

root := object.get(enc, "root", null)

crypttab := object.get(enc, "crypttab", [])

live if input.target.kind == "host"

mapping_names contains e.name if some e in crypttab

root_device := root.device if {
	root != null
	object.get(root, "device", "") != ""
}

# Observed: the collector walked the device chain and found an encrypting target.
encrypted if root.encrypted == true

# Configured: / is mounted from a crypttab mapping.
encrypted if {
	not live
	some name in mapping_names
	root_device in {sprintf("/dev/mapper/%s", [name]), sprintf("/dev/disk/by-id/dm-name-%s", [name])}
}

# Configured, weaker: the root device is unknown but crypttab sets up a mapping.
encrypted if {
	not live
	not root_device
	count(crypttab) > 0
}

# Configured, weaker: / is on a device-mapper device that is not itself a crypttab
# mapping, as with LVM on LUKS (Ubuntu's encrypted layout); offline the stack cannot
# be walked, so a crypttab entry is taken as the encrypting layer.
encrypted if {
	not live
	dm_device(root_device)
	count(crypttab) > 0
}

dm_device(d) if startswith(d, "/dev/mapper/")

dm_device(d) if startswith(d, "/dev/disk/by-id/dm-")

chain := concat(" -> ", object.get(root, "chain", [])) if root != null

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
	msg := sprintf("/ is on %s, which is not an encrypting device-mapper target (chain: %s)", [object.get(root, "device", "an unknown device"), chain])
}

deny contains msg if {
	not live
	not encrypted
	root_device
	msg := sprintf("/ is mounted from %s, which is not a mapping listed in /etc/crypttab", [root_device])
}

deny contains msg if {
	not live
	not encrypted
	not root_device
	msg := "/etc/crypttab has no entries, so no encrypted volume is set up for /"
}
