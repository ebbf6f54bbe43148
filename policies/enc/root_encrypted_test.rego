package gpuhost.enc.root_encrypted_test

import data.gpuhost.enc.root_encrypted as check

host(root) := {"target": {"kind": "host"}, "encryption": {"crypttab": [], "root": root, "swap": []}}

test_pass_live_luks if {
	check.deny == set() with input as host({"encrypted": true, "source": "sysfs", "device": "/dev/dm-0", "chain": ["/dev/dm-0", "/dev/nvme0n1p3"]})
}

test_fail_live_plain_disk if {
	check.deny == {"/ is on /dev/nvme0n1p2, which is not an encrypting device-mapper target (chain: /dev/nvme0n1p2)"} with input as host({"encrypted": false, "source": "sysfs", "device": "/dev/nvme0n1p2", "chain": ["/dev/nvme0n1p2"]})
}

test_fail_live_unknown_device if {
	check.deny == {"/ is on an unknown device, which is not an encrypting device-mapper target (chain: )"} with input as host({"encrypted": false, "source": "sysfs", "chain": []})
}

test_fail_live_no_root if {
	check.deny == {"could not find the block device under /, so it cannot be shown to be encrypted"} with input as {"target": {"kind": "host"}, "encryption": {"crypttab": [{"name": "data", "device": "UUID=1", "key_file": "none", "options": ["luks"]}], "swap": []}}
}

test_pass_image_root_on_crypttab_mapping if {
	check.deny == set() with input as {"target": {"kind": "image"}, "encryption": {
		"crypttab": [{"name": "cryptroot", "device": "UUID=abcd", "key_file": "none", "options": ["luks", "discard"]}],
		"root": {"encrypted": false, "source": "fstab", "device": "/dev/mapper/cryptroot", "chain": []},
		"swap": [],
	}}
}

test_pass_image_crypttab_only if {
	check.deny == set() with input as {"target": {"kind": "rootfs"}, "encryption": {
		"crypttab": [{"name": "cryptroot", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		"swap": [],
	}}
}

test_fail_image_root_not_mapping if {
	check.deny == {"/ is mounted from UUID=1234, which is not a mapping listed in /etc/crypttab"} with input as {"target": {"kind": "image"}, "encryption": {
		"crypttab": [{"name": "data", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		"root": {"encrypted": false, "source": "fstab", "device": "UUID=1234", "chain": []},
		"swap": [],
	}}
}

test_fail_image_no_crypttab if {
	check.deny == {"/etc/crypttab has no entries, so no encrypted volume is set up for /"} with input as {"target": {"kind": "rootfs"}, "encryption": {"crypttab": [], "swap": []}}
}

test_pass_image_lvm_on_luks if {
	check.deny == set() with input as {"target": {"kind": "image"}, "encryption": {
		"crypttab": [{"name": "dm_crypt-0", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		"root": {"encrypted": false, "source": "fstab", "device": "/dev/disk/by-id/dm-uuid-LVM-Xy12", "chain": []},
		"swap": [],
	}}
	check.deny == set() with input as {"target": {"kind": "image"}, "encryption": {
		"crypttab": [{"name": "dm_crypt-0", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		"root": {"encrypted": false, "source": "fstab", "device": "/dev/mapper/ubuntu--vg-ubuntu--lv", "chain": []},
		"swap": [],
	}}
}

test_fail_image_lvm_without_crypttab if {
	check.deny == {"/ is mounted from /dev/mapper/ubuntu--vg-ubuntu--lv, which is not a mapping listed in /etc/crypttab"} with input as {"target": {"kind": "image"}, "encryption": {
		"crypttab": [],
		"root": {"encrypted": false, "source": "fstab", "device": "/dev/mapper/ubuntu--vg-ubuntu--lv", "chain": []},
		"swap": [],
	}}
}
