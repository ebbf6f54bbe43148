package facts

import "github.com/gpuhost/gpuhost/facts/collect"

// SSH holds sshd's effective settings after Include and drop-ins, with
// OpenSSH defaults filled in for keywords the files leave unset. The
// top-level settings are those of /etc/ssh/sshd_config read as a file; on a
// live host Daemons adds one entry per running sshd, and an image or rootfs
// has one entry, the file's. Policies judge every daemon.
type SSH struct {
	SSHSettings
	// Source is "file": the top-level settings are always read from files.
	Source  string      `json:"source,omitempty" jsonschema:"enum=file"`
	Daemons []SSHDaemon `json:"daemons,omitempty"`
	// HostPrivateKeyFiles lists the /etc/ssh/ssh_host_*_key files present,
	// whether or not a HostKey line names them: in an image, every host
	// booted from it would share them.
	HostPrivateKeyFiles []string `json:"host_private_key_files,omitempty"`
}

// SSHSettings is one sshd configuration as sshd would apply it outside any
// Match block, plus the Match blocks and the host keys it names.
type SSHSettings struct {
	ConfigPath                   string   `json:"config_path"`
	Files                        []string `json:"files"`
	PermitRootLogin              string   `json:"permit_root_login"`
	PasswordAuthentication       string   `json:"password_authentication"`
	KbdInteractiveAuthentication string   `json:"kbd_interactive_authentication"`
	PermitEmptyPasswords         string   `json:"permit_empty_passwords"`
	Ciphers                      []string `json:"ciphers"`
	KexAlgorithms                []string `json:"kex_algorithms"`
	MACs                         []string `json:"macs"`
	// HostKeyAlgorithms are the host key signature algorithms the
	// configuration lets sshd offer: a host key of another type is never
	// presented.
	HostKeyAlgorithms []string `json:"host_key_algorithms"`
	// UsePAM and AuthenticationMethods decide whether a second factor is
	// possible; each method list is comma-joined as sshd_config writes it.
	UsePAM                string   `json:"use_pam"`
	AuthenticationMethods []string `json:"authentication_methods"`
	// AllowGroups, DenyGroups, AllowUsers and DenyUsers accumulate over
	// every line that sets them, as in sshd.
	AllowGroups []string `json:"allow_groups"`
	DenyGroups  []string `json:"deny_groups"`
	AllowUsers  []string `json:"allow_users"`
	DenyUsers   []string `json:"deny_users"`
	// Explicit lists the keywords the files set, lower-cased, so policies can
	// tell a configured value from a default.
	Explicit []string `json:"explicit"`
	// Options are the effective values of the session and authentication
	// options a hardening baseline judges (SSHOptionDefaults' keywords,
	// lower-case): the first value the files give, else OpenSSH's default.
	// Absent in documents from before gpuhost collected them.
	Options map[string]string `json:"options,omitempty"`
	// Locations maps each keyword of Explicit to the line sshd took its
	// value from (the first that sets it; for the keywords that
	// accumulate, the first of their lines), so that a finding points at
	// the line to change.
	Locations map[string]collect.FileLine `json:"locations,omitempty"`
	// Match lists the Match blocks in file order, each with what it sets.
	Match []SSHMatch `json:"match,omitempty"`
	// HostKeys are the host keys the configuration names, read from their
	// public halves (source "file"), or as the daemon presents them (source
	// "wire").
	HostKeys []SSHHostKey `json:"host_keys,omitempty"`
}

// SSHDaemon is one sshd: a running one on a live host (source "process": its
// configuration is the file its command line names, whatever the program
// is called, found by its name or by OpenSSH's banner), a socket another
// process owns that starts an sshd per connection (source "socket", new in
// issue 48: pid is the socket's owner, and the configuration is read anew
// by each connection's sshd), or the configuration file of an image or
// rootfs (source "file", no pid).
type SSHDaemon struct {
	SSHSettings
	PID    int    `json:"pid,omitempty" jsonschema:"minimum=1"`
	Source string `json:"source" jsonschema:"enum=file,enum=process,enum=socket"`
	// Listen lists the address:port pairs the daemon's sockets listen on, as
	// the kernel reports them.
	Listen []string `json:"listen"`
	// Wire holds what the daemon offers on each listener, from its KEXINIT.
	Wire []SSHWire `json:"wire"`
	SSHDaemonAge
}

