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

# Listeners the probe could not reach, or whose probe was cut short: their
# verdicts are unknown, so the checks that cover them are errors, never
# passes.
errors(loopback) := {msg |
	some p in probes
	object.get(p, "loopback", false) == loopback
	object.get(p, "unreachable", false)
	msg := sprintf("%s could not be reached, so its verdict is unknown: %s", [label(p), object.get(p, "error", "")])
} | {msg |
	some p in probes
	object.get(p, "loopback", false) == loopback
	not object.get(p, "unreachable", false)
	object.get(p, "error", "") != ""
	msg := sprintf("%s could not be fully probed, so its verdict is unknown: %s", [label(p), p.error])
}

# A listener by its address, "loopback-only" where nothing off the host
# reaches it, and with the in-band upgrade it was probed through.
label(p) := sprintf("%s%s", [scope(p), via(p)])

scope(p) := sprintf("loopback-only %s", [p.address]) if p.loopback

else := p.address

via(p) := sprintf(" (%s STARTTLS)", [p.starttls]) if object.get(p, "starttls", "") != ""

else := ""

# The versions a port accepted, as OpenSSL names them: the probe's
# protocols, or for a document written before the probe enumerated them,
# its tls1x_accepted flags.
accepted(p) := {v | some v in p.protocols} if {
	"protocols" in object.keys(p)
} else := {v |
	some field, v in {"tls10_accepted": "TLSv1", "tls11_accepted": "TLSv1.1", "tls12_accepted": "TLSv1.2", "tls13_accepted": "TLSv1.3"}
	object.get(p, field, false)
}

legacy_names := {"SSLv3": "SSL 3.0", "TLSv1": "TLS 1.0", "TLSv1.1": "TLS 1.1"}

legacy contains {"loopback": p.loopback, "msg": sprintf("%s accepts %s", [label(p), name])} if {
	some p in probes
	some v in accepted(p)
	name := legacy_names[v]
}

tls12 contains {"loopback": p.loopback, "msg": sprintf("%s accepts a TLS 1.2 handshake", [label(p)])} if {
	tls12_weak
	some p in probes
	"TLSv1.2" in accepted(p)
}

# Every suite a port accepted, at any version, with its classes.
accepted_suites contains [p, s] if {
	some p in probes
	"protocols" in object.keys(p)
	some s in object.get(p, "suites", [])
}

mac_names := {"SHA1": "a SHA-1", "SHA256": "a SHA-256", "SHA384": "a SHA-384", "MD5": "an MD5"}

kex_name(k) := "static RSA" if k == "RSA"

else := k

class_flaws := {
	"rc4": "RC4, which RFC 7465 bans",
	"triple_des": "3DES, a 64-bit block cipher (Sweet32)",
	"des": "single DES",
	"null": "NULL encryption: the records travel in the clear",
	"anonymous": "anonymous key exchange: the server is not authenticated",
	"export": "export-grade key exchange or cipher",
}

# One flaw per class a suite is in; a suite in several is named once for
# each.
flaws contains [p, s.name, sprintf("no forward secrecy (%s key exchange)", [kex_name(s.key_exchange)])] if {
	some [p, s] in accepted_suites
	not s.forward_secrecy
}

flaws contains [p, s.name, sprintf("CBC with %s MAC", [object.get(mac_names, s.mac, s.mac)])] if {
	some [p, s] in accepted_suites
	s.cbc
}

flaws contains [p, s.name, sprintf("no AEAD: %s with %s MAC", [s.cipher, object.get(mac_names, s.mac, s.mac)])] if {
	some [p, s] in accepted_suites
	not s.aead
	not s.cbc
}

flaws contains [p, s.name, msg] if {
	some [p, s] in accepted_suites
	some class, msg in class_flaws
	s[class]
}

# A document written before the probe enumerated lists weak_suites alone,
# which were offered as static RSA and as CBC with SHA-1.
flaws contains [p, s, "no forward secrecy (static RSA key exchange)"] if {
	some p in probes
	not "protocols" in object.keys(p)
	some s in p.weak_suites
	startswith(s, "TLS_RSA_")
}

flaws contains [p, s, "CBC with a SHA-1 MAC"] if {
	some p in probes
	not "protocols" in object.keys(p)
	some s in p.weak_suites
	endswith(s, "_CBC_SHA")
}

suites contains {"loopback": p.loopback, "msg": sprintf("%s accepts %s: %s", [label(p), name, flaw])} if {
	not tls12_weak
	some [p, name, flaw] in flaws
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
