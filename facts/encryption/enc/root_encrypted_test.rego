package gpuhost.enc.root_encrypted_test

import data.gpuhost.enc.root_encrypted as check

host(root) := {"target": {"kind": "host"}, "encryption": {"crypttab": [], "root": root, "swap": []}}

image(crypttab, root) := {"target": {"kind": "image"}, "encryption": {"crypttab": crypttab, "root": root, "swap": []}}

luks_entry := {"name": "dm_crypt-0", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}

test_pass_live_luks if {
	check.deny == set() with input as host({"encrypted": true, "source": "dm", "device": "/dev/dm-0", "chain": ["dm-0", "nvme0n1p3"]})
}

test_fail_live_plain_disk if {
	check.deny == {"/ is on /dev/nvme0n1p2, and not every path down from it passes an encrypting device-mapper target (chain: nvme0n1p2 (partition))"} with input as host({
		"encrypted": false, "source": "dm", "device": "/dev/nvme0n1p2", "chain": ["nvme0n1p2"],
		"hops": [{"device": "nvme0n1p2", "kind": "partition", "learned": "sysfs", "depth": 0}],
	})
}

test_fail_live_lvm_on_plain_disk if {
	check.deny == {"/ is on /dev/mapper/vg-root, and not every path down from it passes an encrypting device-mapper target (chain: dm-1 (lvm) -> sda3 (partition))"} with input as host({
		"encrypted": false, "source": "dm", "device": "/dev/mapper/vg-root", "chain": ["dm-1", "sda3"],
		"hops": [
			{"device": "dm-1", "kind": "lvm", "name": "vg-root", "learned": "sysfs", "depth": 0},
			{"device": "sda3", "kind": "partition", "learned": "sysfs", "depth": 1},
		],
	})
}

test_fail_live_unknown_device if {
	check.deny == {"/ is on an unknown device, and not every path down from it passes an encrypting device-mapper target (chain: )"} with input as host({"encrypted": false, "source": "dm", "chain": []})
}

test_fail_live_no_root if {
	check.deny == {"could not find the block device under /, so it cannot be shown to be encrypted"} with input as {"target": {"kind": "host"}, "encryption": {"crypttab": [luks_entry], "swap": []}}
}

test_pass_image_lvm_on_luks_chain if {
	check.deny == set() with input as image([luks_entry], {
		"encrypted": true, "source": "fstab", "device": "/dev/mapper/ubuntu--vg-ubuntu--lv",
		"chain": ["/dev/mapper/ubuntu--vg-ubuntu--lv", "/dev/mapper/dm_crypt-0", "UUID=abcd"],
		"hops": [
			{"device": "/dev/mapper/ubuntu--vg-ubuntu--lv", "kind": "lvm", "name": "ubuntu-vg/ubuntu-lv", "learned": "lvm-metadata", "depth": 0},
			{"device": "/dev/mapper/dm_crypt-0", "kind": "crypt", "name": "dm_crypt-0", "learned": "crypttab", "depth": 1},
			{"device": "UUID=abcd", "kind": "unknown", "learned": "crypttab", "depth": 2},
		],
	})
}

