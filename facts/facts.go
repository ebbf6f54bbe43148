// Package facts defines gpuhost.facts/v1, the one document that collectors fill
// and policies read. Field names are the contract with the Rego pack: renaming
// a JSON tag is a breaking change to every policy and every saved facts file.
package facts

import "time"

// Schema is the value of Facts.Schema for documents this package writes.
const Schema = "gpuhost.facts/v1"

// Target kinds, as they appear in Target.Kind and in policy METADATA targets.
const (
	KindRootfs = "rootfs"
	KindImage  = "image"
	KindHost   = "host"
	KindFacts  = "facts"
	KindOCI    = "oci"
)

// Collector outcomes. Anything other than StatusOK makes the checks that
// require the collector skip (unavailable, not_applicable) or error (error).
const (
	StatusOK            = "ok"
	StatusUnavailable   = "unavailable"
	StatusNotApplicable = "not_applicable"
	StatusError         = "error"
)

// Facts is one gpuhost.facts/v1 document. Collectors own the top-level keys;
// a key a collector did not fill stays nil and is omitted from the JSON.
type Facts struct {
	Schema     string                     `json:"schema"`
	Target     Target                     `json:"target"`
	Collectors map[string]CollectorStatus `json:"collectors"`

	OS               *OS               `json:"os,omitempty"`
	Kernel           *Kernel           `json:"kernel,omitempty"`
	Packages         []Package         `json:"packages,omitempty"`
	Cgroup           *Cgroup           `json:"cgroup,omitempty"`
	Kubelet          *Kubelet          `json:"kubelet,omitempty"`
	Audit            *Audit            `json:"audit,omitempty"`
	Access           *Access           `json:"access,omitempty"`
	TLS              *TLS              `json:"tls,omitempty"`
	SSH              *SSH              `json:"ssh,omitempty"`
	Encryption       *Encryption       `json:"encryption,omitempty"`
	Network          *Network          `json:"network,omitempty"`
	Systemd          *Systemd          `json:"systemd,omitempty"`
	ContainerRuntime *ContainerRuntime `json:"container_runtime,omitempty"`
	GPU              *GPU              `json:"gpu,omitempty"`
	PCI              *PCI              `json:"pci,omitempty"`
	GPUDriver        *GPUDriver        `json:"gpu_driver,omitempty"`
	Containers       *Containers       `json:"containers,omitempty"`
	Manifest         map[string]any    `json:"manifest,omitempty"`
	ConfigFiles      []ConfigFile      `json:"config_files,omitempty"`
	Vulnerabilities  *Vulnerabilities  `json:"vulnerabilities,omitempty"`
	SBOM             *SBOM             `json:"sbom,omitempty"`
}

// New returns an empty document for the given target, stamped with the schema.
func New(kind, ref string, now time.Time) *Facts {
	return &Facts{
		Schema:     Schema,
		Target:     Target{Kind: kind, Ref: ref, ScannedAt: now.UTC().Format(time.RFC3339)},
		Collectors: map[string]CollectorStatus{},
	}
}

// Record stores a collector's outcome. Collectors call it exactly once.
func (f *Facts) Record(collector, status, reason string) {
	if f.Collectors == nil {
		f.Collectors = map[string]CollectorStatus{}
	}
	f.Collectors[collector] = CollectorStatus{Status: status, Reason: reason}
}

// Target says what was scanned.
type Target struct {
	Kind      string `json:"kind"`
	Ref       string `json:"ref"`
	ScannedAt string `json:"scanned_at"`
	Hostname  string `json:"hostname,omitempty"`
}

// CollectorStatus is one collector's outcome, with a human reason when not ok.
type CollectorStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// OS comes from os-release.
type OS struct {
	ID         string `json:"id"`
	VersionID  string `json:"version_id"`
	Codename   string `json:"codename"`
	PrettyName string `json:"pretty_name"`
}

// Kernel holds the running kernel (host) or the installed ones and the
// configured command line (image).
type Kernel struct {
	Release string   `json:"release,omitempty"`
	Cmdline []string `json:"cmdline"`
	// CmdlineSource names the file the command line came from.
	CmdlineSource string `json:"cmdline_source,omitempty"`
	// Installed lists kernel releases found under /lib/modules.
	Installed []string `json:"installed,omitempty"`
}

// Package is one dpkg package in state "installed".
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
	Held    bool   `json:"held"`
}

// Cgroup says which cgroup hierarchy the host runs (or the image will boot).
type Cgroup struct {
	Version int    `json:"version"`
	Source  string `json:"source"`
	// Memory is how memory is limited: on a live host from its cgroup2
	// tree (nil under v1), in an image from the slices' unit files.
	Memory *CgroupMemory `json:"memory,omitempty"`
}