// SSHDaemonAge tells whether a running sshd still runs the configuration its
// files hold now: sshd reads them only when it starts or reloads, so an edit
// without a reload leaves the old settings running while the files look
// right. Times are RFC 3339, UTC.
type SSHDaemonAge struct {
	// StartedAt is when the process started: /proc/PID/stat's ticks after
	// the boot time, which the kernel gives in whole seconds, so it may be
	// up to a second early; judged by it alone, a file modified that close
	// after the start is not counted as newer. sshd re-execs itself in
	// place on SIGHUP, keeping its pid and this time, so a reload never
	// moves it.
	StartedAt string `json:"started_at,omitempty" jsonschema:"format=date-time"`
	// LoadedAt is when the daemon last read its configuration, as far as
	// the host shows. LoadedFrom says how that is known: "pid_file" when
	// its PidFile names this pid (sshd rewrites that file each time it
	// starts or re-execs, so its modification time moves with a reload);
	// "process_start" otherwise, where a reload since the start cannot be
	// seen and only the wire probe (SSHWire.AuthMethods) tells what runs.
	LoadedAt   string `json:"loaded_at,omitempty" jsonschema:"format=date-time"`
	LoadedFrom string `json:"loaded_from,omitempty" jsonschema:"enum=pid_file,enum=process_start"`
	// ConfigNewer is true when one of Files was modified after LoadedAt;
	// NewestConfig is the most recently modified of them and
	// NewestConfigModified when.
	ConfigNewer          bool   `json:"config_newer,omitempty"`
	NewestConfig         string `json:"newest_config,omitempty"`
	NewestConfigModified string `json:"newest_config_modified,omitempty" jsonschema:"format=date-time"`
	// AgeError says why the daemon's age could not be judged.
	AgeError string `json:"age_error,omitempty"`
}

// SSHMatch is one Match block: where it starts, its criteria as written, and
// the settings under it.
type SSHMatch struct {
	File     string       `json:"file"`
	Line     int          `json:"line" jsonschema:"minimum=0"`
	Criteria string       `json:"criteria"`
	Settings []SSHSetting `json:"settings"`
}

// SSHSetting is one keyword under a Match block (lower-case, aliases mapped
// to their canonical name) with its first argument and where it was written.
type SSHSetting struct {
	Keyword string `json:"keyword"`
	Value   string `json:"value"`
	File    string `json:"file"`
	Line    int    `json:"line" jsonschema:"minimum=0"`
}

// SSHHostKey is one host key. File names the key file (source "file");
// Address the listener that presented it (source "wire"). Bits is the
// modulus size for RSA and the curve size for ECDSA.
type SSHHostKey struct {
	Type        string `json:"type"`
	Bits        int    `json:"bits,omitempty" jsonschema:"minimum=0"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Source      string `json:"source" jsonschema:"enum=file,enum=wire"`
	File        string `json:"file,omitempty"`
	Address     string `json:"address,omitempty"`
	Error       string `json:"error,omitempty"`
}

// SSHWire is what one sshd listener sent before any key exchange: its
// version line and the algorithm lists of its SSH_MSG_KEXINIT. Ciphers and
// MACs join the client-to-server and server-to-client lists, in order.
// AuthMethods come after a key exchange, from a second connection.
type SSHWire struct {
	Address           string   `json:"address"`
	Source            string   `json:"source" jsonschema:"enum=wire"`
	Version           string   `json:"version,omitempty"`
	KexAlgorithms     []string `json:"kex_algorithms"`
	HostKeyAlgorithms []string `json:"host_key_algorithms"`
	Ciphers           []string `json:"ciphers"`
	MACs              []string `json:"macs"`
	Error             string   `json:"error,omitempty"`
	// AuthMethods are the methods the daemon lets a client go on with after
	// an SSH "none" userauth request (RFC 4252 section 5.2) for a user that
	// logs in nowhere: what the running daemon accepts, whatever its files
	// say now. ["none"] means the daemon let the probe in with no
	// authentication at all. The list cannot tell whether root may log in.
	AuthMethods []string `json:"auth_methods,omitempty"`
	AuthError   string   `json:"auth_error,omitempty"`
}
