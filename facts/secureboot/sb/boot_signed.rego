# METADATA
# title: The ESP's boot loaders and the kernels carry valid Authenticode signatures
# description: >-
#   Secure Boot firmware loads only EFI binaries whose Authenticode signature chains to db, and
#   shim holds GRUB, the kernel, MokManager and the fallback to db, its vendor certificate and
#   the MOK list. gpuhost reads every .efi under the ESP's /EFI/<vendor> directories and each
#   /boot/vmlinuz-*, and checks each signature: it verifies, it covers the file's Authenticode
#   digest as firmware computes it, and the signer's chain reaches one of those anchors (db is a
#   live host's variable, or offline Microsoft's UEFI CAs; the MOK list offline is the image's
#   DKMS certificate). A file unsigned, changed after signing, signed by a key that reaches no
#   anchor, or not a PE image fails, named with the anchors it was held to. A target that does
#   not boot through shim is skipped unless params.secure_boot_required is true.
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
	msg := sprintf(
		"the %s has no EFI system partition (no partition of the EFI system type, no /boot/efi): nothing for Secure Boot firmware to load",
		[lib.target_word],
	)
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
	msg := sprintf("%s (%s) carries no signature Secure Boot would accept: %s", [f.path, f.role, concat("; ", [why(f, s) | some s in f.signatures])])
	finding := lib.at(f.path, msg)
}

why(f, s) := s.error if object.get(s, "error", "") != ""

else := sprintf("the signature by %s does not verify", [s.signer]) if s.signature_valid != true

else := sprintf("the %s digest signed by %s is not the file's: it changed after signing", [s.digest_algorithm, s.signer]) if s.digest_matches != true

else := sprintf(
	"the signature by %s (issued by %s) verifies, but its chain reaches no trust anchor %s holds %s to; those are: %s",
	[s.signer, s.issuer, lib.loader(f), f.role, held],
) if {
	held := lib.anchors_held(f)
	held != ""
}

else := sprintf(
	"the signature by %s (issued by %s) verifies, but %s holds %s to no trust anchor: %s",
	[s.signer, s.issuer, lib.loader(f), f.role, "the facts list none (collected before signatures were held to anchors, or every anchor failed to read)"],
)