// CgroupMemory is the memory controller and the limits set on the
// top-level slices.
type CgroupMemory struct {
	// ControllerEnabled says whether the root's cgroup.subtree_control
	// enables the memory controller for its children; known on a live host
	// only (nil in an image, where systemd enables it at boot).
	ControllerEnabled *bool `json:"controller_enabled,omitempty"`
	// Slices are system.slice, user.slice and machine.slice, in that order.
	Slices []SliceMemory `json:"slices"`
}

// SliceMemory is one slice's memory limits: the values of MemoryMax= and
// MemoryHigh= ("max" or empty when unlimited), from the slice's cgroup on a
// live host (Source "cgroup") or its unit drop-ins in an image (the file).
type SliceMemory struct {
	Name       string `json:"name"`
	MemoryMax  string `json:"memory_max"`
	MemoryHigh string `json:"memory_high"`
	Source     string `json:"source"`
}

// Audit is the Linux audit trail: auditd, the rules its files load, the
// rules the kernel holds on a live host, and where the log goes.
type Audit struct {
	// Installed says whether auditd's binary is in the target.
	Installed bool `json:"installed"`
	// Enabled says whether auditd.service is wanted by a target.
	Enabled bool `json:"enabled"`
	// Active is auditd.service's ActiveState on a live host.
	Active string `json:"active,omitempty"`
	// RulesFiles are the files the rules come from: rules.d/*.rules in
	// name order, as augenrules joins them, or audit.rules without them.
	RulesFiles []string    `json:"rules_files"`
	Rules      []AuditRule `json:"rules"`
	// Kernel is what the kernel holds, on a live host only.
	Kernel *AuditKernel `json:"kernel,omitempty"`
	Config AuditdConfig `json:"config"`
	Remote AuditRemote  `json:"remote"`
}

// AuditKernel is the rules the kernel holds beside those the files load:
// Error says why they could not be read (then nothing else is set);
// Unloaded are file rules the kernel lacks, Unexpected kernel rules no file
// has, NotCompared the rules either side names in a way that cannot be
// matched (a system call known only by number).
type AuditKernel struct {
	Error       string      `json:"error,omitempty"`
	Rules       []AuditRule `json:"rules"`
	Unloaded    []AuditRule `json:"unloaded"`
	Unexpected  []AuditRule `json:"unexpected"`
	NotCompared int         `json:"not_compared"`
}

// AuditRule is one auditctl line. Kind is "watch" (-w), "syscall" (-a or
// -A), "delete", "delete_watch" or "control" (-D, -b, -e, ...). Path is
// the watched path or the path=/dir= field, Perms its sorted permission
// letters; Syscalls are sorted.
type AuditRule struct {
	File     string       `json:"file,omitempty"`
	Line     int          `json:"line,omitempty"`
	Kind     string       `json:"kind"`
	List     string       `json:"list,omitempty"`
	Action   string       `json:"action,omitempty"`
	Arch     string       `json:"arch,omitempty"`
	Syscalls []string     `json:"syscalls"`
	Path     string       `json:"path,omitempty"`
	Perms    string       `json:"perms,omitempty"`
	Fields   []AuditField `json:"fields"`
	Key      string       `json:"key,omitempty"`
	Text     string       `json:"text"`
}

// AuditField is one -F field op value.
type AuditField struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

// AuditdConfig is what auditd.conf says about keeping the log, with
// auditd's defaults for what it leaves out, lower-cased.
type AuditdConfig struct {
	Path                 string `json:"path"`
	LogFile              string `json:"log_file"`
	MaxLogFileAction     string `json:"max_log_file_action"`
	NumLogs              int    `json:"num_logs"`
	SpaceLeftAction      string `json:"space_left_action"`
	AdminSpaceLeftAction string `json:"admin_space_left_action"`
	DiskFullAction       string `json:"disk_full_action"`
	DiskErrorAction      string `json:"disk_error_action"`
}

// AuditRemote says where audit records are forwarded: by audisp-remote
// (its plugin active and the server it names), or by
// systemd-journal-upload (enabled, and its URL).
type AuditRemote struct {
	AudispRemoteActive bool   `json:"audisp_remote_active"`
	AudispRemoteServer string `json:"audisp_remote_server,omitempty"`
	JournalUpload      bool   `json:"journal_upload"`
	JournalUploadURL   string `json:"journal_upload_url,omitempty"`
}

