# METADATA
# title: Swap is absent, in RAM, or encrypted
# description: >-
#   Every swap area must be encrypted - on an encrypting device-mapper target, or (offline)
#   a /dev/mapper/<name> device listed in /etc/crypttab. zram swap lives in RAM and passes.
#   No swap at all passes.
# scope: package
# custom:
#   id: GH-ENC-002
#   severity: medium
#   location: /etc/fstab
#   remediation: >-
#     Remove the swap area, switch to zram, or put swap on dm-crypt with a random key
#     (a crypttab entry with the "swap" option and /dev/urandom as its key file).
#   controls:
#     nist-800-53: [SC-28, SC-28(1)]
#   targets: [rootfs, image, host, facts]
#   requires: [encryption]
package gpuhost.enc.swap_encrypted

import data.gpuhost.lib.locate

mapper_devices contains sprintf("/dev/mapper/%s", [e.name]) if {
	some e in object.get(input.encryption, "crypttab", [])
}

in_ram(s) if s.kind == "zram"

in_ram(s) if startswith(s.device, "/dev/zram")

protected(s) if s.encrypted == true

protected(s) if in_ram(s)

protected(s) if s.device in mapper_devices

# An image's swap points at its fstab line; a live host's, read from
# /proc/swaps, has none.
deny contains finding if {
	some s in object.get(input.encryption, "swap", [])
	not protected(s)
	msg := sprintf("swap %s is not encrypted", [s.device])
	finding := locate.at(msg, object.get(s, "file", ""), object.get(s, "line", 0))
}
