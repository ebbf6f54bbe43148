# The TPM2 bindings of the root's LUKS volumes, which GH-SB-003 (an image)
# and GH-SB-007 (a host) judge alike. No METADATA and no deny: a library.
package gpuhost.sb.tpm2

enc := object.get(input, "encryption", {})

crypt(h) := object.get(h, "crypt", {})

luks_hops contains h if {
	some h in object.get(object.get(enc, "root", {}), "hops", [])
	h.kind == "crypt"
	startswith(object.get(crypt(h), "type", ""), "luks")
}

name(h) := sprintf("%s (%s)", [h.device, h.name]) if object.get(h, "name", "") != ""

name(h) := h.device if object.get(h, "name", "") == ""

# Each key sealed to a TPM2, with where it was read and its PCRs: a
# systemd-tpm2 token in the header (the PCRs its policy reads, plain or
# signed), the enrolment an image's first boot makes, a crypttab line's
# tpm2-pcrs= for a sealed key file.
bindings contains {"what": what, "file": "/etc/crypttab", "pcrs": pcrs} if {
	some h in luks_hops
	some t in object.get(crypt(h), "tokens", [])
	t.type == "systemd-tpm2"
	object.get(t, "error", "") == ""
	what := sprintf("the systemd-tpm2 token %s of %s", [t.id, name(h)])
	pcrs := array.concat(object.get(t, "tpm2_pcrs", []), object.get(t, "tpm2_pubkey_pcrs", []))
}

bindings contains {"what": what, "file": fb.file, "pcrs": object.get(fb, "pcrs", [])} if {
	some h in luks_hops
	fb := crypt(h).first_boot_tpm2
	object.get(fb, "error", "") == ""
	what := sprintf("the first-boot TPM2 enrolment of %s (%s)", [name(h), fb.file])
}

bindings contains {"what": what, "file": object.get(e, "file", "/etc/crypttab"), "line": object.get(e, "line", 0), "pcrs": pcrs} if {
	some e in object.get(enc, "crypttab", [])
	some o in object.get(e, "options", [])
	startswith(o, "tpm2-pcrs=")
	pcrs := pcr_list(substring(o, count("tpm2-pcrs="), -1))
	what := sprintf("/etc/crypttab's tpm2-pcrs= for %s", [e.name])
}

# What could not be read of a binding.
unreadable contains msg if {
	some h in luks_hops
	some t in object.get(crypt(h), "tokens", [])
	t.type == "systemd-tpm2"
	object.get(t, "error", "") != ""
	msg := sprintf("the systemd-tpm2 token %s of %s could not be read: %s", [t.id, name(h), t.error])
}

unreadable contains msg if {
	some h in luks_hops
	fb := crypt(h).first_boot_tpm2
	object.get(fb, "error", "") != ""
	msg := sprintf("the first-boot TPM2 enrolment of %s (%s) could not be read: %s", [name(h), fb.file, fb.error])
}

# The PCR list of a crypttab option, as systemd reads it: indexes or names,
# separated by + or commas, each perhaps with a value after a colon.
pcr_list(s) := [n |
	some part in split(replace(s, ",", "+"), "+")
	part != ""
	n := pcr_index(split(part, ":")[0])
]

pcr_index(p) := to_number(p) if regex.match(`^[0-9]+$`, p)

pcr_index("secure-boot-policy") := 7

# Any other name is some PCR other than 7, which is all that matters here.
pcr_index(p) := -1 if {
	not regex.match(`^[0-9]+$`, p)
	p != "secure-boot-policy"
}

missing_7 contains finding if {
	some b in bindings
	not 7 in b.pcrs
	msg := sprintf(
		"%s seals the key to PCRs %v, without PCR 7 (the Secure Boot policy): the TPM2 unseals it whatever boot chain the firmware trusts",
		[b.what, b.pcrs],
	)
	finding := at(b, msg)
}

at(b, msg) := {"msg": msg, "file": b.file, "line": b.line} if object.get(b, "line", 0) > 0

else := {"msg": msg, "file": b.file}

none_bound := "the root is not sealed to a TPM2: no systemd-tpm2 token, first-boot TPM2 enrolment or tpm2-pcrs= in /etc/crypttab" if {
	count(bindings) == 0
	count(unreadable) == 0
}