// Access is who may log in and what they may do as root: accounts and
// groups, sudo's rules, sshd's PAM stack, and what under /etc others may
// write.
type Access struct {
	Users  []Account `json:"users"`
	Groups []Group   `json:"groups"`
	// Sudo is nil when the target has no /etc/sudoers.
	Sudo *Sudo `json:"sudo,omitempty"`
	// PAMSSHD is /etc/pam.d/sshd with its includes expanded in place;
	// nil when the file is absent.
	PAMSSHD []PAMRule `json:"pam_sshd"`
	// EtcWritable lists what under /etc a group other than root's, or
	// anyone, may write.
	EtcWritable []WritableFile `json:"etc_writable"`
}

// Account is one /etc/passwd entry with the state of its /etc/shadow
// password: "hash", "locked" (! or *), "empty", or "none" when shadow has
// no entry (the passwd field then decides: "x" means none at all).
type Account struct {
	Name     string `json:"name"`
	UID      int    `json:"uid"`
	GID      int    `json:"gid"`
	Shell    string `json:"shell"`
	Password string `json:"password"`
}

// Group is one /etc/group entry; Members lists its secondary members.
type Group struct {
	Name    string   `json:"name"`
	GID     int      `json:"gid"`
	Members []string `json:"members"`
}

// Sudo is sudoers and the files it includes.
type Sudo struct {
	Files    []string      `json:"files"`
	Rules    []SudoRule    `json:"rules"`
	Defaults []SudoDefault `json:"defaults"`
}

// SudoRule is one user specification, with User_Alias, Runas_Alias and
// Cmnd_Alias names expanded. Users holds names and %groups as written;
// AllCommands says whether ALL is among the commands; NoPasswd whether
// any command runs without a password.
type SudoRule struct {
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Users       []string `json:"users"`
	Hosts       []string `json:"hosts"`
	RunAs       []string `json:"run_as"`
	Commands    []string `json:"commands"`
	AllCommands bool     `json:"all_commands"`
	NoPasswd    bool     `json:"no_passwd"`
}

// SudoDefault is one setting of a Defaults line. Scope is what follows
// "Defaults" (@host, :user, >runas, !command), empty for every use.
type SudoDefault struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Scope   string `json:"scope"`
	Name    string `json:"name"`
	Value   string `json:"value"`
	Negated bool   `json:"negated"`
}

// PAMRule is one line of a PAM stack: type (auth, account, password,
// session), control, module and arguments.
type PAMRule struct {
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Type    string   `json:"type"`
	Control string   `json:"control"`
	Module  string   `json:"module"`
	Args    []string `json:"args"`
}

// WritableFile is a file or directory under /etc that someone other than
// its owner may write: Group names the owning group when it may.
type WritableFile struct {
	Path          string `json:"path"`
	Mode          string `json:"mode"`
	GID           int    `json:"gid"`
	Group         string `json:"group,omitempty"`
	GroupWritable bool   `json:"group_writable"`
	WorldWritable bool   `json:"world_writable"`
}

// Kubelet is what the kubelet's configuration file says about memory.
type Kubelet struct {
	ConfigPath   string `json:"config_path"`
	CgroupDriver string `json:"cgroup_driver"`
	// SystemReservedMemory and KubeReservedMemory are the memory kept from
	// pods for the system and for Kubernetes' own daemons; empty when unset.
	SystemReservedMemory string `json:"system_reserved_memory"`
	KubeReservedMemory   string `json:"kube_reserved_memory"`
	// EvictionHardMemory is evictionHard's memory.available threshold;
	// empty when unset, which leaves the kubelet's default.
	EvictionHardMemory     string   `json:"eviction_hard_memory"`
	EnforceNodeAllocatable []string `json:"enforce_node_allocatable"`
	// RotateCertificates and ServerTLSBootstrap say whether the kubelet
	// renews its client and serving certificates; false when unset, the
	// kubelet's default.
	RotateCertificates bool `json:"rotate_certificates"`
	ServerTLSBootstrap bool `json:"server_tls_bootstrap"`
}

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

// SSH holds sshd's effective settings after Include and drop-ins, with
// OpenSSH defaults filled in for keywords the files leave unset. The
// top-level settings are those of /etc/ssh/sshd_config read as a file; on a
// live host Daemons adds one entry per running sshd, and an image or rootfs
// has one entry, the file's. Policies judge every daemon.
type SSH struct {
	SSHSettings
	// Source is "file": the top-level settings are always read from files.
	Source  string      `json:"source,omitempty"`
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
	// Match lists the Match blocks in file order, each with what it sets.
	Match []SSHMatch `json:"match,omitempty"`
	// HostKeys are the host keys the configuration names, read from their
	// public halves (source "file"), or as the daemon presents them (source
	// "wire").
	HostKeys []SSHHostKey `json:"host_keys,omitempty"`
}

