package gpuhost.sb.secure_boot_enabled_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.secure_boot_enabled as enabled

test_secure_boot_on if {
	enabled.deny == set() with input as fx.host(fx.fw({}))
	enabled.skip == set() with input as fx.host(fx.fw({}))
	enabled.error == set() with input as fx.host(fx.fw({}))
}

test_secure_boot_off_setup_mode_or_bios if {
	enabled.deny == {"Secure Boot is off: the SecureBoot EFI variable is 0 or absent"} with input as fx.host(fx.fw({"secure_boot": false}))
	enabled.deny == {"the firmware is in Setup Mode (SetupMode is 1): no Platform Key is enrolled, so it verifies nothing"} with input as fx.host(fx.fw({"setup_mode": true}))
	enabled.deny == {"the host booted without UEFI (no /sys/firmware/efi): it does not boot with Secure Boot"} with input as fx.host({"firmware": {"efi": false}})
}

test_secure_boot_skips if {
	count(enabled.skip) == 1 with input as fx.facts("host", fx.fw({"secure_boot": false}))
	enabled.skip == {"the facts hold no firmware state: it is read only on a running host"} with input as fx.host({})
	enabled.skip == set() with input as fx.facts("host", {"firmware": {"efi": false}}) with data.gpuhost.params as fx.required
}

test_secure_boot_unreadable if {
	f := fx.host({"firmware": {"efi": true, "error": "efivarfs is not mounted at /sys/firmware/efi/efivars, so the Secure Boot variables cannot be read"}})
	enabled.error == {"the Secure Boot variables could not be read: efivarfs is not mounted at /sys/firmware/efi/efivars, so the Secure Boot variables cannot be read"} with input as f
	enabled.deny == set() with input as f
}
