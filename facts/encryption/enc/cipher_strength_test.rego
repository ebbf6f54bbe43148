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
	check.skip == {"no crypt device under / or swap (GH-ENC-001 and GH-ENC-002 report that)"} with input as facts("host", []) with data.gpuhost.params as {}
	check.skip == {"no crypt device under / or swap (GH-ENC-001 and GH-ENC-002 report that)"} with input as {"target": {"kind": "rootfs"}, "encryption": {"crypttab": [], "swap": []}} with data.gpuhost.params as {}
}

swap_hop(params) := {"device": "dm-2", "kind": "crypt", "name": "cryptswap", "learned": "sysfs", "depth": 0, "crypt": params}

with_swap(f, crypttab, swap) := object.union(f, {"encryption": object.union(f.encryption, {"crypttab": crypttab, "swap": swap})})

test_fail_weak_swap if {
	f := with_swap(facts("host", []), [], [{"device": "/dev/dm-2", "encrypted": true, "kind": "partition", "hops": [swap_hop({"type": "plain", "cipher": "aes-xts-plain64", "key_bits": 256, "source": "kernel"})]}])
	check.deny == {"dm-2 (cryptswap) uses aes-xts-plain64 with a 256-bit key, which is AES-128; at least 256 bits of strength are required"} with input as f with data.gpuhost.params as {}
	check.skip == set() with input as f with data.gpuhost.params as {}
}

# A swap file on / meets the root's crypt device again: one message.
test_swap_file_on_root_counts_once if {
	weak := crypt_hop({"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 256, "source": "kernel"})
	f := with_swap(facts("host", [weak]), [], [{"device": "/swap.img", "encrypted": true, "kind": "file", "hops": [{"device": "dm-1", "kind": "lvm", "learned": "sysfs", "depth": 0}, weak]}])
	check.deny == {"dm-0 (cryptroot) uses aes-xts-plain64 with a 256-bit key, which is AES-128; at least 256 bits of strength are required"} with input as f with data.gpuhost.params as {}
}

test_random_key_swap_needs_no_hash if {
	hop := {"device": "/dev/mapper/cryptswap", "kind": "crypt", "name": "cryptswap", "learned": "crypttab", "depth": 0, "crypt": {"type": "plain", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "file"}}
	random := with_swap(facts("image", []), [{"name": "cryptswap", "device": "/dev/sda2", "key_file": "/dev/urandom", "options": ["swap"]}], [{"device": "/dev/mapper/cryptswap", "encrypted": true, "kind": "fstab", "hops": [hop]}])
	check.deny == set() with input as random with data.gpuhost.params as {}
	passphrase := with_swap(facts("image", []), [{"name": "cryptswap", "device": "/dev/sda2", "key_file": "none", "options": ["plain"]}], [{"device": "/dev/mapper/cryptswap", "encrypted": true, "kind": "fstab", "hops": [hop]}])
	check.deny == {"/dev/mapper/cryptswap (cryptswap) is plain dm-crypt with cipher aes-xts-plain64 and a 512-bit key but no hash= in /etc/crypttab for its passphrase"} with input as passphrase with data.gpuhost.params as {}
}

# With its crypttab line known, the finding points at it; a name the file
# repeats points at its first line.
test_fail_plain_without_hash_points_at_crypttab if {
	hop := {"device": "/dev/mapper/cryptswap", "kind": "crypt", "name": "cryptswap", "learned": "crypttab", "depth": 0, "crypt": {"type": "plain", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "file"}}
	entry := {"name": "cryptswap", "device": "/dev/sda2", "key_file": "none", "options": ["plain"], "file": "/etc/crypttab", "line": 3}
	again := object.union(entry, {"line": 7})
	passphrase := with_swap(facts("image", []), [entry, again], [{"device": "/dev/mapper/cryptswap", "encrypted": true, "kind": "fstab", "hops": [hop]}])
	check.deny == {{
		"msg": "/dev/mapper/cryptswap (cryptswap) is plain dm-crypt with cipher aes-xts-plain64 and a 512-bit key but no hash= in /etc/crypttab for its passphrase",
		"file": "/etc/crypttab", "line": 3,
	}} with input as passphrase with data.gpuhost.params as {}
}
