package gpuhost.enc.volume_key_test

import data.gpuhost.enc.volume_key as check

luks_hop(key) := {"device": "dm-0", "kind": "crypt", "name": "gpuhost-root", "learned": "sysfs", "depth": 0, "crypt": object.union(
	{"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "kernel", "keyslots": []},
	{"volume_key": key},
)}

no_header_hop := {"device": "dm-0", "kind": "crypt", "name": "gpuhost-root", "learned": "sysfs", "depth": 0, "crypt": {
	"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "kernel",
	"keyslots_error": "reading the LUKS header of /dev/vda4: permission denied",
}}

facts(kind, hops) := {"target": {"kind": kind}, "encryption": {"crypttab": [], "swap": [], "root": {
	"encrypted": true, "source": "dm", "device": "/dev/mapper/gpuhost-root", "chain": [h.device | some h in hops], "hops": hops,
}}}

test_pass_image_reencrypted_at_first_boot if {
	f := facts("image", [luks_hop({"origin": "image", "first_boot": "/etc/gpuhost/luks-enroll.conf"})])
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_image_nothing_reencrypts if {
	f := facts("image", [luks_hop({"origin": "image"})])
	check.deny == {"dm-0 (gpuhost-root) is encrypted with the image's volume key, and nothing re-encrypts it at first boot: every host booted from the image would share the key"} with input as f
}

test_pass_host_with_its_own_key if {
	f := facts("host", [luks_hop({"origin": "host"})])
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_host_still_on_the_image_key if {
	# A first_boot mark counts only in an image.
	f := facts("host", [luks_hop({"origin": "image", "first_boot": "/etc/gpuhost/luks-enroll.conf"})])
	check.deny == {"dm-0 (gpuhost-root) is still encrypted with the volume key of the image it was booted from, which every host of that image shares"} with input as f
}

test_fail_host_mid_reencryption if {
	f := facts("host", [luks_hop({"origin": "image", "reencrypting": true})])
	check.deny == {"the re-encryption of dm-0 (gpuhost-root) is unfinished: part of it is still under the old volume key"} with input as f
	check.skip == set() with input as f
}

test_skip_host_with_no_record if {
	f := facts("host", [luks_hop({"origin": "unknown"})])
	check.deny == set() with input as f
	check.skip == {"the LUKS header of dm-0 (gpuhost-root) records no image key: whether other hosts share its volume key cannot be told"} with input as f
}

test_skip_image_volume_not_in_the_image if {
	f := facts("image", [no_header_hop])
	check.deny == set() with input as f
	check.skip == {"the LUKS header of dm-0 (gpuhost-root) was not read: where its volume key came from is not known"} with input as f
}

test_skip_host_header_not_read if {
	f := facts("host", [no_header_hop])
	check.deny == set() with input as f
	check.skip == {"the LUKS header of dm-0 (gpuhost-root) was not read: where its volume key came from is not known"} with input as f
}

test_fail_image_swap_on_the_image_key if {
	f := {"target": {"kind": "image"}, "encryption": {"crypttab": [], "swap": [{"device": "/dev/mapper/swap", "encrypted": true, "hops": [
		{"device": "/dev/mapper/swap", "kind": "crypt", "learned": "crypttab", "depth": 0, "crypt": {"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "file", "volume_key": {"origin": "image"}}},
	]}]}}
	count(check.deny) == 1 with input as f
}

test_pass_without_luks if {
	f := facts("host", [{"device": "vda2", "kind": "partition", "learned": "sysfs", "depth": 0}])
	check.deny == set() with input as f
	check.skip == set() with input as f
}
