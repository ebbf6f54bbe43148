package gpuhost.enc.cipher_strength_test

import data.gpuhost.enc.cipher_strength as check

crypt_hop(params) := {"device": "dm-0", "kind": "crypt", "name": "cryptroot", "learned": "sysfs", "depth": 1, "crypt": params}

facts(kind, hops) := {"target": {"kind": kind}, "encryption": {"crypttab": [], "swap": [], "root": {
	"encrypted": true, "source": "dm", "device": "/dev/mapper/vg-root", "chain": [h.device | some h in hops],
	"hops": array.concat([{"device": "dm-1", "kind": "lvm", "learned": "sysfs", "depth": 0}], hops),
}}}

test_pass_aes256_xts if {
	f := facts("host", [crypt_hop({"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "kernel"})])
	check.deny == set() with input as f with data.gpuhost.params as {}
	check.skip == set() with input as f with data.gpuhost.params as {}
}

test_pass_aes256_cbc if {
	check.deny == set() with input as facts("image", [crypt_hop({"type": "luks1", "cipher": "aes-cbc-essiv:sha256", "key_bits": 256, "source": "file"})]) with data.gpuhost.params as {}
}

test_fail_aes128_xts if {
	check.deny == {"dm-0 (cryptroot) uses aes-xts-plain64 with a 256-bit key, which is AES-128; at least 256 bits of strength are required"} with input as facts("host", [crypt_hop({"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 256, "source": "kernel"})]) with data.gpuhost.params as {}
}

test_fail_weak_non_aes if {
	check.deny == {"dm-0 (cryptroot) uses serpent-cbc-plain with a 128-bit key; at least 256 bits of strength are required"} with input as facts("image", [crypt_hop({"type": "luks1", "cipher": "serpent-cbc-plain", "key_bits": 128, "source": "file"})]) with data.gpuhost.params as {}
}

test_min_bits_from_params if {
	check.deny == set() with input as facts("host", [crypt_hop({"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 256, "source": "kernel"})]) with data.gpuhost.params as {}
		with data.gpuhost.params as {"encryption_min_key_bits": 128}
}

test_fail_cipher_null if {
	check.deny == {"dm-0 (cryptroot) uses cipher_null-ecb with a 0-bit key: cipher_null does not encrypt"} with input as facts("host", [crypt_hop({"type": "plain", "cipher": "cipher_null-ecb", "key_bits": 0, "source": "kernel"})]) with data.gpuhost.params as {}
}

test_fail_plain_without_hash if {
	check.deny == {"/dev/mapper/cryptroot (cryptroot) is plain dm-crypt with cipher aes-xts-plain64 and a 512-bit key but no hash= in /etc/crypttab for its passphrase"} with input as facts("image", [{
		"device": "/dev/mapper/cryptroot", "kind": "crypt", "name": "cryptroot", "learned": "crypttab", "depth": 1,
		"crypt": {"type": "plain", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "file"},
	}])
		with data.gpuhost.params as {}
	check.deny == set() with input as facts("image", [{
		"device": "/dev/mapper/cryptroot", "kind": "crypt", "learned": "crypttab", "depth": 1,
		"crypt": {"type": "plain", "cipher": "aes-xts-plain64", "key_bits": 512, "hash": "sha512", "source": "file"},
	}])
		with data.gpuhost.params as {}
}

test_fail_live_unreadable_cipher if {
	check.deny == {"the cipher of dm-0 (cryptroot) could not be read: reading the dm-crypt table of cryptroot: operation not permitted"} with input as facts("host", [crypt_hop({"type": "luks2", "cipher": "", "key_bits": 0, "source": "kernel", "error": "reading the dm-crypt table of cryptroot: operation not permitted"})]) with data.gpuhost.params as {}
	check.deny == {"the cipher of dm-0 could not be read: no cipher recorded"} with input as facts("host", [{"device": "dm-0", "kind": "crypt", "learned": "sysfs", "depth": 1}]) with data.gpuhost.params as {}
}

test_skip_image_without_cipher if {
	f := facts("rootfs", [{
		"device": "/dev/mapper/cryptroot", "kind": "crypt", "name": "cryptroot", "learned": "crypttab", "depth": 1,
		"crypt": {"type": "luks", "cipher": "", "key_bits": 0, "source": "file", "error": "the cipher is in the LUKS header, which is not in the scanned tree"},
	}])
	check.skip == {"the image does not say which cipher /dev/mapper/cryptroot (cryptroot) uses: the cipher is in the LUKS header, which is not in the scanned tree"} with input as f with data.gpuhost.params as {}
	check.deny == set() with input as f with data.gpuhost.params as {}
}

test_skip_no_crypt_device if {
	check.skip == {"/ has no crypt device on its chain (GH-ENC-001 reports that)"} with input as facts("host", []) with data.gpuhost.params as {}
	check.skip == {"/ has no crypt device on its chain (GH-ENC-001 reports that)"} with input as {"target": {"kind": "rootfs"}, "encryption": {"crypttab": [], "swap": []}} with data.gpuhost.params as {}
}