// SSHDaemon is one sshd: a running one on a live host (source "process": its
// configuration is the file its command line names), or the configuration
// file of an image or rootfs (source "file", no pid).
type SSHDaemon struct {
	SSHSettings
	PID    int    `json:"pid,omitempty"`
	Source string `json:"source"`
	// Listen lists the address:port pairs the daemon's sockets listen on, as
	// the kernel reports them.
	Listen []string `json:"listen"`
	// Wire holds what the daemon offers on each listener, from its KEXINIT.
	Wire []SSHWire `json:"wire"`
}

// SSHMatch is one Match block: where it starts, its criteria as written, and
// the settings under it.
type SSHMatch struct {
	File     string       `json:"file"`
	Line     int          `json:"line"`
	Criteria string       `json:"criteria"`
	Settings []SSHSetting `json:"settings"`
}

// SSHSetting is one keyword under a Match block (lower-case, aliases mapped
// to their canonical name) with its first argument and where it was written.
type SSHSetting struct {
	Keyword string `json:"keyword"`
	Value   string `json:"value"`
	File    string `json:"file"`
	Line    int    `json:"line"`
}

// SSHHostKey is one host key. File names the key file (source "file");
// Address the listener that presented it (source "wire"). Bits is the
// modulus size for RSA and the curve size for ECDSA.
type SSHHostKey struct {
	Type        string `json:"type"`
	Bits        int    `json:"bits,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Source      string `json:"source"`
	File        string `json:"file,omitempty"`
	Address     string `json:"address,omitempty"`
	Error       string `json:"error,omitempty"`
}

// SSHWire is what one sshd listener sent before any key exchange: its
// version line and the algorithm lists of its SSH_MSG_KEXINIT. Ciphers and
// MACs join the client-to-server and server-to-client lists, in order.
type SSHWire struct {
	Address           string   `json:"address"`
	Source            string   `json:"source"`
	Version           string   `json:"version,omitempty"`
	KexAlgorithms     []string `json:"kex_algorithms"`
	HostKeyAlgorithms []string `json:"host_key_algorithms"`
	Ciphers           []string `json:"ciphers"`
	MACs              []string `json:"macs"`
	Error             string   `json:"error,omitempty"`
}

// Encryption covers data-at-rest: configured (crypttab) and, live, active.
type Encryption struct {
	Crypttab []CrypttabEntry `json:"crypttab"`
	Root     *RootEncryption `json:"root,omitempty"`
	Swap     []Swap          `json:"swap"`
}

// CrypttabEntry is one line of /etc/crypttab; File and Line say where, so
// that a finding about it points at the line.
type CrypttabEntry struct {
	Name    string   `json:"name"`
	Device  string   `json:"device"`
	KeyFile string   `json:"key_file"`
	Options []string `json:"options"`
	File    string   `json:"file,omitempty"`
	Line    int      `json:"line,omitempty"`
}

// RootEncryption says whether / sits on an encrypting device-mapper target.
// Chain lists the block devices from / down to the disk; Hops describes the
// same walk, one entry per device met, in the same order. Encrypted is true
// only when every path from / down to a disk passes a crypt device.
type RootEncryption struct {
	Encrypted bool     `json:"encrypted"`
	Source    string   `json:"source"`
	Device    string   `json:"device,omitempty"`
	Chain     []string `json:"chain"`
	Hops      []Hop    `json:"hops,omitempty"`
	// File and Line are the fstab line that mounts / (offline only).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Hop is one block device on the way from / down to a disk.
type Hop struct {
	// Device is the kernel name (dm-0, sda3) live, or the name the image's
	// files use (/dev/mapper/vg-root, UUID=...) offline.
	Device string `json:"device"`
	// Kind is lvm, crypt, verity, integrity, dm, raid, partition, disk,
	// loop or unknown.
	Kind string `json:"kind"`
	// Name is the device-mapper name, the LVM vg/lv, or the crypttab name.
	Name string `json:"name,omitempty"`
	// Learned says where the hop was read: sysfs, fstab, crypttab,
	// lvm-metadata or luks-header.
	Learned string `json:"learned"`
	// Depth is how many hops lie between this one and the device under /.
	Depth int `json:"depth"`
	// Crypt holds the cipher of a crypt hop.
	Crypt *CryptParams `json:"crypt,omitempty"`
}

// CryptParams is the cipher of an encrypting device, never its key.
type CryptParams struct {
	// Type is luks1, luks2, plain, bitlk, tcrypt, fvault2, or "" when unknown.
	Type string `json:"type"`
	// Cipher is the dm-crypt cipher spec, such as aes-xts-plain64; "" when
	// it could not be read.
	Cipher string `json:"cipher"`
	// KeyBits is the size of the whole key; an XTS key holds two.
	KeyBits int `json:"key_bits"`
	// Hash is the passphrase hash of plain mode, where it is known.
	Hash string `json:"hash,omitempty"`
	// Source is kernel (the dm-crypt table), process (dmsetup) or file
	// (crypttab options, a LUKS header).
	Source string `json:"source"`
	// Error says why the cipher could not be read.
	Error string `json:"error,omitempty"`
	// Keyslots are a LUKS header's key slots, with what the empty
	// passphrase does to each; nil when no header was read.
	Keyslots []Keyslot `json:"keyslots,omitempty"`
	// KeyslotsError says why the key slots of a header could not be read.
	KeyslotsError string `json:"keyslots_error,omitempty"`
	// VolumeKey is what a LUKS header tells of where the volume key came
	// from; nil when no header was read.
	VolumeKey *VolumeKey `json:"volume_key,omitempty"`
}

// Origins of a volume key (VolumeKey.Origin).
const (
	// KeyFromImage: the volume is encrypted with the key of the image it
	// was built as, which every host booted from that image shares. An
	// image's own volume always is.
	KeyFromImage = "image"
	// KeyOfHost: the header's volume key is not the one the image recorded;
	// the volume was re-encrypted since.
	KeyOfHost = "host"
	// KeyUnknown: the header records no image key (a volume made by other
	// means, or LUKS1, which has no tokens).
	KeyUnknown = "unknown"
)

// VolumeKey is where a LUKS volume's key came from, never the key: the
// gpuhost-rootfs builder records the digest of an image's volume key in
// the header (a gpuhost-image-key token), and the header's own digest
// changes when the volume is re-encrypted with another key.
type VolumeKey struct {
	// Origin is image, host or unknown (KeyFromImage, KeyOfHost,
	// KeyUnknown).
	Origin string `json:"origin"`
	// Reencrypting is true while a re-encryption of the volume is
	// unfinished: part of it is under the old key still.
	Reencrypting bool `json:"reencrypting,omitempty"`
	// FirstBoot names the file that has first boot re-encrypt an image's
	// volume with a key of the host's own, when the image's first-boot
	// enrolment is installed to do so (offline only).
	FirstBoot string `json:"first_boot,omitempty"`
}

// Keyslot is one LUKS key slot, never its key.
type Keyslot struct {
	// ID is the slot's number.
	ID string `json:"id"`
	// KDF derives the slot's key: argon2id, argon2i or pbkdf2.
	KDF string `json:"kdf"`
	// Token is the type of the token bound to the slot (systemd-tpm2 for a
	// key sealed to a TPM2), "" for none.
	Token string `json:"token,omitempty"`
	// EmptyPassphrase is true when the empty passphrase opens the slot.
	EmptyPassphrase bool `json:"empty_passphrase"`
	// Untried says why the empty passphrase was not tried (a KDF beyond
	// what a trial spends, a cipher not tried); "" when it was.
	Untried string `json:"untried,omitempty"`
	// FirstBoot names the file that has first boot wipe this slot, when the
	// image's first-boot enrolment is installed to do so (offline only).
	FirstBoot string `json:"first_boot,omitempty"`
}

// Swap is one swap area, from /proc/swaps (host) or fstab (image). Hops is
// the walk from its device (a swap file's: the device under the file) down
// to the disks, as for the root.
type Swap struct {
	Device    string `json:"device"`
	Encrypted bool   `json:"encrypted"`
	Kind      string `json:"kind,omitempty"`
	Hops      []Hop  `json:"hops,omitempty"`
}

// Network holds listening sockets (live only) and the firewall.
type Network struct {
	Listening []Listener `json:"listening"`
	Firewall  *Firewall  `json:"firewall,omitempty"`
}

// Listener is one listening socket.
type Listener struct {
	Proto   string `json:"proto"`
	Address string `json:"address"`
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty"`
}

