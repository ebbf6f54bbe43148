package facts

// TLS gathers the configured and, on a live host, observed TLS protocols.
type TLS struct {
	OpenSSL *OpenSSL   `json:"openssl,omitempty"`
	Nginx   []NginxTLS `json:"nginx"`
	// ServerNames are the names the host's configuration serves TLS
	// under, per port: the probe asks each port for each of its names,
	// since a server picks its certificate by the name a client sends.
	ServerNames []TLSServerName `json:"server_names,omitempty"`
	Probes      []TLSProbe      `json:"probes"`
}

// TLSServerName is one name a TLS server answers to on one port: an
// nginx server_name of a server that listens with ssl there.
type TLSServerName struct {
	Name string `json:"name"`
	// Address is the address the server listens at, where its listen
	// directive names one; empty for every address of the port.
	Address string `json:"address,omitempty"`
	Port    int    `json:"port" jsonschema:"minimum=1,maximum=65535"`
	// File and Line are where the name is set.
	File string `json:"file"`
	Line int    `json:"line" jsonschema:"minimum=1"`
}

// OpenSSL is the system-wide default from openssl.cnf. Empty protocol fields
// mean the file sets no bound, so the library default applies.
type OpenSSL struct {
	ConfigPath  string `json:"config_path"`
	MinProtocol string `json:"min_protocol"`
	// MinProtocolFile and MinProtocolLine are where MinProtocol is set
	// (an included file, perhaps); empty when nothing sets it.
	MinProtocolFile string `json:"min_protocol_file,omitempty"`
	MinProtocolLine int    `json:"min_protocol_line,omitempty" jsonschema:"minimum=1"`
	MaxProtocol     string `json:"max_protocol"`
	CipherSuites    string `json:"ciphersuites,omitempty"`
}

// NginxTLS is one ssl_protocols directive (or the default where a server
// listens with ssl and sets none).
type NginxTLS struct {
	File      string   `json:"file"`
	Line      int      `json:"line" jsonschema:"minimum=0"`
	Protocols []string `json:"protocols"`
	// Source is "process" when the file is the configuration of a running
	// nginx master (PID), and "file" when it is /etc/nginx/nginx.conf read
	// because no master runs.
	Source string `json:"source,omitempty" jsonschema:"enum=file,enum=process"`
	PID    int    `json:"pid,omitempty" jsonschema:"minimum=1"`
}

