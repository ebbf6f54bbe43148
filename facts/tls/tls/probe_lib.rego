# What the TLS probe found, shared by the probe checks (GH-TLS-003..008).
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

# A key exchange under 112 bits of strength (NIST SP 800-131A): a DHE
# prime under 2048 bits, an ECDHE curve under 224.
flaws contains [p, s.name, sprintf("DHE over a %d-bit group; want 2048 or more", [s.dh_bits])] if {
	some [p, s] in accepted_suites
	object.get(s, "dh_bits", 0) > 0
	s.dh_bits < 2048
}

flaws contains [p, sprintf("ECDHE over %s", [c.name]), sprintf("a %d-bit curve; want 224 or more", [c.bits])] if {
	some p in probes
	some c in object.get(p, "curves", [])
	c.bits > 0
	c.bits < 224
}

flaws contains [p, sprintf("ECDHE over %s", [c.name]), "a curve of unknown size"] if {
	some p in probes
	some c in object.get(p, "curves", [])
	c.bits == 0
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

# Every chain a listener shows: the one its unnamed handshake got, and each
# other one a view got (a server name, or one of the host's addresses),
# labelled by how it was asked.
shown contains p if some p in probes

shown contains object.union(object.remove(p, {"certificate"}), {
	"address": view_label(p, v),
	"chain": v.chain,
	"verification": v.verification,
}) if {
	some p in probes
	some v in object.get(p, "views", [])
	not v.same_as_default
	v.chain
}

view_label(p, v) := sprintf("%s for server name %s", [p.address, v.server_name]) if v.server_name

else := sprintf("%s at %s", [p.address, v.address])

# A view as the findings name it: its label, with the listener's scope.
view_scope(p, v) := label(object.union(p, {"address": view_label(p, v)}))

# Views whose certificate could not be fetched: what a client that asks so
# gets is unknown, so the certificate checks are errors, never passes.
view_errors(loopback) := {msg |
	some p in probes
	object.get(p, "loopback", false) == loopback
	some v in object.get(p, "views", [])
	not object.get(v, "unreachable", false)
	object.get(v, "error", "") != ""
	msg := sprintf("%s: the certificate could not be fetched, so its verdict is unknown: %s", [view_scope(p, v), v.error])
}

# Names a port is known by whose certificate does not cover them, as a
# client that asks for the name matches it.
name_mismatch contains {"loopback": p.loopback, "msg": msg} if {
	some p in probes
	some v in object.get(p, "views", [])
	v.name_matches == false
	msg := sprintf("%s sends a certificate (%s) whose names do not cover %s, a name %s", [
		view_scope(p, v), v.leaf_subject,
		v.server_name, name_origin(v),
	])
}

name_origin(v) := sprintf("nginx serves TLS under at %s:%d", [v.name_file, v.name_line]) if v.name_source == "nginx"

else := "the certificate sent without a name lists"

# Every certificate a listener sent, leaf first: the probe's chain, or for a
# document written before the probe kept the chain, its leaf alone, at
# depth 0.
chain_certs contains [p, c] if {
	some p in shown
	some c in p.chain
}

chain_certs contains [p, object.union(p.certificate, {"depth": 0})] if {
	some p in shown
	not p.chain
	p.certificate
}

cert_label(c) := sprintf("certificate %d (%s)", [c.depth, c.subject])

cert_finding(p, c, msg) := finding(p, sprintf("%s: %s", [cert_label(c), msg]))

# span says a number of seconds in the largest whole unit.
span(s) := sprintf("%d days", [floor(s / 86400)]) if s >= 172800

else := "1 day" if s >= 86400

else := sprintf("%d hours", [floor(s / 3600)]) if s >= 7200

else := "1 hour" if s >= 3600

else := "less than an hour"

# A signature a client refuses to trust: SHA-1, MD5 or MD2.
weak_signature(alg) if {
	some h in {"SHA1", "MD5", "MD2"}
	contains(upper(alg), h)
}

# A root's signature on itself is never checked: a client trusts the root
# by its key, so it does not count against the chain.
root_self_signature(c) if {
	c.depth > 0
	c.self_signed
}

# The key usages that let a leaf's key serve a TLS server: a signature
# (ECDHE, TLS 1.3), or, with static RSA or ECDH, encryption or agreement.
server_key_usages := {"RSA": {"digitalSignature", "keyEncipherment"}, "EC": {"digitalSignature", "keyAgreement"}}

# The probe counts the seconds a certificate had left, and had been valid,
# when it ran, so no check reads a clock: the verdict on saved facts is the
# one of their scan.
certificate contains cert_finding(p, c, msg) if {
	some [p, c] in chain_certs
	object.get(c, "age_seconds", 0) < 0
	msg := sprintf("not valid until %s, %s after the scan", [c.not_before, span(0 - c.age_seconds)])
}

certificate contains cert_finding(p, c, msg) if {
	some [p, c] in chain_certs
	c.seconds_left <= 0
	msg := sprintf("expired on %s, %s before the scan", [c.not_after, span(0 - c.seconds_left)])
}

certificate contains cert_finding(p, c, msg) if {
	some [p, c] in chain_certs
	c.seconds_left > 0
	c.seconds_left < min_days * 86400
	msg := sprintf("expires on %s, within tls_cert_min_days (%d)", [c.not_after, min_days])
}

certificate contains cert_finding(p, c, "self-signed on a non-loopback address") if {
	some [p, c] in chain_certs
	c.depth == 0
	c.self_signed
	not p.loopback
}

certificate contains cert_finding(p, c, sprintf("a %d-bit RSA key; want 2048 or more", [c.key_bits])) if {
	some [p, c] in chain_certs
	c.key_type == "RSA"
	c.key_bits < 2048
}

certificate contains cert_finding(p, c, sprintf("a %d-bit EC key; want 256 or more", [c.key_bits])) if {
	some [p, c] in chain_certs
	c.key_type == "EC"
	c.key_bits < 256
}

certificate contains cert_finding(p, c, sprintf("a %d-bit RSA-PSS key; want 2048 or more", [c.key_bits])) if {
	some [p, c] in chain_certs
	c.key_type == "RSA-PSS"
	c.key_bits < 2048
}

certificate contains cert_finding(p, c, sprintf("a %d-bit DSA key, which TLS 1.3 does not allow; want RSA 2048+ or EC 256+", [c.key_bits])) if {
	some [p, c] in chain_certs
	c.key_type == "DSA"
}

# A key of a type no rule above sizes is not one the policy allows.
certificate contains cert_finding(p, c, sprintf("a key of type %s, which is none of RSA, EC, Ed25519 or Ed448", [c.key_type])) if {
	some [p, c] in chain_certs
	not c.key_type in sized_key_types
}

certificate contains cert_finding(p, c, sprintf("signed with %s", [c.signature_algorithm])) if {
	some [p, c] in chain_certs
	weak_signature(c.signature_algorithm)
	not root_self_signature(c)
}

certificate contains cert_finding(p, c, "no subject alternative name, which clients need to match a host") if {
	some [p, c] in chain_certs
	c.depth == 0
	count(object.get(p.certificate, "sans", [])) == 0
}

# A leaf's keyUsage, where it has one, must let its key serve TLS.
certificate contains cert_finding(p, c, msg) if {
	some [p, c] in chain_certs
	c.depth == 0
	usages := {u | some u in object.get(c, "key_usage", [])}
	count(usages) > 0
	want := object.get(server_key_usages, c.key_type, {"digitalSignature"})
	count(usages & want) == 0
	msg := sprintf("keyUsage %s allows its %s key no TLS server use; it needs %s", [
		concat(", ", sort(usages)), c.key_type,
		concat(" or ", sort(want)),
	])
}

# A leaf's extendedKeyUsage, where it has one, must name serverAuth, as
# OpenSSL's clients require (anyExtendedKeyUsage alone does not do).
certificate contains cert_finding(p, c, msg) if {
	some [p, c] in chain_certs
	c.depth == 0
	ekus := object.get(c, "ext_key_usage", [])
	count(ekus) > 0
	not "serverAuth" in ekus
	msg := sprintf("extendedKeyUsage %s leaves out serverAuth, so clients refuse it as a TLS server's certificate", [concat(", ", ekus)])
}

# A must-staple leaf (RFC 7633) that the server sends without a stapled
# OCSP response is one clients that honour the extension refuse.
certificate contains cert_finding(p, p.chain[0], msg) if {
	some p in probes
	p.chain[0].must_staple
	p.ocsp_stapled == false
	msg := concat("", [
		"carries must-staple (TLS Feature status_request), yet the server stapled no OCSP response ",
		"when asked: clients that honour it refuse the connection",
	])
}

# Whether the server staples is unknown where the probe could not ask.
staple_unknown contains {"loopback": p.loopback, "msg": msg} if {
	some p in probes
	p.chain[0].must_staple
	not "ocsp_stapled" in object.keys(p)
	msg := sprintf(
		"%s: certificate 0 (%s) carries must-staple, and whether the server staples an OCSP response is unknown: %s",
		[label(p), p.chain[0].subject, "the probe could not ask over the handshake it had to use"],
	)
}

# Each certificate of a chain the probe kept beside the one sent after it.
links contains [p, c, p.chain[i + 1]] if {
	some p in shown
	some i, c in p.chain
}

# How a chain's certificates tie together, whatever the trust store holds:
# a client that checks the order as TLS 1.2 lays it down (RFC 5246, 7.4.2),
# or that builds no path from certificates sent out of order, fails these.
chain_order contains finding(p, msg) if {
	some [p, c, next] in links
	c.link == "wrong_issuer"
	msg := sprintf("%s is not the issuer of %s, which names %s: the chain is out of order or carries a certificate that does not belong", [
		cert_label(next), cert_label(c),
		c.issuer,
	])
}

chain_order contains finding(p, msg) if {
	some [p, c, next] in links
	c.link == "bad_signature"
	msg := sprintf("the key of %s, which %s names as its issuer, does not verify its signature: %s", [
		cert_label(next), cert_label(c),
		object.get(c, "link_error", ""),
	])
}

chain_order contains finding(p, msg) if {
	some [p, c, _] in links
	c.link == "self_signed"
	msg := sprintf("%s is a self-signed root, yet certificates follow it: the chain is out of order or carries certificates that do not belong", [cert_label(c)])
}

# Whether a client that trusts the target's CA bundle accepts the chain.
# The probe checks no host name, so this says nothing of one.
# A chain that verifies is complete for the store's clients whatever its
# last certificate's issuer: the path ended before it (a root cross-signed
# by one the store no longer holds).
chain_trust contains finding(p, msg) if {
	some p in shown
	last := p.chain[count(p.chain) - 1]
	last.link == "missing"
	not p.verification.verified
	msg := sprintf("%s was sent without its issuer %s, which the trust store %s does not hold either: the chain is incomplete", [
		cert_label(last), last.issuer,
		p.verification.store,
	])
}

chain_trust contains finding(p, sprintf("the chain does not verify against %s: %s", [v.store, v.error])) if {
	some p in shown
	v := p.verification
	object.get(v, "store_error", "") == ""
	not v.verified
}

# Listeners whose chain could not be checked at all: the target has no
# usable CA bundle, so the verdict is unknown.
trust_unknown contains {"loopback": p.loopback, "msg": msg} if {
	some p in shown
	v := p.verification
	object.get(v, "store_error", "") != ""
	msg := sprintf("%s: whether its certificate chain verifies is unknown: %s", [label(p), v.store_error])
}

# The key types the certificate rules size.
sized_key_types := {"RSA", "RSA-PSS", "EC", "Ed25519", "Ed448", "DSA"}
