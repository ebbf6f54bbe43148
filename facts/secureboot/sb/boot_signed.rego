# METADATA
# title: The ESP's boot loaders and the kernels carry valid Authenticode signatures
# description: >-
#   Secure Boot firmware loads only EFI binaries whose Authenticode signature it trusts, and shim
#   holds GRUB and the kernel to the same. gpuhost reads every .efi under the EFI system
#   partition's /EFI/<vendor> directories (shim, GRUB, MokManager, the fallback and
#   EFI/BOOT/BOOTX64.EFI; /boot/efi in a tree, the FAT32 partition of a disk image) and each
#   /boot/vmlinuz-*, parses the PE certificate table (WIN_CERTIFICATE revision 2.0,
#   PKCS_SIGNED_DATA) and checks each signature: its signer's signature verifies, and the digest
#   it signs is the file's Authenticode digest as UEFI firmware computes it. A file with no such
#   signature, one changed after signing, or one that is not a PE image fails, named. An image
#   that does not boot through shim is not meant for Secure Boot, and the check skips it unless
#   params.secure_boot_required is true: a disk built without the rootfs builder's secure_boot
#   boots GRUB's unsigned core image and fails it then. A host is read from its mounted
#   /boot/efi and /boot.
# scope: package
# custom:
#   id: GH-SB-001
#   severity: high
#   location: /boot/efi/EFI/BOOT/BOOTX64.EFI
#   remediation: >-
#     Install the distribution's signed boot chain (shim-signed, grub-efi-amd64-signed and a signed
#     kernel) and put shim at EFI/BOOT/BOOTX64.EFI and EFI/<vendor>/shimx64.efi with GRUB beside
#     it, or sign your own binaries with sbsign and a key in db or the MOK list.
#   controls:
#     nist-800-53: [SI-7, SI-7(15), CM-14]
#   targets: [rootfs, image, host, facts]
#   requires: [secureboot]
package gpuhost.sb.boot_signed

import data.gpuhost.sb.lib

skip contains lib.advisory

error contains msg if {
	object.get(lib.sb, "esp_error", "") != ""
	msg := sprintf("the EFI system partition (%s) could not be read: %s", [lib.sb.esp, lib.sb.esp_error])
}

error contains finding if {
	some f in lib.boot_files
	object.get(f, "error", "") != ""
	finding := lib.at(f.path, sprintf("%s could not be read as a PE image: %s", [f.path, f.error]))
}

efi_binaries := [f | some f in lib.boot_files; f.role != "kernel"]

deny contains msg if {
	object.get(lib.sb, "esp", "") == ""
	msg := sprintf("the %s has no EFI system partition (no /boot/efi, no FAT32 partition): nothing for Secure Boot firmware to load", [lib.target_word])
}

deny contains msg if {
	object.get(lib.sb, "esp", "") != ""
	object.get(lib.sb, "esp_error", "") == ""
	count(efi_binaries) == 0
	msg := sprintf("the EFI system partition (%s) holds no EFI binary under /EFI for Secure Boot firmware to load", [lib.sb.esp])
}

deny contains finding if {
	some f in lib.boot_files
	object.get(f, "error", "") == ""
	count(object.get(f, "signatures", [])) == 0
	msg := sprintf("%s (%s) carries no Authenticode signature: Secure Boot refuses to load it", [f.path, f.role])
	finding := lib.at(f.path, msg)
}

deny contains finding if {
	some f in lib.boot_files
	count(object.get(f, "signatures", [])) > 0
	not lib.verified(f)
	msg := sprintf("%s (%s) carries no signature Secure Boot would accept: %s", [f.path, f.role, concat("; ", [why(s) | some s in f.signatures])])
	finding := lib.at(f.path, msg)
}

why(s) := s.error if object.get(s, "error", "") != ""

else := sprintf("the signature by %s does not verify", [s.signer]) if s.signature_valid != true

else := sprintf("the %s digest signed by %s is not the file's: it changed after signing", [s.digest_algorithm, s.signer])
