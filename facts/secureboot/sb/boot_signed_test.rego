package gpuhost.sb.boot_signed_test

import data.gpuhost.sb.boot_signed as check
import data.gpuhost.sb.fixtures_test as fx

test_pass_signed_chain if {
	f := fx.facts("image", {"esp": "partition 2", "boot_files": [fx.shim, fx.grub, fx.kernel]})
	check.deny == set() with input as f
	check.skip == set() with input as f
	check.error == set() with input as f
}

test_skip_todays_image_by_default if {
	f := fx.facts("image", {"esp": "partition 2", "boot_files": [fx.core_efi, object.union(fx.kernel, {"signatures": []})]})
	check.skip == {"the image does not boot with Secure Boot (no shim on the ESP) and params.secure_boot_required is false"} with input as f
}

test_fail_todays_image_when_required if {
	f := fx.facts("image", {"esp": "partition 2", "boot_files": [fx.core_efi, fx.kernel]})
	check.skip == set() with input as f with data.gpuhost.params as fx.required
	check.deny == {{
		"msg": "partition 2:/EFI/BOOT/BOOTX64.EFI (grub) carries no Authenticode signature: Secure Boot refuses to load it",
		"subject": "partition 2:/EFI/BOOT/BOOTX64.EFI",
	}} with input as f
		with data.gpuhost.params as fx.required
}

test_fail_changed_after_signing if {
	changed := object.union(fx.grub, {"signatures": [object.union(fx.sig_ok, {"digest_matches": false, "error": "the file's sha256 Authenticode digest 00 is not the signed 11: it changed after signing"})]})
	check.deny == {{
		"msg": "/boot/efi/EFI/debian/grubx64.efi (grub) carries no signature Secure Boot would accept: the file's sha256 Authenticode digest 00 is not the signed 11: it changed after signing",
		"file": "/boot/efi/EFI/debian/grubx64.efi",
	}} with input as fx.facts("rootfs", {"boot_files": [fx.shim, changed]})
}

test_fail_bad_signatures_say_why if {
	bad := object.union(fx.kernel, {"signatures": [
		object.union(fx.sig_ok, {"signature_valid": false}),
		object.union(fx.sig_ok, {"digest_matches": false}),
	]})
	check.deny == {{
		"msg": "/boot/vmlinuz-6.1.0-28-amd64 (kernel) carries no signature Secure Boot would accept: the signature by CN=Debian Secure Boot Signer 2022 - linux does not verify; the sha256 digest signed by CN=Debian Secure Boot Signer 2022 - linux is not the file's: it changed after signing",
		"file": "/boot/vmlinuz-6.1.0-28-amd64",
	}} with input as fx.facts("rootfs", {"boot_files": [fx.shim, bad]})
}

test_fail_no_esp_or_empty_esp_when_required if {
	check.deny == {"the image has no EFI system partition (no partition of the EFI system type, no /boot/efi): nothing for Secure Boot firmware to load"} with input as fx.facts("rootfs", {"esp": ""})
		with data.gpuhost.params as fx.required
	check.deny == {"the EFI system partition (/boot/efi) holds no EFI binary under /EFI for Secure Boot firmware to load"} with input as fx.facts("rootfs", {})
		with data.gpuhost.params as fx.required
}

test_error_unreadable if {
	f := fx.facts("image", {"esp": "partition 2", "esp_error": "reading the EFI system partition, partition 2: the FAT's cluster chain through cluster 40 loops"})
	check.error == {"the EFI system partition (partition 2) could not be read: reading the EFI system partition, partition 2: the FAT's cluster chain through cluster 40 loops"} with input as f
		with data.gpuhost.params as fx.required
	g := fx.facts("rootfs", {"boot_files": [fx.shim, {"path": "/boot/vmlinuz-x", "role": "kernel", "size": 0, "signatures": [], "error": "not a PE image: no MZ header"}]})
	check.error == {{"msg": "/boot/vmlinuz-x could not be read as a PE image: not a PE image: no MZ header", "file": "/boot/vmlinuz-x"}} with input as g
	check.deny == set() with input as g

	# Without params.secure_boot_required the unread ESP is still an
	# error, not the skip of a target without shim.
	check.error == {"the EFI system partition (partition 2) could not be read: reading the EFI system partition, partition 2: the FAT's cluster chain through cluster 40 loops"} with input as f
	check.skip == set() with input as f
}

# A running host is judged on its mounted ESP and /boot, as an image is.
test_host_mounted_esp if {
	check.deny == set() with input as fx.host({"boot_files": [fx.shim, fx.grub, fx.kernel]})
	unsigned := object.union(fx.grub, {"signatures": []})
	check.deny == {{
		"msg": "/boot/efi/EFI/debian/grubx64.efi (grub) carries no Authenticode signature: Secure Boot refuses to load it",
		"file": "/boot/efi/EFI/debian/grubx64.efi",
	}} with input as fx.host({"boot_files": [fx.shim, unsigned, fx.kernel]})
}

# A signature that verifies over the file but whose chain reaches no anchor
# (a key of the attacker's own, self-signed) is refused, naming the anchors
# the file was held to: db alone for shim, db, the vendor certificate and
# the MOK list for what shim loads.
test_fail_chain_reaching_no_anchor if {
	self := object.union(fx.sig_ok, {"signer": "CN=Evil", "issuer": "CN=Evil"})
	own_shim := object.union(fx.shim, {"signatures": [object.remove(self, ["anchor"])]})
	own_grub := object.union(fx.grub, {"signatures": [object.remove(self, ["anchor"])]})
	check.deny == {
		{
			"msg": "/boot/efi/EFI/debian/shimx64.efi (shim) carries no signature Secure Boot would accept: the signature by CN=Evil (issued by CN=Evil) verifies, but its chain reaches no trust anchor the firmware holds shim to; those are: db: CN=Microsoft Corporation UEFI CA 2011 (built in)",
			"file": "/boot/efi/EFI/debian/shimx64.efi",
		},
		{
			"msg": "/boot/efi/EFI/debian/grubx64.efi (grub) carries no signature Secure Boot would accept: the signature by CN=Evil (issued by CN=Evil) verifies, but its chain reaches no trust anchor shim holds grub to; those are: db: CN=Microsoft Corporation UEFI CA 2011 (built in); mok: CN=DKMS module signing key (/var/lib/dkms/mok.pub); shim: CN=Debian Secure Boot CA (vendor certificate of /boot/efi/EFI/debian/shimx64.efi)",
			"file": "/boot/efi/EFI/debian/grubx64.efi",
		},
	} with input as fx.facts("image", {"boot_files": [own_shim, own_grub, fx.kernel]})
}

# Facts collected before signatures were held to anchors carry none: the
# chain is unproven, so the file fails, saying why.
test_fail_facts_without_anchors if {
	old := object.remove(fx.sig_ok, ["anchor"])
	f := fx.facts("image", {"boot_anchors": [], "boot_files": [fx.shim, object.union(fx.kernel, {"signatures": [old]})]})
	check.deny == {{
		"msg": "/boot/vmlinuz-6.1.0-28-amd64 (kernel) carries no signature Secure Boot would accept: the signature by CN=Debian Secure Boot Signer 2022 - linux (issued by CN=Debian Secure Boot CA) verifies, but shim holds kernel to no trust anchor: the facts list none (collected before signatures were held to anchors, or every anchor failed to read)",
		"file": "/boot/vmlinuz-6.1.0-28-amd64",
	}} with input as f
}
