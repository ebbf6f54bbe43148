# What the TLS probe found, shared by the probe checks (GH-TLS-003..007).
# Each finding names its listener and whether that listener is bound to
# loopback only, so the internet-facing checks and the loopback check split
# one list instead of keeping two copies of the rules.
package gpuhost.tls.probe_lib

offline_kinds := {"rootfs", "image", "oci"}

probes := object.get(object.get(input, "tls", {}), "probes", [])

skip contains msg if {
	input.target.kind in offline_kinds
	msg := sprintf("TLS probes need a live host; target kind is %s", [input.target.kind])
}

skip contains "no listening TLS port was probed" if {
	count(probes) == 0
}

tls12_weak if {
	some w in data.gpuhost.params.weak_tls_protocols
	lower(w) == "tlsv1.2"
}

# Listeners whose probe was cut short: their verdicts are unknown, so the
# checks that cover them are errors, never passes.
errors(loopback) := {msg |
	some p in probes
	object.get(p, "loopback", false) == loopback
	p.error != ""
	msg := sprintf("%s could not be fully probed, so its verdict is unknown: %s", [label(p), p.error])
}

label(p) := sprintf("loopback-only %s", [p.address]) if p.loopback

else := p.address

legacy contains {"loopback": p.loopback, "msg": sprintf("%s accepts %s", [label(p), name])} if {
	some p in probes
	some field, name in {"tls10_accepted": "TLS 1.0", "tls11_accepted": "TLS 1.1"}
	p[field]
}

tls12 contains {"loopback": p.loopback, "msg": sprintf("%s accepts a TLS 1.2 handshake", [label(p)])} if {
	tls12_weak
	some p in probes
	p.tls12_accepted
}

suite_flaw(s) := "no forward secrecy (static RSA key exchange)" if startswith(s, "TLS_RSA_")

suite_flaw(s) := "CBC with a SHA-1 MAC" if {
	not startswith(s, "TLS_RSA_")
	endswith(s, "_CBC_SHA")
}

suites contains {"loopback": p.loopback, "msg": sprintf("%s accepts %s: %s", [label(p), s, suite_flaw(s)])} if {
	not tls12_weak
	some p in probes
	some s in p.weak_suites
}

suites contains {"loopback": p.loopback, "msg": sprintf("%s accepts %s: CBC with a SHA-1 MAC", [label(p), s])} if {
	not tls12_weak
	some p in probes
	some s in p.weak_suites
	startswith(s, "TLS_RSA_")
	endswith(s, "_CBC_SHA")
}

min_days := data.gpuhost.params.tls_cert_min_days

finding(p, msg) := {"loopback": p.loopback, "msg": sprintf("%s: %s", [label(p), msg])}

certs contains [p, p.certificate] if {
	some p in probes
	p.certificate
}

# The probe counts the seconds a certificate had left when it ran, so no
# check reads a clock: the verdict on saved facts is the one of their scan.
certificate contains finding(p, sprintf("certificate %q expired on %s", [c.subject, c.not_after])) if {
	some [p, c] in certs
	c.seconds_left <= 0
}

certificate contains finding(p, msg) if {
	some [p, c] in certs
	c.seconds_left > 0
	c.seconds_left < min_days * 86400
	msg := sprintf("certificate %q expires on %s, within tls_cert_min_days (%d)", [c.subject, c.not_after, min_days])
}

certificate contains finding(p, sprintf("certificate %q is self-signed on a non-loopback address", [c.subject])) if {
	some [p, c] in certs
	c.self_signed
	not p.loopback
}

certificate contains finding(p, sprintf("certificate %q has a %d-bit RSA key; want 2048 or more", [c.subject, c.key_bits])) if {
	some [p, c] in certs
	c.key_type == "RSA"
	c.key_bits < 2048
}

certificate contains finding(p, sprintf("certificate %q has a %d-bit EC key; want 256 or more", [c.subject, c.key_bits])) if {
	some [p, c] in certs
	c.key_type == "EC"
	c.key_bits < 256
}

certificate contains finding(p, sprintf("certificate %q is signed with %s", [c.subject, c.signature_algorithm])) if {
	some [p, c] in certs
	contains(upper(c.signature_algorithm), "SHA1")
}

certificate contains finding(p, msg) if {
	some [p, c] in certs
	count(object.get(c, "sans", [])) == 0
	msg := sprintf("certificate %q has no subject alternative name, which clients need to match a host", [c.subject])
}
