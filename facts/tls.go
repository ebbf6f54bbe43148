package facts

// TLS gathers the configured and, on a live host, observed TLS protocols.
type TLS struct {
	OpenSSL *OpenSSL   `json:"openssl,omitempty"`
	Nginx   []NginxTLS `json:"nginx"`
	Probes  []TLSProbe `json:"probes"`
}

// OpenSSL is the system-wide default from openssl.cnf. Empty protocol fields
// mean the file sets no bound, so the library default applies.
type OpenSSL struct {
	ConfigPath  string `json:"config_path"`
	MinProtocol string `json:"min_protocol"`
	// MinProtocolFile and MinProtocolLine are where MinProtocol is set
	// (an included file, perhaps); empty when nothing sets it.
	MinProtocolFile string `json:"min_protocol_file,omitempty"`
	MinProtocolLine int    `json:"min_protocol_line,omitempty"`
	MaxProtocol     string `json:"max_protocol"`
	CipherSuites    string `json:"ciphersuites,omitempty"`
}

// NginxTLS is one ssl_protocols directive (or the default where a server
// listens with ssl and sets none).
type NginxTLS struct {
	File      string   `json:"file"`
	Line      int      `json:"line"`
	Protocols []string `json:"protocols"`
	// Source is "process" when the file is the configuration of a running
	// nginx master (PID), and "file" when it is /etc/nginx/nginx.conf read
	// because no master runs.
	Source string `json:"source,omitempty"`
	PID    int    `json:"pid,omitempty"`
}

// TLSProbe is the result of handshaking with a listening port. A version
// counts as accepted when the server's ServerHello chose it, even where the
// handshake then failed (a server that demands a client certificate still
// speaks that version to anyone who connects).
type TLSProbe struct {
	Address string `json:"address"`
	// Loopback is true when the listener is bound to a loopback address
	// only, so nothing off the host can reach it.
	Loopback      bool `json:"loopback"`
	TLS10Accepted bool `json:"tls10_accepted"`
	TLS11Accepted bool `json:"tls11_accepted"`
	TLS12Accepted bool `json:"tls12_accepted"`
	TLS13Accepted bool `json:"tls13_accepted"`
	// WeakSuites are the TLS 1.2-and-older cipher suites the server agreed
	// to when offered only suites without forward secrecy (static RSA key
	// exchange) or only CBC suites with SHA-1 MACs, by their IANA names.
	WeakSuites  []string        `json:"weak_suites"`
	Certificate *TLSCertificate `json:"certificate,omitempty"`
	// Error says why the listener, which answered in TLS or sits on a port
	// TLS services use, could not be fully probed: a handshake timed out,
	// the connect was filtered, or the peer reset. Its verdicts are then
	// incomplete.
	Error string `json:"error,omitempty"`
}

// TLSCertificate describes the leaf certificate a TLS listener presented.
type TLSCertificate struct {
	Subject string `json:"subject"`
	Issuer  string `json:"issuer"`
	// NotBefore and NotAfter are RFC 3339 in UTC.
	NotBefore string `json:"not_before"`
	NotAfter  string `json:"not_after"`
	// AgeSeconds is how long the certificate had been valid when it was
	// probed, for key rotation.
	AgeSeconds int64 `json:"age_seconds"`
	// SecondsLeft is how long the certificate had left when it was probed;
	// zero or less once it expired.
	SecondsLeft int64 `json:"seconds_left"`
	// KeyType is RSA, EC, Ed25519 or the Go name of anything else.
	KeyType            string   `json:"key_type"`
	KeyBits            int      `json:"key_bits"`
	SignatureAlgorithm string   `json:"signature_algorithm"`
	SANs               []string `json:"sans"`
	// SelfSigned is true when the issuer is the subject and the
	// certificate's own key verifies its signature.
	SelfSigned bool `json:"self_signed"`
}
