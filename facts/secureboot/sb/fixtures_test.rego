# Facts the Secure Boot checks' tests share.
package gpuhost.sb.fixtures_test

sig_ok := {
	"signer": "CN=Debian Secure Boot Signer 2022 - linux", "issuer": "CN=Debian Secure Boot CA", "serial": "32:A0",
	"digest_algorithm": "sha256", "digest_matches": true, "signature_valid": true,
	"anchor": "shim: CN=Debian Secure Boot CA (vendor certificate of /boot/efi/EFI/debian/shimx64.efi)",
}

sig_microsoft := object.union(sig_ok, {
	"signer": "CN=Microsoft Windows UEFI Driver Publisher", "issuer": "CN=Microsoft Corporation UEFI CA 2011", "serial": "33:00",
	"anchor": "db: CN=Microsoft Corporation UEFI CA 2011 (built in)",
})

shim := {"path": "/boot/efi/EFI/debian/shimx64.efi", "role": "shim", "size": 952768, "signatures": [sig_microsoft]}

# The anchors of an image whose shim carries Debian's vendor certificate.
anchors := [
	{"source": "built in", "store": "db", "enrolled": true, "subject": "CN=Microsoft Corporation UEFI CA 2011"},
	{"source": "vendor certificate of /boot/efi/EFI/debian/shimx64.efi", "store": "shim", "enrolled": true, "subject": "CN=Debian Secure Boot CA"},
	{"source": "/var/lib/dkms/mok.pub", "store": "mok", "enrolled": true, "subject": "CN=DKMS module signing key"},
]

grub := {"path": "/boot/efi/EFI/debian/grubx64.efi", "role": "grub", "size": 2000000, "signatures": [sig_ok]}

kernel := {"path": "/boot/vmlinuz-6.1.0-28-amd64", "role": "kernel", "size": 8000000, "signatures": [sig_ok]}

# A disk built without secure_boot: GRUB's unsigned core image as the removable-media
# boot loader, on partition 2 of the disk.
core_efi := {"path": "partition 2:/EFI/BOOT/BOOTX64.EFI", "role": "grub", "size": 434176, "signatures": []}

dkms_key := {"source": "/var/lib/dkms/mok.pub", "enrolled": true, "subject": "CN=DKMS module signing key", "sha256": concat("", ["ab" | some _ in numbers.range(1, 32)])}

module(name, over) := object.union(
	{
		"name": name, "file": sprintf("/lib/modules/6.1.0-28-amd64/updates/dkms/%s.ko", [name]), "kernel": "6.1.0-28-amd64", "signed": true,
		"hash_algorithm": "sha512", "signer": "DKMS module signing key", "key_id": "79:1C", "verified_by": "/var/lib/dkms/mok.pub",
	},
	over,
)

facts(kind, sb) := {"target": {"kind": kind}, "secure_boot": object.union({"esp": "/boot/efi", "boot_files": [], "modules": [], "trusted_keys": [], "boot_anchors": anchors}, sb)}

required := {"secure_boot_required": true}

host(sb) := facts("host", object.union({"boot_files": [shim]}, sb))

fw(over) := {"firmware": object.union({"efi": true, "secure_boot": true, "setup_mode": false}, over)}

loaded(name, over) := module(name, object.union({"loaded": true, "taint": "PO", "verified_by": "MokListRT"}, over))

hop(crypt) := {"device": "/dev/mapper/luks-3f1c", "kind": "crypt", "name": "luks-3f1c", "learned": "crypttab", "depth": 0, "crypt": object.union(
	{"type": "luks2", "cipher": "aes-xts-plain64", "key_bits": 512, "source": "file"},
	crypt,
)}

luks_facts(kind, crypt, crypttab) := {"target": {"kind": kind}, "encryption": {"crypttab": crypttab, "swap": [], "root": {"encrypted": true, "source": "fstab", "chain": [], "hops": [hop(crypt)]}}}

first_boot(pcrs) := {"first_boot_tpm2": {"file": "/etc/gpuhost/luks-enroll.conf", "pcrs": pcrs}}

token(pcrs) := {"tokens": [{"id": "0", "type": "systemd-tpm2", "keyslots": ["1"], "tpm2_pcrs": pcrs}]}

crypttab_line(opts) := [{"name": "luks-3f1c", "device": "UUID=3f1c", "key_file": "/etc/root.tpm2", "options": opts, "file": "/etc/crypttab", "line": 3}]

not_sealed := {"the root is not sealed to a TPM2: no systemd-tpm2 token, first-boot TPM2 enrolment or tpm2-pcrs= in /etc/crypttab"}