// TLSProbe is what a listening port accepts on the wire. The probe writes
// its own ClientHellos and reads the ServerHello, so it sees what Go's TLS
// stack lacks (DHE, ffdhe groups, RC4, static DH): per version it offers
// every registered suite, notes the one the server chose, takes it away and
// asks again until the server refuses, and for TLS 1.3 does the same with
// the key exchange groups. A version counts as accepted when the server's
// ServerHello chose it, even where the handshake then failed (a server that
// demands a client certificate still speaks that version to anyone who
// connects).
type TLSProbe struct {
	Address string `json:"address"`
	// Loopback is true when the listener is bound to a loopback address
	// only, so nothing off the host can reach it.
	Loopback bool `json:"loopback"`
	// TLS10Accepted to TLS13Accepted repeat Protocols for the readers of
	// documents written before it.
	TLS10Accepted bool `json:"tls10_accepted"`
	TLS11Accepted bool `json:"tls11_accepted"`
	TLS12Accepted bool `json:"tls12_accepted"`
	TLS13Accepted bool `json:"tls13_accepted"`
	// Protocols are the versions the server accepted, oldest first, as
	// OpenSSL and nginx name them: SSLv3, TLSv1, TLSv1.1, TLSv1.2, TLSv1.3.
	// Absent when it accepted none (Error then says what was tried) and in
	// documents written before the probe enumerated.
	Protocols []string `json:"protocols,omitempty" jsonschema:"enum=SSLv3,enum=TLSv1,enum=TLSv1.1,enum=TLSv1.2,enum=TLSv1.3" factschema:"notnull"`
	// Suites are the cipher suites the server accepted, per version (oldest
	// first) in the order it chose them, which is its preference where it
	// keeps one.
	Suites []TLSSuite `json:"suites,omitempty" factschema:"notnull"`
	// Groups are the TLS 1.3 key exchange groups the server accepted, by
	// their IANA names, in the order it chose them.
	Groups []string `json:"groups,omitempty"`
	// Curves are the elliptic curves the server accepted for ECDHE at the
	// newest version before TLS 1.3 it accepted, in the order it chose
	// them; absent where it accepted no ECDHE suite there.
	Curves []TLSCurve `json:"curves,omitempty"`
	// StartTLS names the in-band upgrade every connection made before its
	// hello, where the service is not TLS from the first byte: smtp, imap,
	// pop3, ftp, ldap, postgres or mysql. Empty for a TLS port.
	StartTLS string `json:"starttls,omitempty" jsonschema:"enum=smtp,enum=imap,enum=pop3,enum=ftp,enum=ldap,enum=postgres,enum=mysql"`
	// Unreachable is true when the probe could not connect at all (the
	// connect was refused or drew no answer, as a firewall that filters
	// the port does): nothing about the listener is known, and Error says
	// how the connect failed.
	Unreachable bool `json:"unreachable,omitempty"`
	// Connections is how many TCP connections the probe made to the port,
	// bounded per port so that a rate limit or sshd's MaxStartups never
	// counts the scanner against real clients.
	Connections int `json:"connections,omitempty" jsonschema:"minimum=1"`
	// WeakSuites are the names, sorted, of the accepted suites with any
	// class GH-TLS-006 refuses (no forward secrecy, no AEAD, RC4, 3DES,
	// DES, NULL, anonymous, export).
	WeakSuites []string `json:"weak_suites"`
	// Certificate is the leaf, as documents written before the probe
	// read the whole chain have it; Chain[0] describes it again.
	Certificate *TLSCertificate `json:"certificate,omitempty"`
	// Chain is every certificate the server sent, leaf first, in the
	// order sent (at most 10, 64 KiB together; a longer one is an Error).
	// Absent where no certificate was read and in documents written
	// before the probe kept the chain.
	Chain []TLSChainCert `json:"chain,omitempty" factschema:"notnull"`
	// Verification is the chain as a client judges it, against the
	// target's own CA bundle; absent with Chain.
	Verification *TLSVerification `json:"verification,omitempty"`
	// OCSPStapled says whether the server stapled an OCSP response to the
	// certificate in Chain when the probe asked for one (status_request);
	// absent where the probe could not ask (its own ffdhe handshake) and
	// where no certificate was read.
	OCSPStapled *bool `json:"ocsp_stapled,omitempty"`
	// Views are the certificates the port sends to clients that ask
	// otherwise than the probe's own handshakes, which name no server
	// and connect to the listener's own (or, for a wildcard, the
	// loopback) address: one per server name the port is known by, and
	// for a wildcard listener one per address of the host, since a
	// server picks its certificate by either (at most 16).
	Views []TLSView `json:"views,omitempty"`
	// Error says why the listener, which answered in TLS or sits on a port
	// TLS services use, could not be fully probed: a handshake timed out,
	// the connect was filtered, the peer reset, the enumeration reached
	// its connection bound, every hello was refused, or the certificate
	// could not be fetched. Its verdicts are then incomplete.
	Error string `json:"error,omitempty"`
}

// TLSView is the certificate one kind of client gets from a listener.
type TLSView struct {
	// ServerName is the name sent in the hello's server_name extension;
	// empty for a view that names none.
	ServerName string `json:"server_name,omitempty"`
	// NameSource is where the name came from: "nginx" a server_name of
	// the configuration (NameFile, NameLine), "certificate" a DNS name in
	// the subject alternative names of the certificate the port sends
	// without a name.
	NameSource string `json:"name_source,omitempty" jsonschema:"enum=nginx,enum=certificate"`
	NameFile   string `json:"name_file,omitempty"`
	NameLine   int    `json:"name_line,omitempty" jsonschema:"minimum=1"`
	// Address is where the view connected: the listener's dial address
	// for a name, one of the host's addresses for an address view.
	Address string `json:"address"`
	// SameAsDefault: the leaf is the one the probe's own handshake got,
	// so Chain and Verification are left out as they say nothing new.
	SameAsDefault bool `json:"same_as_default"`
	// NameMatches: the leaf covers ServerName as a client matches it
	// (RFC 6125, one wildcard label at most). Absent without a name.
	NameMatches *bool `json:"name_matches,omitempty"`
	// LeafSubject names the leaf the view got, whichever it is.
	LeafSubject string `json:"leaf_subject,omitempty"`
	// Chain and Verification are as TLSProbe's, for a leaf that differs.
	Chain        []TLSChainCert   `json:"chain,omitempty"`
	Verification *TLSVerification `json:"verification,omitempty"`
	// Unreachable: the connect was refused or drew no answer, as where a
	// firewall filters the port at that address; no client gets a
	// certificate there, so nothing is judged.
	Unreachable bool `json:"unreachable,omitempty"`
	// Error says why the view's certificate could not be fetched; its
	// verdicts are then unknown, unless it was Unreachable.
	Error string `json:"error,omitempty"`
}

