package gpuhost.enc.swap_encrypted_test

import data.gpuhost.enc.swap_encrypted as check

facts(crypttab, swap) := {"target": {"kind": "host"}, "encryption": {"crypttab": crypttab, "swap": swap}}

test_pass_no_swap if {
	check.deny == set() with input as facts([], [])
	check.deny == set() with input as {"target": {"kind": "rootfs"}, "encryption": {}}
}

test_pass_protected_swap if {
	check.deny == set() with input as facts(
		[{"name": "cryptswap", "device": "/dev/sda3", "key_file": "/dev/urandom", "options": ["swap"]}],
		[
			{"device": "/dev/zram0", "encrypted": false, "kind": "zram"},
			{"device": "/dev/zram1", "encrypted": false},
			{"device": "/dev/dm-1", "encrypted": true, "kind": "partition"},
			{"device": "/dev/mapper/cryptswap", "encrypted": false, "kind": "partition"},
		],
	)
}

test_fail_plain_swap if {
	check.deny == {"swap /swap.img is not encrypted", "swap /dev/sda2 is not encrypted"} with input as facts(
		[{"name": "cryptswap", "device": "/dev/sda3", "key_file": "/dev/urandom", "options": ["swap"]}],
		[
			{"device": "/swap.img", "encrypted": false, "kind": "file"},
			{"device": "/dev/sda2", "encrypted": false, "kind": "partition"},
			{"device": "/dev/zram0", "encrypted": false, "kind": "zram"},
		],
	)
}

# An image's swap is read from fstab: the finding points at its line.
test_fail_points_at_the_fstab_line if {
	check.deny == {{"msg": "swap /swapfile is not encrypted", "file": "/etc/fstab", "line": 3}} with input as {
		"target": {"kind": "rootfs"},
		"encryption": {"crypttab": [], "swap": [{"device": "/swapfile", "encrypted": false, "kind": "fstab", "file": "/etc/fstab", "line": 3}]},
	}
}