// Firewall is the input path of the firewall: on a live host the ruleset
// the kernel holds, offline the nftables or ufw configuration.
type Firewall struct {
	Backend string `json:"backend"`
	// Enabled says the firewall comes up at boot (offline: a wants link) or,
	// on a live host, that its unit is active; Unit says how it was told.
	Enabled bool `json:"enabled"`
	// DefaultInputPolicy is "accept" when a port no rule admits still
	// reaches an accepting policy, and otherwise the strictest policy (drop
	// when rules leave no port to an accepting one).
	DefaultInputPolicy string `json:"default_input_policy"`
	// AllowedPorts are the TCP and UDP ports that rules admit on the input
	// path, following jumps, gotos and sets.
	AllowedPorts []int `json:"allowed_ports"`
	// Source is "kernel" when the ruleset was read over netlink and "file"
	// when it was parsed from Path.
	Source string `json:"source,omitempty"`
	Path   string `json:"path,omitempty"`
	// KernelError says why a live host's ruleset could not be read from
	// the kernel, so that the file was read instead.
	KernelError string `json:"kernel_error,omitempty"`
	// Unit is the systemd unit that loads the firewall, and its state.
	Unit *UnitState `json:"unit,omitempty"`
	// Admits names, for each range of admitted ports, the rule (or the
	// policy) that lets it in.
	Admits []FirewallAdmit `json:"admits,omitempty"`
	// Unmodeled lists rules with conditions gpuhost cannot evaluate.
	Unmodeled []FirewallRule `json:"unmodeled,omitempty"`
}