// TLSSuite is one cipher suite a port accepted at one version, with the
// classes the policy judges. The classes come from the IANA name.
type TLSSuite struct {
	// Name is the IANA name, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.
	Name string `json:"name"`
	// Protocol is the version it was accepted at, as in TLSProbe.Protocols.
	Protocol string `json:"protocol" jsonschema:"enum=SSLv3,enum=TLSv1,enum=TLSv1.1,enum=TLSv1.2,enum=TLSv1.3"`
	// KeyExchange is the name's key exchange and authentication part
	// (ECDHE_RSA, RSA, DH_anon); empty for TLS 1.3 suites, whose key
	// exchange is the group.
	KeyExchange string `json:"key_exchange"`
	// Cipher is the bulk cipher (AES_128_GCM, RC4_128, 3DES_EDE_CBC, NULL).
	Cipher string `json:"cipher"`
	// MAC is AEAD, or the record MAC's hash: SHA1, SHA256, SHA384, MD5.
	MAC string `json:"mac"`
	// ForwardSecrecy: an ephemeral key exchange (DHE, ECDHE, TLS 1.3),
	// not a static RSA, DH, ECDH, PSK or SRP one.
	ForwardSecrecy bool `json:"forward_secrecy"`
	AEAD           bool `json:"aead"`
	CBC            bool `json:"cbc"`
	RC4            bool `json:"rc4"`
	TripleDES      bool `json:"triple_des"`
	// DES is single DES, 56-bit or export 40-bit.
	DES       bool `json:"des"`
	Null      bool `json:"null"`
	Anonymous bool `json:"anonymous"`
	Export    bool `json:"export"`
	// DHBits is the size of the prime a DHE suite's ServerKeyExchange
	// sent, when the probe offered no ffdhe group (so the server's own
	// parameters); 0 for other suites or where it could not be read.
	DHBits int `json:"dh_bits,omitempty" jsonschema:"minimum=0"`
}

// TLSCurve is an elliptic curve a server accepted for ECDHE before TLS 1.3.
type TLSCurve struct {
	// Name is the curve's name in the TLS Supported Groups registry
	// (secp256r1, x25519, sect163k1), or its code point in hex.
	Name string `json:"name"`
	// Bits is the curve's field size (x25519 counts as 256); 0 for an
	// unknown one.
	Bits     int    `json:"bits" jsonschema:"minimum=0"`
	Protocol string `json:"protocol" jsonschema:"enum=SSLv3,enum=TLSv1,enum=TLSv1.1,enum=TLSv1.2"`
}

// TLSCertificate describes the leaf certificate a TLS listener presented.
type TLSCertificate struct {
	Subject string `json:"subject"`
	Issuer  string `json:"issuer"`
	// NotBefore and NotAfter are RFC 3339 in UTC.
	NotBefore string `json:"not_before" jsonschema:"format=date-time"`
	NotAfter  string `json:"not_after" jsonschema:"format=date-time"`
	// AgeSeconds is how long the certificate had been valid when it was
	// probed, for key rotation.
	AgeSeconds int64 `json:"age_seconds"`
	// SecondsLeft is how long the certificate had left when it was probed;
	// zero or less once it expired.
	SecondsLeft int64 `json:"seconds_left"`
	// KeyType is RSA, EC, Ed25519, DSA, RSA-PSS, or the key algorithm's
	// object identifier for anything else (KeyBits 0); documents before
	// issue 48 give a Go type name there.
	KeyType            string   `json:"key_type"`
	KeyBits            int      `json:"key_bits" jsonschema:"minimum=0"`
	SignatureAlgorithm string   `json:"signature_algorithm"`
	SANs               []string `json:"sans"`
	// SelfSigned is true when the issuer is the subject and the
	// certificate's own key verifies its signature.
	SelfSigned bool `json:"self_signed"`
}

