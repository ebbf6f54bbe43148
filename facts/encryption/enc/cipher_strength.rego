# METADATA
# title: Encryption under / and swap uses a strong cipher and key
# description: >-
#   Every crypt device on the chain under / or under a swap area must use a real cipher with a
#   key of at least params.encryption_min_key_bits bits of strength. XTS splits its key in two,
#   so a 512-bit aes-xts-plain64 key is AES-256 and a 256-bit one is AES-128. cipher_null fails,
#   and so does plain dm-crypt that crypttab sets up without a hash= for its passphrase (a random
#   key from /dev/urandom, as for swap, has no passphrase). On a live host the cipher and key
#   size come from the kernel's dm-crypt table; in an image, from a LUKS header the image
#   carries or the crypttab options. Skips when nothing is encrypted (GH-ENC-001 and GH-ENC-002
#   fail then) or when an image does not say which cipher its volumes use.
# scope: package
# custom:
#   id: GH-ENC-003
#   severity: high
#   location: /etc/crypttab
#   remediation: >-
#     Re-encrypt the volume with a 512-bit AES-XTS key (cryptsetup reencrypt --cipher
#     aes-xts-plain64 --key-size 512), or for plain dm-crypt set cipher=aes-xts-plain64,size=512
#     and, with a passphrase, a hash= in /etc/crypttab.
#   controls:
#     nist-800-53: [SC-28, SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [encryption]
package gpuhost.enc.cipher_strength

import data.gpuhost.lib.locate

min_bits := object.get(data.gpuhost.params, "encryption_min_key_bits", 256)

enc := object.get(input, "encryption", {})

root := object.get(enc, "root", null)

live if input.target.kind == "host"

# Every crypt device met under / and under each swap area; one reached both
# ways (a swap file on /) counts once.
crypt_hops contains h if {
	root != null
	some h in object.get(root, "hops", [])
	h.kind == "crypt"
}

crypt_hops contains h if {
	some s in object.get(enc, "swap", [])
	some h in object.get(s, "hops", [])
	h.kind == "crypt"
}

# A mapping keyed from /dev/urandom has no passphrase to hash.
random_key(h) if {
	some e in object.get(enc, "crypttab", [])
	e.name == h.name
	e.key_file in {"/dev/urandom", "/dev/random"}
}

params(h) := object.get(h, "crypt", {})

cipher(h) := lower(object.get(params(h), "cipher", ""))

known(h) if cipher(h) != ""

xts(h) if contains(cipher(h), "xts")

# The bits an attacker faces: XTS keys are two keys side by side.
strength(h) := params(h).key_bits / 2 if xts(h)

strength(h) := params(h).key_bits if not xts(h)

null_cipher(h) if startswith(cipher(h), "cipher_null")

name(h) := sprintf("%s (%s)", [h.device, h.name]) if object.get(h, "name", "") != ""

name(h) := h.device if object.get(h, "name", "") == ""

aes_note(h) := sprintf(", which is AES-%d", [strength(h)]) if startswith(cipher(h), "aes")

aes_note(h) := "" if not startswith(cipher(h), "aes")

skip contains "no crypt device under / or swap (GH-ENC-001 and GH-ENC-002 report that)" if count(crypt_hops) == 0

skip contains sprintf("the image does not say which cipher %s uses: %s", [name(h), object.get(params(h), "error", "")]) if {
	not live
	count(crypt_hops) > 0
	every x in crypt_hops {
		not known(x)
	}
	some h in crypt_hops
}

deny contains msg if {
	live
	some h in crypt_hops
	not known(h)
	msg := sprintf("the cipher of %s could not be read: %s", [name(h), object.get(params(h), "error", "no cipher recorded")])
}

deny contains msg if {
	some h in crypt_hops
	null_cipher(h)
	msg := sprintf("%s uses %s with a %d-bit key: cipher_null does not encrypt", [name(h), cipher(h), params(h).key_bits])
}

deny contains msg if {
	some h in crypt_hops
	known(h)
	not null_cipher(h)
	strength(h) < min_bits
	msg := sprintf("%s uses %s with a %d-bit key%s; at least %d bits of strength are required", [name(h), cipher(h), params(h).key_bits, aes_note(h), min_bits])
}

deny contains finding if {
	some h in crypt_hops
	p := params(h)
	p.type == "plain"
	p.source == "file"
	object.get(p, "hash", "") == ""
	not random_key(h)
	msg := sprintf("%s is plain dm-crypt with cipher %s and a %d-bit key but no hash= in /etc/crypttab for its passphrase", [name(h), cipher(h), p.key_bits])
	finding := at_crypttab(msg, h.name)
}

# at_crypttab points a finding at the crypttab line of the mapping name,
# when the facts know it (the first, should a hostile file repeat a name).
at_crypttab(msg, mapping) := locate.at(msg, lines[0].file, lines[0].line) if {
	lines := [e | some e in object.get(enc, "crypttab", []); e.name == mapping; object.get(e, "line", 0) > 0]
	count(lines) > 0
} else := msg
