# Helpers the Secure Boot checks share. No METADATA and no deny: a library, not a check.
package gpuhost.sb.lib

sb := object.get(input, "secure_boot", {})

live if input.target.kind == "host"

default target_word := "image"

target_word := "host" if live

boot_files := object.get(sb, "boot_files", [])

# The target boots through shim when its ESP holds shim, by name or by the
# .vendor_cert section of EFI/BOOT/BOOTX64.EFI.
shim if {
	some f in boot_files
	f.role == "shim"
}

default required := false

required if data.gpuhost.params.secure_boot_required == true

# An ESP that could not be read holds no boot files: that says nothing of
# whether the target boots through shim.
esp_unread if object.get(sb, "esp_error", "") != ""

# A target that does not boot through shim is not meant for Secure Boot;
# unless params.secure_boot_required says it must be, the Secure Boot checks
# do not apply to it.
advisory := sprintf(
	"the %s does not boot with Secure Boot (no shim on the ESP) and params.secure_boot_required is false",
	[target_word],
) if {
	not required
	not shim
	not esp_unread
}

# Where the ESP could not be read and nothing requires Secure Boot, the
# checks cannot tell whether they apply: an error, never a skip that
# reads as a target not meant for Secure Boot.
unknown := sprintf(
	"whether the %s boots with Secure Boot is unknown: its EFI system partition (%s) could not be read: %s",
	[target_word, sb.esp, sb.esp_error],
) if {
	not required
	esp_unread
}

# A signature Secure Boot would accept the file with: over the file as it
# is, by a certificate whose signature verifies, whose chain reaches an
# anchor the file's loader trusts (the collector follows the chain).
verified(f) if {
	some s in object.get(f, "signatures", [])
	s.digest_matches == true
	s.signature_valid == true
	object.get(s, "anchor", "") != ""
}

# The firmware holds shim to db; shim holds what it loads to db, its vendor
# certificate and the MOK list.
stores(f) := {"db"} if f.role == "shim"

else := {"db", "shim", "mok"}

loader(f) := "the firmware" if f.role == "shim"

else := "shim"

# The anchors a file is held to, named for a finding.
anchors_held(f) := concat("; ", sort([sprintf("%s: %s (%s)", [a.store, a.subject, a.source]) |
	some a in object.get(sb, "boot_anchors", [])
	a.store in stores(f)
	object.get(a, "subject", "") != ""
]))

# at names the file a finding is about: a path in the target's tree as the
# file, a partition's file (partition 2:/EFI/...) as the subject.
at(path, msg) := {"msg": msg, "file": path} if startswith(path, "/")

else := {"msg": msg, "subject": path}
