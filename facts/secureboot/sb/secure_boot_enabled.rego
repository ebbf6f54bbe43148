# METADATA
# title: The host booted with Secure Boot on, out of Setup Mode
# description: >-
#   gpuhost reads the host's EFI variables through efivarfs: SecureBoot (four bytes of attributes,
#   then 1 when the firmware enforces signatures) and SetupMode (1 while no Platform Key is
#   enrolled, when the firmware enforces nothing). The check fails when the host booted without
#   UEFI (no /sys/firmware/efi: no Secure Boot), when SecureBoot is 0 or absent, or when
#   SetupMode is 1; it errors when efivarfs cannot be read. A host that does not boot through
#   shim is not meant for Secure Boot, and the check skips it unless params.secure_boot_required
#   is true.
# scope: package
# custom:
#   id: GH-SB-004
#   severity: high
#   location: /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
#   remediation: >-
#     Boot the host under UEFI with Secure Boot enabled in the firmware setup and the platform's
#     keys enrolled (PK, KEK, db; the Microsoft UEFI CA for shim), and enrol the image's MOK with
#     mokutil --import on first boot.
#   controls:
#     nist-800-53: [SI-7, SI-7(9), SI-7(15)]
#   targets: [host, facts]
#   requires: [secureboot]
package gpuhost.sb.secure_boot_enabled

import data.gpuhost.sb.lib

fw := object.get(lib.sb, "firmware", null)

skip contains lib.advisory

skip contains "the facts hold no firmware state: it is read only on a running host" if fw == null

error contains lib.unknown

error contains msg if {
	fw.efi
	object.get(fw, "error", "") != ""
	msg := sprintf("the Secure Boot variables could not be read: %s", [fw.error])
}

deny contains "the host booted without UEFI (no /sys/firmware/efi): it does not boot with Secure Boot" if fw.efi == false

deny contains "Secure Boot is off: the SecureBoot EFI variable is 0 or absent" if fw.secure_boot == false

deny contains "the firmware is in Setup Mode (SetupMode is 1): no Platform Key is enrolled, so it verifies nothing" if fw.setup_mode == true