// TLSChainCert is one certificate of the chain a listener sent, with what
// clients judge each certificate by. Times are counted by the probe's
// clock, so the checks read no clock of their own.
type TLSChainCert struct {
	// Depth is its place in the chain as sent: 0 the leaf, 1 what came
	// next, and so on.
	Depth   int    `json:"depth" jsonschema:"minimum=0"`
	Subject string `json:"subject"`
	Issuer  string `json:"issuer"`
	// SHA256 is the fingerprint of its DER, lowercase hex, as
	// `openssl x509 -fingerprint -sha256` prints it without the colons.
	SHA256 string `json:"sha256" jsonschema:"pattern=^[0-9a-f]{64}$"`
	// NotBefore and NotAfter are RFC 3339 in UTC.
	NotBefore string `json:"not_before" jsonschema:"format=date-time"`
	NotAfter  string `json:"not_after" jsonschema:"format=date-time"`
	// AgeSeconds is how long it had been valid when probed, negative when
	// its notBefore was still to come (NotYetValid).
	AgeSeconds  int64 `json:"age_seconds"`
	NotYetValid bool  `json:"not_yet_valid"`
	// SecondsLeft is how long it had left when probed; zero or less once
	// it expired.
	SecondsLeft int64 `json:"seconds_left"`
	// KeyType is RSA, EC, Ed25519, DSA, RSA-PSS, or the key algorithm's
	// object identifier for anything else (KeyBits 0); documents before
	// issue 48 give a Go type name there.
	KeyType            string `json:"key_type"`
	KeyBits            int    `json:"key_bits" jsonschema:"minimum=0"`
	SignatureAlgorithm string `json:"signature_algorithm"`
	// SelfSigned: its issuer is its subject and its own key verifies its
	// signature, as a root's does.
	SelfSigned bool `json:"self_signed"`
	// IsCA: its basic constraints say it is a CA.
	IsCA bool `json:"is_ca"`
	// MustStaple: it carries the TLS Feature extension with
	// status_request (RFC 7633), which bids clients refuse it without a
	// stapled OCSP response.
	MustStaple bool `json:"must_staple,omitempty"`
	// KeyUsage names the bits of its keyUsage extension as RFC 5280 does
	// (digitalSignature, keyEncipherment, keyAgreement, keyCertSign, ...);
	// empty when it has none, which allows any use.
	KeyUsage []string `json:"key_usage"`
	// ExtKeyUsage names its extendedKeyUsage purposes (serverAuth,
	// clientAuth, any, ... and the dotted OID of one Go does not name);
	// empty when it has none, which allows any purpose.
	ExtKeyUsage []string `json:"ext_key_usage"`
	// Link is how it ties to the certificate that signed it:
	// "issued_by_next" the next certificate sent names it as its issuer
	// and its key verifies the signature; "self_signed" it signed itself
	// (a root); "store" it is the last one sent and a CA of the trust
	// store issued it, or the store holds it or a root of its name and
	// key (it is that root cross-signed); "missing" it is the last one sent and its issuer
	// is neither sent nor in the trust store (the chain is incomplete);
	// "unknown" the same with no trust store to look in; "wrong_issuer"
	// the next certificate sent is not the one its issuer names (the
	// chain is out of order or carries one that does not belong);
	// "bad_signature" the next one is named as its issuer but its key
	// does not verify the signature (LinkError says why).
	Link      string `json:"link" jsonschema:"enum=issued_by_next,enum=self_signed,enum=store,enum=missing,enum=unknown,enum=wrong_issuer,enum=bad_signature"`
	LinkError string `json:"link_error,omitempty"`
}

// TLSVerification is whether a client that trusts the target's own CA
// bundle accepts the chain: crypto/x509's Verify with the certificates
// sent after the leaf as intermediates, the bundle as roots, the probe's
// clock as the time, and TLS server authentication as the purpose (an
// extendedKeyUsage along the path that leaves out serverAuth fails it).
// No host name is checked here: whether a leaf covers the names the port
// is known by is each view's NameMatches.
type TLSVerification struct {
	// Store is the CA bundle read inside the target, as the report shows
	// it: the first of Debian's, Fedora's and RHEL's, openSUSE's and
	// Alpine's paths that is there. Empty when none is.
	Store string `json:"store"`
	// StoreError says why the chain could not be checked at all: no
	// bundle at any of those paths, one that cannot be read or is over
	// its bound, or one that holds no certificate.
	StoreError string `json:"store_error,omitempty"`
	Verified   bool   `json:"verified"`
	// Error is crypto/x509's reason when Verified is false and the store
	// could be used.
	Error string `json:"error,omitempty"`
}
