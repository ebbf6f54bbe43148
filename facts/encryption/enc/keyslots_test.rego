package gpuhost.enc.keyslots_test

import data.gpuhost.enc.keyslots as check

luks_hop(crypt) := {"device": "dm-0", "kind": "crypt", "name": "gpuhost-root", "learned": "sysfs", "depth": 0, "crypt": crypt}

crypt(slots) := {"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "kernel", "keyslots": slots}

facts(kind, hops) := {"target": {"kind": kind}, "encryption": {"crypttab": [], "swap": [], "root": {
	"encrypted": true, "source": "dm", "device": "/dev/mapper/gpuhost-root", "chain": [h.device | some h in hops], "hops": hops,
}}}

tpm := {"id": "1", "kdf": "pbkdf2", "token": "systemd-tpm2", "empty_passphrase": false}

one_time := {"id": "0", "kdf": "argon2id", "empty_passphrase": true, "first_boot": "/etc/gpuhost/luks-enroll.conf"}

test_pass_booted_host_with_tpm_slot_only if {
	f := facts("host", [luks_hop(crypt([tpm]))])
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_host_that_kept_the_empty_slot if {
	# Live, nothing marks a slot as first boot's: the enrolment has run, or
	# failed, by the time anyone scans.
	f := facts("host", [luks_hop(crypt([object.remove(one_time, ["first_boot"])]))])
	check.deny == {"key slot 0 (argon2id) of dm-0 (gpuhost-root) opens with the empty passphrase: anyone holding the disk can read it"} with input as f
	check.skip == set() with input as f
}

test_pass_image_with_the_one_time_slot if {
	f := facts("image", [luks_hop(crypt([one_time]))])
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_image_with_another_empty_slot if {
	extra := {"id": "3", "kdf": "pbkdf2", "empty_passphrase": true}
	check.deny == {"key slot 3 (pbkdf2) of dm-0 (gpuhost-root) opens with the empty passphrase: anyone holding the disk can read it"} with input as facts("image", [luks_hop(crypt([one_time, extra]))])
}

test_fail_swap_slot if {
	f := {"target": {"kind": "host"}, "encryption": {"crypttab": [], "swap": [{"device": "/dev/dm-2", "encrypted": true, "hops": [
		{"device": "dm-2", "kind": "crypt", "learned": "sysfs", "depth": 0, "crypt": crypt([{"id": "0", "kdf": "pbkdf2", "empty_passphrase": true}])},
	]}]}}
	check.deny == {"key slot 0 (pbkdf2) of dm-2 opens with the empty passphrase: anyone holding the disk can read it"} with input as f
}

test_skip_untried_slot if {
	slow := {"id": "2", "kdf": "argon2id", "empty_passphrase": false, "untried": "argon2id with 4194304 KiB of memory is more than the 1048576 KiB a trial spends"}
	f := facts("host", [luks_hop(crypt([tpm, slow]))])
	check.deny == set() with input as f
	check.skip == {"key slot 2 of dm-0 (gpuhost-root) was not tried: argon2id with 4194304 KiB of memory is more than the 1048576 KiB a trial spends"} with input as f
}

test_skip_unread_header if {
	c := object.union(object.remove(crypt([]), ["keyslots"]), {"keyslots_error": "reading the LUKS header: permission denied"})
	f := facts("host", [luks_hop(c)])
	check.skip == {"the key slots of dm-0 (gpuhost-root) could not be tried: reading the LUKS header: permission denied"} with input as f
	g := facts("image", [luks_hop(object.remove(crypt([]), ["keyslots"]))])
	check.skip == {"the key slots of dm-0 (gpuhost-root) could not be tried: the scan did not read its LUKS header"} with input as g
}

test_open_slot_fails_even_beside_an_unread_one if {
	unread := object.union(luks_hop(object.remove(crypt([]), ["keyslots"])), {"device": "dm-5"})
	f := facts("host", [luks_hop(crypt([{"id": "0", "kdf": "pbkdf2", "empty_passphrase": true}])), unread])
	count(check.deny) == 1 with input as f
	check.skip == set() with input as f
}

test_pass_without_luks if {
	f := facts("host", [{"device": "vda1", "kind": "partition", "learned": "sysfs", "depth": 0}])
	check.skip == set() with input as f
	check.deny == set() with input as f
	check.deny == set() with input as facts("host", [])
}
