package gpuhost.sb.lib_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.lib
import data.gpuhost.sb.loaded_modules_signed
import data.gpuhost.sb.lockdown
import data.gpuhost.sb.modules_signed
import data.gpuhost.sb.secure_boot_enabled

test_advisory_without_shim if {
	lib.advisory == "the image does not boot with Secure Boot (no shim on the ESP) and params.secure_boot_required is false" with input as fx.facts("image", {"boot_files": [fx.core_efi]})
	lib.advisory == "the host does not boot with Secure Boot (no shim on the ESP) and params.secure_boot_required is false" with input as fx.facts("host", {})
}

test_not_advisory_with_shim_or_required if {
	not lib.advisory with input as fx.facts("image", {"boot_files": [fx.shim]})
	not lib.advisory with input as fx.facts("image", {}) with data.gpuhost.params as fx.required
}

test_a_bootx64_with_shim_sections_is_shim if {
	lib.shim with input as fx.facts("image", {"boot_files": [object.union(fx.shim, {"path": "partition 2:/EFI/BOOT/BOOTX64.EFI"})]})
}

test_at_names_tree_files_and_partition_files if {
	lib.at("/boot/vmlinuz", "m") == {"msg": "m", "file": "/boot/vmlinuz"}
	lib.at("partition 2:/EFI/BOOT/BOOTX64.EFI", "m") == {"msg": "m", "subject": "partition 2:/EFI/BOOT/BOOTX64.EFI"}
}

# An ESP the scan could not read says nothing of shim: no check skips as
# if the target were not meant for Secure Boot; each says it cannot tell.
test_unread_esp_is_unknown_not_advisory if {
	f := fx.facts("host", {"esp": "/boot/efi", "esp_error": "/etc/fstab mounts UUID=A at /boot/efi (line 2), and nothing is mounted there"})
	not lib.advisory with input as f
	lib.unknown == "whether the host boots with Secure Boot is unknown: its EFI system partition (/boot/efi) could not be read: /etc/fstab mounts UUID=A at /boot/efi (line 2), and nothing is mounted there" with input as f
	not lib.unknown with input as f with data.gpuhost.params as fx.required
	not lib.unknown with input as fx.facts("host", {})
}

# Each check that skips a target without shim errors instead when the ESP
# could not be read.
test_checks_error_on_an_unread_esp if {
	f := fx.facts("host", {"esp_error": "nothing is mounted there"})
	want := "whether the host boots with Secure Boot is unknown: its EFI system partition (/boot/efi) could not be read: nothing is mounted there"
	want in loaded_modules_signed.error with input as f
	want in lockdown.error with input as f
	want in modules_signed.error with input as f
	want in secure_boot_enabled.error with input as f
}