// UnitState is a systemd unit's ActiveState, or "unknown" with a reason.
type UnitState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// FirewallAdmit is a run of ports of one protocol and what admits it.
type FirewallAdmit struct {
	Proto string `json:"proto"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Rule  string `json:"rule"`
}

// FirewallRule is a rule the model could not evaluate. MayAccept is true
// when it could let in ports that AllowedPorts does not list.
type FirewallRule struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	MayAccept bool   `json:"may_accept"`
}

// Systemd lists the unit state that policy cares about.
type Systemd struct {
	Enabled []string `json:"enabled"`
	Masked  []string `json:"masked"`
	// Version is systemd's major version from the installed package; it
	// decides the cgroup default when the kernel command line says nothing.
	Version int `json:"version,omitempty"`
}

// ContainerRuntime covers containerd, docker and CDI.
type ContainerRuntime struct {
	Containerd *Containerd `json:"containerd,omitempty"`
	Docker     *Docker     `json:"docker,omitempty"`
	CDISpecs   []CDISpec   `json:"cdi_specs"`
}

// Containerd is the effective config after conf.d drop-ins are merged.
type Containerd struct {
	ConfigPath    string   `json:"config_path"`
	ConfigVersion int      `json:"config_version"`
	Imports       []string `json:"imports"`
	NvidiaRuntime bool     `json:"nvidia_runtime"`
	NvidiaBinary  string   `json:"nvidia_binary,omitempty"`
	// NvidiaBinaryPresent says whether NvidiaBinary is an executable file
	// in the target, found as containerd's shim would find it.
	NvidiaBinaryPresent bool   `json:"nvidia_binary_present"`
	DefaultRuntime      string `json:"default_runtime"`
	// SystemdCgroup is the runc (or default runtime) option; nil when unset.
	SystemdCgroup       *bool `json:"systemd_cgroup"`
	NvidiaSystemdCgroup *bool `json:"nvidia_systemd_cgroup"`
	CDIEnabled          bool  `json:"cdi_enabled"`
	// Source is "process" when the file is the one a running containerd
	// was started with (PID), "file" when it is the default file read
	// without a running daemon.
	Source string `json:"source,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// Locations say where the settings above are set, by their JSON name
	// (default_runtime, cdi_enabled, systemd_cgroup, nvidia_runtime,
	// nvidia_binary, nvidia_systemd_cgroup): the key's line, or its
	// table's header, in the main file or the import that set it last. A
	// setting left at containerd's default has none.
	Locations map[string]FileLine `json:"locations,omitempty"`
}

// FileLine is a place in a file of the target: its path as shown to users
// and a line, from 1.
type FileLine struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// Docker is /etc/docker/daemon.json.
type Docker struct {
	ConfigPath     string   `json:"config_path"`
	DefaultRuntime string   `json:"default_runtime"`
	Runtimes       []string `json:"runtimes"`
	CgroupDriver   string   `json:"cgroup_driver"`
	CDIEnabled     bool     `json:"cdi_enabled"`
}

// CDISpec is one CDI spec file.
type CDISpec struct {
	File    string   `json:"file"`
	Kind    string   `json:"kind"`
	Devices []string `json:"devices"`
}

// GPU is filled by the NVML collector on a host, and by the offline driver
// collector in an image.
type GPU struct {
	Available           bool         `json:"available"`
	Reason              string       `json:"reason,omitempty"`
	DriverVersion       string       `json:"driver_version,omitempty"`
	CUDADriverVersion   string       `json:"cuda_driver_version,omitempty"`
	NVMLVersion         string       `json:"nvml_version,omitempty"`
	KernelModuleVersion string       `json:"kernel_module_version,omitempty"`
	Devices             []GPUDevice  `json:"devices"`
	ConfCompute         *ConfCompute `json:"conf_compute,omitempty"`
	XIDEvents           []XIDEvent   `json:"xid_events"`
	// KernelModuleType is "open" or "proprietary", from /proc/driver/nvidia/version.
	KernelModuleType string `json:"kernel_module_type,omitempty"`
	// DriverBranch is the major part of DriverVersion (535 for 535.261.03).
	DriverBranch int `json:"driver_branch,omitempty"`
	// DriverMismatch is true when NVML refused to start because the user-space
	// library and the loaded kernel module differ (ERROR_LIB_RM_VERSION_MISMATCH).
	DriverMismatch bool `json:"driver_mismatch,omitempty"`
	// Unsupported lists system-level queries NVML answered NOT_SUPPORTED.
	Unsupported []string `json:"unsupported,omitempty"`
	// XIDSource names the kernel log files the XID events were read from;
	// XIDError says why they could not be read, and then XIDEvents proves nothing.
	XIDSource string `json:"xid_source,omitempty"`
	XIDError  string `json:"xid_error,omitempty"`
}