# Facts saved before offline chains: / straight on a crypttab mapping.
test_pass_image_root_on_crypttab_mapping if {
	check.deny == set() with input as image(
		[{"name": "cryptroot", "device": "UUID=abcd", "key_file": "none", "options": ["luks", "discard"]}],
		{"encrypted": false, "source": "fstab", "device": "/dev/mapper/cryptroot", "chain": []},
	)
	check.deny == set() with input as image(
		[{"name": "cryptroot", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		{"encrypted": false, "source": "fstab", "device": "/dev/disk/by-id/dm-name-cryptroot", "chain": []},
	)
}

# The regression: a crypttab line the root does not lead to used to pass an
# unencrypted LVM root.
test_fail_image_lvm_beside_unrelated_crypttab if {
	check.deny == {"/ is mounted from /dev/mapper/ubuntu--vg-ubuntu--lv, and not every path down from it passes a mapping listed in /etc/crypttab (chain: /dev/mapper/ubuntu--vg-ubuntu--lv (lvm) -> /dev/sda3 (partition))"} with input as image([luks_entry], {
		"encrypted": false, "source": "fstab", "device": "/dev/mapper/ubuntu--vg-ubuntu--lv",
		"chain": ["/dev/mapper/ubuntu--vg-ubuntu--lv", "/dev/sda3"],
		"hops": [
			{"device": "/dev/mapper/ubuntu--vg-ubuntu--lv", "kind": "lvm", "name": "ubuntu-vg/ubuntu-lv", "learned": "lvm-metadata", "depth": 0},
			{"device": "/dev/sda3", "kind": "partition", "learned": "lvm-metadata", "depth": 1},
		],
	})
}

test_fail_image_root_not_mapping if {
	check.deny == {"/ is mounted from UUID=1234, and not every path down from it passes a mapping listed in /etc/crypttab (chain: UUID=1234)"} with input as image(
		[{"name": "data", "device": "UUID=abcd", "key_file": "none", "options": ["luks"]}],
		{"encrypted": false, "source": "fstab", "device": "UUID=1234", "chain": ["UUID=1234"]},
	)
}

test_fail_image_crypttab_without_root if {
	check.deny == {"/etc/fstab names no device for /, so / cannot be followed to a mapping listed in /etc/crypttab"} with input as {"target": {"kind": "rootfs"}, "encryption": {"crypttab": [luks_entry], "swap": []}}
}

test_fail_image_no_crypttab if {
	check.deny == {"/etc/crypttab has no entries, so no encrypted volume is set up for /"} with input as {"target": {"kind": "rootfs"}, "encryption": {"crypttab": [], "swap": []}}
}

# With the fstab line known, the finding points at it (a SARIF region).
test_fail_image_points_at_fstab if {
	check.deny == {{
		"msg": "/ is mounted from UUID=1234, and not every path down from it passes a mapping listed in /etc/crypttab (chain: UUID=1234)",
		"file": "/etc/fstab", "line": 4,
	}} with input as image(
		[{"name": "data", "device": "UUID=abcd", "key_file": "none", "options": ["luks"], "file": "/etc/crypttab", "line": 1}],
		{"encrypted": false, "source": "fstab", "device": "UUID=1234", "chain": ["UUID=1234"], "file": "/etc/fstab", "line": 4},
	)
}

# A plain image whose crypttab names a UUID that exists nowhere: the mapping
# opens nothing, / is not encrypted, and the line is a finding of its own.
test_fail_image_crypttab_of_absent_device if {
	entry := {"name": "cryptroot", "device": "UUID=0b5a", "key_file": "none", "options": ["luks"], "absent": true, "file": "/etc/crypttab", "line": 1}
	denies := check.deny with input as image(
		[entry],
		{"encrypted": false, "source": "fstab", "device": "/dev/mapper/cryptroot", "chain": ["/dev/mapper/cryptroot", "UUID=0b5a"]},
	)
	count(denies) == 2
	some f in denies
	f.file == "/etc/crypttab"
	f.line == 1
	contains(f.msg, "which the image does not hold")
}

# On a host, a stale line is named too, unless the host opens it only on
# demand.
test_fail_host_crypttab_of_absent_device if {
	entry := {"name": "backup", "device": "UUID=ffff", "key_file": "none", "options": ["luks"], "absent": true}
	root := {"encrypted": true, "source": "dm", "device": "/dev/dm-0", "chain": ["dm-0", "nvme0n1p3"]}
	denies := check.deny with input as {"target": {"kind": "host"}, "encryption": {"crypttab": [entry], "root": root, "swap": []}}
	denies == {"/etc/crypttab maps backup to UUID=ffff, which the host does not hold: the line encrypts nothing"}
	noauto := json.patch(entry, [{"op": "replace", "path": "/options", "value": ["luks", "noauto"]}])
	check.deny == set() with input as {"target": {"kind": "host"}, "encryption": {"crypttab": [noauto], "root": root, "swap": []}}
}