// PCI lists the NVIDIA functions on the host's PCI bus, read from sysfs
// without NVML, so that a host whose driver or NVML is down still shows which
// GPUs it has.
type PCI struct {
	Devices []PCIDevice `json:"devices"`
}

// PCIDevice is one NVIDIA PCI function. Class is the 24-bit class code as
// sysfs prints it (0x030200 is a 3D controller, 0x030000 a VGA one, 0x068000
// an NVSwitch bridge); GPU is true for the display classes (0x03xxxx).
type PCIDevice struct {
	Address  string `json:"address"`
	Vendor   string `json:"vendor"`
	Device   string `json:"device"`
	Class    string `json:"class"`
	GPU      bool   `json:"gpu"`
	Driver   string `json:"driver,omitempty"`
	NUMANode *int   `json:"numa_node,omitempty"`
}

// GPUDevice is one GPU as NVML sees it. Pointer fields are nil when the GPU
// reports NOT_SUPPORTED, so a policy can skip rather than guess.
type GPUDevice struct {
	Index           int           `json:"index"`
	UUID            string        `json:"uuid"`
	Name            string        `json:"name"`
	PCIBusID        string        `json:"pci_bus_id"`
	ECC             *ECC          `json:"ecc,omitempty"`
	RetiredPages    *RetiredPages `json:"retired_pages,omitempty"`
	RemappedRows    *RemappedRows `json:"remapped_rows,omitempty"`
	PersistenceMode *bool         `json:"persistence_mode,omitempty"`
	MIG             *MIG          `json:"mig,omitempty"`
	TemperatureC    *int          `json:"temperature_c,omitempty"`
	PCIe            *PCIe         `json:"pcie,omitempty"`
	NVLink          []NVLink      `json:"nvlink"`
	Unsupported     []string      `json:"unsupported,omitempty"`
	// TemperatureSlowdownC is the temperature at which the GPU starts to slow down.
	TemperatureSlowdownC *int `json:"temperature_slowdown_c,omitempty"`
	// PowerW and PowerLimitW are the draw and the enforced limit, in watts.
	PowerW      *float64 `json:"power_w,omitempty"`
	PowerLimitW *float64 `json:"power_limit_w,omitempty"`
	// ThrottleReasons names the active clock event (throttle) reasons.
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
	// Architecture, MinDriverBranch and OpenModuleSupported come from the
	// compatibility matrix for this GPU model; empty or zero when unknown.
	Architecture        string `json:"architecture,omitempty"`
	MinDriverBranch     int    `json:"min_driver_branch,omitempty"`
	OpenModuleSupported *bool  `json:"open_module_supported,omitempty"`
	// OpenModuleRequired is true for GPUs that only the open kernel module drives.
	OpenModuleRequired bool `json:"open_module_required,omitempty"`
	// Errors lists queries that failed for a reason other than NOT_SUPPORTED
	// (a timeout, a lost GPU): those fields are nil and prove nothing.
	Errors []string `json:"errors,omitempty"`
}

// ECC mode and uncorrected error counts.
type ECC struct {
	Current              bool  `json:"current"`
	Pending              bool  `json:"pending"`
	UncorrectedVolatile  int64 `json:"uncorrected_volatile"`
	UncorrectedAggregate int64 `json:"uncorrected_aggregate"`
}

// RetiredPages applies to pre-Ampere GPUs.
type RetiredPages struct {
	Pending bool `json:"pending"`
	Count   int  `json:"count"`
}

// RemappedRows applies to Ampere and later.
type RemappedRows struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failed        bool `json:"failed"`
}

// MIG mode.
type MIG struct {
	Current bool `json:"current"`
	Pending bool `json:"pending"`
}

// PCIe link state against the link's capability.
type PCIe struct {
	GenCurrent   int `json:"gen_current"`
	GenMax       int `json:"gen_max"`
	WidthCurrent int `json:"width_current"`
	WidthMax     int `json:"width_max"`
}

// NVLink is one link's state.
type NVLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"`
}

// ConfCompute is the system's confidential-computing state.
type ConfCompute struct {
	Feature      string `json:"feature"`
	DevtoolsMode string `json:"devtools_mode"`
	Environment  string `json:"environment"`
}

// XIDEvent is one Xid line from the kernel log or the journal.
type XIDEvent struct {
	Code     int    `json:"code"`
	PCIBusID string `json:"pci_bus_id"`
	Time     string `json:"time,omitempty"`
	// Message is the rest of the line after the code, bounded in length.
	Message string `json:"message,omitempty"`
	// Source is where the event was read: a log file ("/var/log/kern.log.2.gz")
	// or "journal".
	Source string `json:"source,omitempty"`
	// GPUs are the GPUs NVML lists at the event's PCI address. It is empty
	// when NVML could not say: the driver is down, or the GPU fell off the
	// bus and out of NVML's list.
	GPUs []XIDGPU `json:"gpus,omitempty"`
}

// XIDGPU names a GPU an Xid event was logged for.
type XIDGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
}

// GPUDriver is the NVIDIA stack as installed, read from the package database
// and the file system: it is the same in an image and on a host.
type GPUDriver struct {
	// Packages are the installed NVIDIA driver, kernel module and CUDA packages.
	Packages []Package `json:"packages"`
	// Version is the driver's upstream version (535.261.03), Branch its major part.
	Version string `json:"version,omitempty"`
	Branch  int    `json:"branch,omitempty"`
	// Flavor is "open" when the open kernel modules are installed, else
	// "proprietary"; empty when no driver package is installed.
	Flavor string `json:"flavor,omitempty"`
	// Modules maps each installed kernel release to the nvidia*.ko files found for it.
	Modules map[string][]string `json:"modules"`
	// NouveauBlacklisted says whether nouveau is kept from loading, and NouveauSource where.
	NouveauBlacklisted bool   `json:"nouveau_blacklisted"`
	NouveauSource      string `json:"nouveau_source,omitempty"`
	// PersistencedEnabled and FabricManagerEnabled come from the enabled systemd units.
	PersistencedEnabled  bool `json:"persistenced_enabled"`
	FabricManagerEnabled bool `json:"fabricmanager_enabled"`
	// CUDAToolkitVersion is the newest installed toolkit as MAJOR.MINOR, and
	// CUDAToolkitSource the package or file it came from.
	CUDAToolkitVersion string `json:"cuda_toolkit_version,omitempty"`
	CUDAToolkitSource  string `json:"cuda_toolkit_source,omitempty"`
	// MaxCUDA is the newest CUDA the installed branch supports, from the
	// compatibility matrix; empty when the branch is unknown to it.
	MaxCUDA string `json:"max_cuda,omitempty"`
}

// Containers lists pre-seeded container images found in the target.
type Containers struct {
	Images []ContainerImage `json:"images"`
	// Damaged are the images the layout lists whose blobs are missing or do
	// not hash to their digests: not seeded, whatever their names say.
	Damaged []DamagedImage `json:"damaged,omitempty"`
}

// DamagedImage is a listed image that is not whole, and why.
type DamagedImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Reason string `json:"reason"`
}

// ContainerImage is one pre-seeded base.
type ContainerImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Source string `json:"source"`
}

// ConfigFile is the sha256 of one configuration file the baked manifest
// records, read from the live target so drift can compare the two.
type ConfigFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Vulnerabilities are OS package findings from an offline trivy DB.
type Vulnerabilities struct {
	DB       string    `json:"db"`
	Findings []Finding `json:"findings"`
}

// Finding is one vulnerable package.
type Finding struct {
	ID        string `json:"id"`
	Package   string `json:"package"`
	Installed string `json:"installed"`
	Fixed     string `json:"fixed"`
	Severity  string `json:"severity"`
	// Published is when the vulnerability was made public (RFC 3339, from
	// the DB's NVD or GHSA data); empty when the DB does not say.
	Published string `json:"published,omitempty"`
}

// SBOM describes the software bill of materials an image carries at
// SBOM.Path, so that a policy can require one.
type SBOM struct {
	// Present says whether Path is a regular file in the target.
	Present bool   `json:"present"`
	Path    string `json:"path"`
	// Format and SpecVersion are the document's own ("CycloneDX", "1.6").
	Format      string `json:"format,omitempty"`
	SpecVersion string `json:"spec_version,omitempty"`
	// Components counts the document's top-level components.
	Components int `json:"components"`
	// SHA256 is the digest of the file, for comparison with a published copy.
	SHA256 string `json:"sha256,omitempty"`
}
