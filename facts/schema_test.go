package facts

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
)

var update = flag.Bool("update", false, "rewrite testdata/good-full.json")

func ptr[T any](v T) *T { return &v }

// fullFacts fills every key, optional ones included, so the schema is
// checked against everything the Go types can emit.
func fullFacts() *Facts {
	f := New(KindHost, "gpu-node-01", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	f.Target.Hostname = "gpu-node-01"
	f.Record("os", StatusOK, "")
	f.Record("gpu", StatusUnavailable, "libnvidia-ml.so.1 not found")
	f.Record("network", StatusNotApplicable, "offline rootfs")
	f.Record("tls", StatusError, "parsing /etc/ssl/openssl.cnf: line 3: bad section")
	f.NoteNotJudged("tls_probe", []string{"0.0.0.0:22/tcp (sshd): not TLS: it spoke first, which no TLS server does: \"SSH-2.0-OpenSSH_9.2p1\""})
	f.OS = &OS{ID: "ubuntu", VersionID: "22.04", Codename: "jammy", PrettyName: "Ubuntu 22.04.4 LTS"}
	f.Kernel = &Kernel{Release: "5.15.0-105-generic", Cmdline: []string{"ro", "quiet"}, CmdlineSource: "/proc/cmdline", Installed: []string{"5.15.0-105-generic"}}
	f.KernelModules = &KernelModules{Files: []string{"/etc/modprobe.d/cis.conf"}, Modules: map[string]ModuleConfig{
		"usb_storage": {Install: &ModuleInstall{Command: "/bin/false", File: "/etc/modprobe.d/cis.conf", Line: 1},
			Blacklist: &collect.FileLine{File: "/etc/modprobe.d/cis.conf", Line: 2}},
	}, Loaded: []string{"ext4"}}
	f.Sysctl = &Sysctl{Files: []string{"/etc/sysctl.d/60-cis.conf"},
		Configured: map[string]SysctlSetting{"net.ipv4.ip_forward": {Value: "0", File: "/etc/sysctl.d/60-cis.conf", Line: 1}},
		Globs:      []SysctlGlob{{Pattern: "net.ipv4.conf.*.rp_filter", Value: "2", File: "/usr/lib/sysctl.d/50-default.conf", Line: 22}},
		Excluded:   map[string]collect.FileLine{"net.ipv4.conf.all.rp_filter": {File: "/usr/lib/sysctl.d/50-default.conf", Line: 23}},
		Running:    map[string]string{"net.ipv4.ip_forward": "0"}}
	f.Limits = &Limits{Files: []string{"/etc/security/limits.conf"},
		Entries: []LimitEntry{{Domain: "*", Type: "hard", Item: "core", Value: "0", File: "/etc/security/limits.conf", Line: 55}}}
	f.Packages = []Package{{Name: "nvidia-utils-535-server", Version: "535.161.08-0ubuntu2", Arch: "amd64", Held: true}}
	f.Cgroup = &Cgroup{Version: 2, Source: "statfs", Memory: &CgroupMemory{ControllerEnabled: ptr(true), Slices: []SliceMemory{
		{Name: "system.slice", MemoryMax: "max", MemoryHigh: "max", Source: "cgroup"},
		{Name: "user.slice", MemoryMax: "32G", Source: "cgroup"},
	}}}
	f.Kubelet = &Kubelet{ConfigPath: "/var/lib/kubelet/config.yaml", CgroupDriver: "systemd", SystemReservedMemory: "2Gi",
		KubeReservedMemory: "1Gi", EvictionHardMemory: "500Mi", EnforceNodeAllocatable: []string{"pods"},
		RotateCertificates: true, ServerTLSBootstrap: true}
	f.Audit = &Audit{Installed: true, Enabled: true, Active: "active", RulesFiles: []string{"/etc/audit/rules.d/50-gpuhost.rules"},
		Rules: []AuditRule{{File: "/etc/audit/rules.d/50-gpuhost.rules", Line: 3, Kind: "watch", Path: "/etc/ssh", Perms: "aw",
			Syscalls: []string{}, Fields: []AuditField{}, Key: "sshd", Text: "-w /etc/ssh -p wa -k sshd"}},
		Kernel: &AuditKernel{Error: "", Rules: []AuditRule{}, Unloaded: []AuditRule{}, Unexpected: []AuditRule{{Kind: "watch", Path: "/tmp",
			Perms: "w", Syscalls: []string{}, Fields: []AuditField{}, Text: "-w /tmp -p w"}}, NotCompared: 1},
		Config: AuditdConfig{Path: "/etc/audit/auditd.conf", LogFile: "/var/log/audit/audit.log", MaxLogFileAction: "keep_logs", NumLogs: 5,
			SpaceLeftAction: "email", AdminSpaceLeftAction: "single", DiskFullAction: "halt", DiskErrorAction: "halt",
			Locations: map[string]collect.FileLine{"disk_full_action": {File: "/etc/audit/auditd.conf", Line: 4}}},
		Remote: AuditRemote{AudispRemoteActive: true, AudispRemoteServer: "logs.example", JournalUpload: true, JournalUploadURL: "https://logs.example:19532"},
	}
	f.Access = &Access{
		Users:  []Account{{Name: "root", UID: 0, GID: 0, Home: "/root", Shell: "/bin/bash", Password: "locked"}},
		Groups: []Group{{Name: "gpuhost-admin", GID: 1001, Members: []string{"alice"}}},
		Sudo: &Sudo{Files: []string{"/etc/sudoers"}, Rules: []SudoRule{{File: "/etc/sudoers", Line: 20, Users: []string{"%gpuhost-admin"},
			Hosts: []string{"ALL"}, RunAs: []string{"ALL"}, Commands: []string{"ALL"}, AllCommands: true, NoPasswd: false}},
			Defaults: []SudoDefault{{File: "/etc/sudoers", Line: 9, Scope: "", Name: "use_pty", Value: "", Negated: false}}},
		PAMSSHD:     []PAMRule{{File: "/etc/pam.d/sshd", Line: 4, Type: "auth", Control: "required", Module: "pam_google_authenticator.so", Args: []string{"nullok"}}},
		EtcWritable: []WritableFile{{Path: "/etc/gpuhost/shared", Mode: "drwxrwxr-x", GID: 1002, Group: "gpuhost-dev", GroupWritable: true, WorldWritable: false}},
	}
	f.TLS = &TLS{
		OpenSSL: &OpenSSL{ConfigPath: "/etc/ssl/openssl.cnf", MinProtocol: "TLSv1.3", MinProtocolFile: "/etc/ssl/openssl.cnf", MinProtocolLine: 14, MaxProtocol: "", CipherSuites: "TLS_AES_256_GCM_SHA384"},
		Nginx:   []NginxTLS{{File: "/etc/nginx/nginx.conf", Line: 36, Protocols: []string{"TLSv1.2", "TLSv1.3"}, Source: "process", PID: 1200}},
		Probes: []TLSProbe{{Address: "0.0.0.0:443", TLS13Accepted: true, WeakSuites: []string{}, Certificate: &TLSCertificate{
			Subject: "CN=node", Issuer: "CN=CA", NotBefore: "2026-11-01T00:00:00Z", NotAfter: "2027-01-31T00:00:00Z", AgeSeconds: 2592000, KeyType: "EC", KeyBits: 256,
			SignatureAlgorithm: "ECDSA-SHA256", SANs: []string{"node"},
		}, Chain: []TLSChainCert{{
			Depth: 0, Subject: "CN=node", Issuer: "CN=CA", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			NotBefore: "2026-11-01T00:00:00Z", NotAfter: "2027-01-31T00:00:00Z", AgeSeconds: 2592000, SecondsLeft: 5270400, KeyType: "EC", KeyBits: 256,
			SignatureAlgorithm: "ECDSA-SHA256", KeyUsage: []string{"digitalSignature"}, ExtKeyUsage: []string{"serverAuth"}, Link: "bad_signature",
			LinkError: "x509: ECDSA verification failure",
		}}, Verification: &TLSVerification{Store: "/etc/ssl/certs/ca-certificates.crt", StoreError: "", Verified: false,
			Error: "x509: certificate signed by unknown authority"},
			Error: "tls1.2: timed out: connected, but no ServerHello within 2s"}, {
			Address: "0.0.0.0:25", StartTLS: "smtp", TLS12Accepted: true, WeakSuites: []string{}, Connections: 12,
		}, {
			Address: "127.0.0.1:7000", Loopback: true, Unreachable: true, WeakSuites: []string{}, Connections: 1,
			Error: "filtered: the TCP connect got no answer within 2s",
		}},
	}
	sshSettings := SSHSettings{
		ConfigPath: "/etc/ssh/sshd_config", Files: []string{"/etc/ssh/sshd_config"},
		PermitRootLogin: "no", PasswordAuthentication: "no", KbdInteractiveAuthentication: "no", PermitEmptyPasswords: "no",
		Ciphers: []string{"aes256-gcm@openssh.com"}, KexAlgorithms: []string{"curve25519-sha256"}, MACs: []string{"hmac-sha2-512-etm@openssh.com"},
		HostKeyAlgorithms: []string{"ssh-ed25519"},
		UsePAM:            "yes", AuthenticationMethods: []string{"publickey"}, AllowGroups: []string{"gpuhost-admin"},
		DenyGroups: []string{}, AllowUsers: []string{}, DenyUsers: []string{"guest"},
		Explicit: []string{"permitrootlogin"}, Locations: map[string]collect.FileLine{"permitrootlogin": {File: "/etc/ssh/sshd_config", Line: 32}},
		Match: []SSHMatch{{File: "/etc/ssh/sshd_config", Line: 40, Criteria: "User backup", Settings: []SSHSetting{
			{Keyword: "passwordauthentication", Value: "yes", File: "/etc/ssh/sshd_config", Line: 41},
		}}},
		HostKeys: []SSHHostKey{
			{Type: "ssh-rsa", Bits: 2048, Fingerprint: "SHA256:abc", Source: "wire", Address: "0.0.0.0:22"},
			{Type: "ssh-ed25519", Bits: 256, Source: "file", File: "/etc/ssh/ssh_host_ed25519_key", Error: "reading host key: not found"},
		},
	}
	f.SSH = &SSH{SSHSettings: sshSettings, Source: "file", Daemons: []SSHDaemon{{
		SSHSettings: sshSettings, PID: 812, Source: "process", Listen: []string{"0.0.0.0:22"},
		Wire: []SSHWire{{
			Address: "0.0.0.0:22", Source: "wire", Version: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3",
			KexAlgorithms: []string{"curve25519-sha256"}, HostKeyAlgorithms: []string{"rsa-sha2-512"},
			Ciphers: []string{"aes256-gcm@openssh.com"}, MACs: []string{"hmac-sha2-512-etm@openssh.com"}, Error: "",
		}},
	}}}
	f.Encryption = &Encryption{
		Crypttab: []CrypttabEntry{{Name: "cryptroot", Device: "UUID=1234", KeyFile: "none", Options: []string{"luks", "discard"}}},
		Root: &RootEncryption{Encrypted: true, Source: "dm", Device: "/dev/dm-0", Chain: []string{"dm-0", "nvme0n1p3"}, Hops: []Hop{
			{Device: "dm-0", Kind: "crypt", Name: "cryptroot", Learned: "sysfs", Depth: 0,
				Crypt: &CryptParams{Type: "luks2", Cipher: "aes-xts-plain64", KeyBits: 512, Source: "kernel",
					Tokens:        []LUKSToken{{ID: "0", Type: "systemd-tpm2", Keyslots: []string{"1"}, TPM2PCRs: []int{7}, TPM2PubkeyPCRs: []int{11}, Error: ""}},
					FirstBootTPM2: &TPM2Enrolment{File: "/etc/gpuhost/luks-enroll.conf", PCRs: []int{7}, Error: ""}}},
			{Device: "nvme0n1p3", Kind: "partition", Learned: "sysfs", Depth: 1},
		}},
		Swap: []Swap{{Device: "/dev/zram0", Encrypted: false, Kind: "zram"}},
	}
	f.Network = &Network{
		Listening: []Listener{{Proto: "tcp", Address: "0.0.0.0", Port: 22, Process: "sshd", PID: 812}},
		Firewall: &Firewall{Backend: "nftables", Enabled: true, DefaultInputPolicy: "drop", AllowedPorts: []int{22, 443}, Source: "kernel",
			Unit:      &UnitState{Name: "nftables.service", State: "active"},
			Admits:    []FirewallAdmit{{Proto: "tcp", From: 22, To: 22, Rule: "inet filter input handle 4: tcp dport @allowed accept"}, {Proto: "tcp", From: 443, To: 443, Rule: "inet filter input handle 4: tcp dport @allowed accept"}},
			Unmodeled: []FirewallRule{{Rule: "inet filter input handle 7: ip saddr 10.0.0.0/8 drop", Reason: "cannot evaluate ip saddr", MayAccept: false}}},
	}
	f.Systemd = &Systemd{Enabled: []string{"nvidia-persistenced.service"}, Masked: []string{"unattended-upgrades.service"}, Version: 249}
	f.ContainerRuntime = &ContainerRuntime{
		Containerd: &Containerd{
			ConfigPath: "/etc/containerd/config.toml", ConfigVersion: 2, Imports: []string{"/etc/containerd/conf.d/99-nvidia.toml"},
			NvidiaRuntime: true, NvidiaBinary: "/usr/bin/nvidia-container-runtime", DefaultRuntime: "nvidia",
			SystemdCgroup: ptr(true), NvidiaSystemdCgroup: ptr(false), CDIEnabled: true,
		},
		Docker: &Docker{ConfigPath: "/etc/docker/daemon.json", DefaultRuntime: "nvidia", Runtimes: []string{"nvidia"}, CgroupDriver: "systemd", CDIEnabled: true,
			Locations: map[string]collect.FileLine{"cgroup_driver": {File: "/etc/docker/daemon.json", Line: 3}}},
		CDISpecs: []CDISpec{{File: "/etc/cdi/nvidia.yaml", Kind: "nvidia.com/gpu", Devices: []string{"0", "all"}}},
	}
	f.GPU = &GPU{
		Available: true, Reason: "", DriverVersion: "535.161.08", CUDADriverVersion: "12.2", NVMLVersion: "12.535.161.08", KernelModuleVersion: "535.161.08",
		Devices: []GPUDevice{{
			Index: 0, UUID: "GPU-0000", Name: "NVIDIA A100-SXM4-80GB", PCIBusID: "00000000:07:00.0",
			ECC:                  &ECC{Current: true, Pending: true, UncorrectedVolatile: 0, UncorrectedAggregate: 1},
			RetiredPages:         &RetiredPages{Pending: false, Count: 0},
			RemappedRows:         &RemappedRows{Correctable: 1, Uncorrectable: 0, Pending: false, Failed: false},
			PersistenceMode:      ptr(true),
			MIG:                  &MIG{Current: false, Pending: false},
			TemperatureC:         ptr(-3),
			PCIe:                 &PCIe{GenCurrent: 4, GenMax: 4, WidthCurrent: 16, WidthMax: 16},
			NVLink:               []NVLink{{Link: 0, Active: true}},
			Unsupported:          []string{"retired_pages"},
			TemperatureSlowdownC: ptr(90), PowerW: ptr(61.5), PowerLimitW: ptr(400.0),
			ThrottleReasons: []string{"gpu_idle"}, VBIOSVersion: "92.00.45.00.03", InfoROMValid: ptr(true), Architecture: "ampere", MinDriverBranch: 450,
			OpenModuleSupported: ptr(true), OpenModuleRequired: false, Errors: []string{"power: NVML call GetPowerUsage timed out after 5s"},
		}},
		KernelModuleType: "proprietary", DriverBranch: 535, DriverMismatch: false, Unsupported: []string{"conf_compute"},
		XIDSource: "/var/log/kern.log", XIDError: "",
		ConfCompute: &ConfCompute{Feature: "off", DevtoolsMode: "off", Environment: "production"},
		XIDEvents:   []XIDEvent{{Code: 79, PCIBusID: "0000:07:00.0", Time: "2025-03-01T11:00:00Z", Message: "GPU has fallen off the bus."}},
		Validation: &GPUValidation{
			GPUs: []ValidationGPU{{Index: 0, UUID: "GPU-0000", Name: "NVIDIA A100-SXM4-80GB"}},
			Steps: []ValidationStep{
				{Name: "driver", Status: ValidationPassed, Required: true, Reason: "kernel module 535.161.08 and libnvidia-ml 535.161.08 agree"},
				{Name: "fabric", Status: ValidationFailed, Required: true, Reason: "fabric registration is not complete on 1 of 1 GPUs",
					GPUs: []ValidationGPUResult{{Index: 0, UUID: "GPU-0000", Status: ValidationFailed, Detail: "fabric registration in progress"}}},
			},
		},
	}
	f.GPUDriver = &GPUDriver{
		Packages: []Package{{Name: "nvidia-driver-535-server", Version: "535.161.08-0ubuntu2", Arch: "amd64", Held: true}},
		Version:  "535.161.08", Branch: 535, Flavor: "proprietary",
		Modules:            map[string][]string{"5.15.0-105-generic": {"/lib/modules/5.15.0-105-generic/updates/dkms/nvidia.ko"}},
		NouveauBlacklisted: true, NouveauSource: "/etc/modprobe.d/blacklist-nouveau.conf",
		PersistencedEnabled: true, FabricManagerEnabled: false,
		CUDAToolkitVersion: "12.2", CUDAToolkitSource: "cuda-toolkit-12-2", MaxCUDA: "12.2",
	}
	f.Containers = &Containers{Images: []ContainerImage{{Ref: "nvcr.io/nvidia/pytorch:24.01-py3", Digest: "sha256:abc", Source: "/var/lib/containerd"}}}
	f.Manifest = map[string]any{"schema": "gpuhost.manifest/v1", "pins": map[string]any{"driver": "535.161.08"}}
	f.ConfigFiles = []ConfigFile{{Path: "/etc/ssh/sshd_config", SHA256: "0f343b0931126a20f133d67c2b018a3b5e52b7f3ff1a5c4e5b3c2e5d0f6a7b8c"}}
	numa := 0
	f.PCI = &PCI{Devices: []PCIDevice{{Address: "0000:07:00.0", Vendor: "0x10de", Device: "0x20b2", Class: "0x030200", GPU: true, Driver: "nvidia", NUMANode: &numa, AER: &AER{Correctable: 4}}}}
	downed := int64(0)
	f.InfiniBand = &InfiniBand{Ports: []IBPort{{Device: "mlx5_0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand", LinkDowned: &downed}}, PeerMem: true}
	f.Vulnerabilities = &Vulnerabilities{DB: "trivy-db 2025-03-01", Findings: []Finding{{ID: "CVE-2024-0001", Package: "openssl", Installed: "3.0.2-0ubuntu1.14", Fixed: "3.0.2-0ubuntu1.15", Severity: "HIGH", Published: "2024-01-09T17:15:00Z"}},
		Images: []ImageVulnerabilities{{Ref: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", Digest: "sha256:" + strings.Repeat("ab", 32), OS: "ubuntu 22.04",
			Findings: []Finding{{ID: "CVE-2024-0002", Package: "libc6", Installed: "2.35-0ubuntu3.6", Fixed: "2.35-0ubuntu3.7", Severity: "CRITICAL"}}, Error: "a layer does not hash to its digest"}},
		ImagesError: "the containers collector is error"}
	f.SecureBoot = &SecureBoot{
		ESP: "/boot/efi", ESPError: "",
		BootFiles: []BootFile{{Path: "/boot/efi/EFI/debian/shimx64.efi", Role: RoleShim, Size: 952768, Signatures: []Authenticode{{
			Signer: "CN=Microsoft Windows UEFI Driver Publisher", Issuer: "CN=Microsoft Corporation UEFI CA 2011", Serial: "3300000041",
			DigestAlgorithm: "sha256", DigestMatches: true, SignatureValid: true, Anchor: "db: CN=Microsoft Corporation UEFI CA 2011 (built in)", Error: "",
		}}, Error: ""}},
		Modules: []KernelModule{{Name: "nvidia", File: "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko.xz", Kernel: "6.1.0-28-amd64",
			Loaded: true, Taint: "POE", Signed: true, HashAlgorithm: "sha512", Signer: "DKMS module signing key", KeyID: "791ceb",
			VerifiedBy: "/var/lib/dkms/mok.pub", Error: ""}},
		ModulesError: "",
		TrustedKeys: []TrustedKey{{Source: "/var/lib/dkms/mok.pub", Enrolled: true, Subject: "CN=DKMS module signing key", Issuer: "CN=DKMS module signing key",
			Serial: "791ceb", SHA256: strings.Repeat("ab", 32), Error: ""}},
		BootAnchors: []TrustedKey{{Source: "built in", Enrolled: true, Subject: "CN=Microsoft Corporation UEFI CA 2011", Issuer: "CN=Microsoft Corporation Third Party Marketplace Root",
			Serial: "6108d3c4000000000004", SHA256: strings.Repeat("48", 32), Store: StoreDB, Error: ""}},
		Firmware: &Firmware{EFI: true, SecureBoot: ptr(true), SetupMode: ptr(false), Error: ""},
		Lockdown: &Lockdown{Mode: "integrity", Source: "/sys/kernel/security/lockdown", Error: ""},
	}
	f.Files = &Files{
		Benchmark: []BenchmarkFile{{Path: "/etc/shadow", Pattern: "/etc/shadow", Type: "regular", UID: 0, GID: 42, Owner: "root", Group: "shadow", Mode: "0640"},
			{Path: "/etc/cron.d", Pattern: "/etc/cron.d", Directory: true, Type: "missing"}},
		Patterns:   []string{"/etc/shadow", "/etc/cron.d"},
		Homes:      []HomeDir{{User: "alice", UID: 1000, GID: 1000, Path: "/home/alice", Type: "directory", IsDir: true, Mode: "0750"}},
		DotFiles:   []DotFile{{Path: "/home/alice/.bashrc", Home: "/home/alice", Type: "regular", UID: 1000, GID: 1000}},
		TrustFiles: []string{"/home/alice/.netrc"}, HomesIncomplete: "listing /home/bob: permission denied",
		Walk: FileWalk{Complete: false, Stopped: "stopped at its limit of 5000000 entries", StoppedAt: "/var/lib", Entries: 5000000, Limit: 5000000,
			Unread: []string{"/root: permission denied"}, Skipped: []SkippedMount{{Path: "/proc", FSType: "proc", Reason: "a pseudo filesystem"}},
			WorldWritableDirs: PathSample{Count: 1, Paths: []string{"/opt/drop"}}, WorldWritableFiles: PathSample{Count: 0, Paths: []string{}},
			Owners: []FileOwner{{UID: 0, Count: 12, Paths: []string{"/etc/passwd"}}}},
	}
	f.SBOM = &SBOM{Present: true, Path: "/var/lib/gpuhost/sbom.cdx.json", Format: "CycloneDX", SpecVersion: "1.6", Components: 412, SHA256: "0f343b0931126a20f133d67c2b018a3b5e52b7f3ff1a5c4e5b3c2e5d0f6a7b8c"}
	return f
}

func TestSchemaAcceptsFullDocument(t *testing.T) {
	f := fullFacts()
	if err := Validate(f); err != nil {
		t.Fatalf("full document: %v", err)
	}
	// The example must really fill every key, or this test proves little.
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range jsonKeys(reflect.TypeOf(Facts{})) {
		if _, ok := top[k]; !ok {
			t.Errorf("example document leaves out top-level key %q", k)
		}
	}
	if err := ValidateJSON(data); err != nil {
		t.Fatalf("ValidateJSON on the same document: %v", err)
	}
}

func TestSchemaAcceptsMinimalAndNilSlices(t *testing.T) {
	f := New(KindRootfs, "/mnt/root", time.Unix(0, 0))
	if err := Validate(f); err != nil {
		t.Fatalf("minimal document: %v", err)
	}
	// Collectors may leave slices nil; Go marshals those as null.
	f.Kernel = &Kernel{}
	f.TLS = &TLS{}
	f.SSH = &SSH{}
	f.Encryption = &Encryption{Root: &RootEncryption{}}
	f.Network = &Network{Firewall: &Firewall{}}
	f.Systemd = &Systemd{}
	f.ContainerRuntime = &ContainerRuntime{Containerd: &Containerd{}, Docker: &Docker{}}
	f.GPU = &GPU{Devices: []GPUDevice{{}}}
	f.Containers = &Containers{}
	f.Vulnerabilities = &Vulnerabilities{}
	if err := Validate(*f); err != nil {
		t.Fatalf("document with nil slices: %v", err)
	}
}

// TestSchemaCoversEveryField walks the Go types and the schema together:
// every JSON tag must be a property, every property a tag, and keys without
// omitempty must be required. This is what keeps the two from drifting.
func TestSchemaCoversEveryField(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	defs := s["$defs"].(map[string]any)
	resolve := func(node map[string]any) map[string]any {
		for i := 0; i < 5; i++ {
			ref, ok := node["$ref"].(string)
			if !ok {
				break
			}
			node = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		return node
	}
	var check func(path string, typ reflect.Type, node map[string]any, depth int)
	check = func(path string, typ reflect.Type, node map[string]any, depth int) {
		if depth > 10 {
			t.Fatalf("%s: types nest too deep", path)
		}
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
			if items, ok := node["items"].(map[string]any); ok {
				node = resolve(items)
			}
		}
		if typ.Kind() == reflect.Map {
			if ap, ok := node["additionalProperties"].(map[string]any); ok {
				check(path+"/*", typ.Elem(), resolve(ap), depth+1)
			}
			return
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		props, _ := node["properties"].(map[string]any)
		if node["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", path)
		}
		required := map[string]bool{}
		// A struct of optional fields only (ModuleConfig) requires none.
		reqs, _ := node["required"].([]any)
		for _, r := range reqs {
			required[r.(string)] = true
		}
		seen := map[string]bool{}
		for _, fld := range jsonFields(typ) {
			name, opts, _ := strings.Cut(fld.Tag.Get("json"), ",")
			seen[name] = true
			prop, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: schema has no property %q", path, name)
				continue
			}
			omit := strings.Contains(opts, "omitempty")
			if omit == required[name] {
				t.Errorf("%s/%s: omitempty=%v but required=%v", path, name, omit, required[name])
			}
			if name == "manifest" {
				continue
			}
			check(path+"/"+name, fld.Type, resolve(prop), depth+1)
		}
		for name := range props {
			if !seen[name] {
				t.Errorf("%s: schema property %q has no Go field", path, name)
			}
		}
	}
	check("", reflect.TypeOf(Facts{}), s, 0)
}

func jsonKeys(typ reflect.Type) []string {
	var out []string
	for _, fld := range jsonFields(typ) {
		name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// jsonFields lists a struct's fields as encoding/json sees them: those of
// an untagged embedded struct take its place.
func jsonFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < typ.NumField(); i++ {
		fld := typ.Field(i)
		if fld.Anonymous && fld.Tag.Get("json") == "" && fld.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(fld.Type)...)
			continue
		}
		out = append(out, fld)
	}
	return out
}

func TestSchemaRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{"wrong schema string", func(m map[string]any) { m["schema"] = "gpuhost.facts/v2" }, []string{"at /schema:"}},
		{"unknown top-level key", func(m map[string]any) { m["kernal"] = map[string]any{} }, []string{"at /:", "kernal"}},
		{"unknown nested key", func(m map[string]any) {
			m["ssh"].(map[string]any)["permit_root_logins"] = "no"
		}, []string{"at /ssh:", "permit_root_logins"}},
		{"string for boolean or null", func(m map[string]any) {
			m["container_runtime"].(map[string]any)["containerd"].(map[string]any)["systemd_cgroup"] = "true"
		}, []string{"at /container_runtime/containerd/systemd_cgroup:"}},
		{"string for integer", func(m map[string]any) {
			m["cgroup"].(map[string]any)["version"] = "2"
		}, []string{"at /cgroup/version:"}},
		{"fraction for integer", func(m map[string]any) {
			m["network"].(map[string]any)["listening"].([]any)[0].(map[string]any)["port"] = 22.5
		}, []string{"at /network/listening/0/port:"}},
		{"port out of range", func(m map[string]any) {
			m["network"].(map[string]any)["firewall"].(map[string]any)["allowed_ports"] = []any{70000}
		}, []string{"at /network/firewall/allowed_ports/0:"}},
		{"bad collector status", func(m map[string]any) {
			m["collectors"].(map[string]any)["os"] = map[string]any{"status": "fine"}
		}, []string{"at /collectors/os/status:"}},
		{"bad target kind", func(m map[string]any) {
			m["target"].(map[string]any)["kind"] = "vm"
		}, []string{"at /target/kind:"}},
		{"missing target", func(m map[string]any) { delete(m, "target") }, []string{"at /:", "target"}},
		{"missing collectors", func(m map[string]any) { delete(m, "collectors") }, []string{"at /:", "collectors"}},
		{"bad scanned_at", func(m map[string]any) {
			m["target"].(map[string]any)["scanned_at"] = "yesterday"
		}, []string{"at /target/scanned_at:"}},
		{"null where an object is due", func(m map[string]any) { m["gpu"] = nil }, []string{"at /gpu:"}},
		{"manifest not an object", func(m map[string]any) { m["manifest"] = "x" }, []string{"at /manifest:"}},
		{"missing non-optional field", func(m map[string]any) {
			delete(m["os"].(map[string]any), "id")
		}, []string{"at /os:", "id"}},
	}
	base, err := json.Marshal(fullFacts())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(base, &m); err != nil {
				t.Fatal(err)
			}
			tc.edit(m)
			err := Validate(m)
			if err == nil {
				t.Fatal("validated, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateReportsFewViolations(t *testing.T) {
	m := map[string]any{"schema": "nope", "target": map[string]any{}, "collectors": map[string]any{}}
	for i := 0; i < 20; i++ {
		m["extra"+string(rune('a'+i))] = i
	}
	err := Validate(m)
	if err == nil {
		t.Fatal("validated, want an error")
	}
	if n := strings.Count(err.Error(), "at /"); n > maxReported {
		t.Errorf("error names %d violations, want at most %d: %v", n, maxReported, err)
	}
}

func TestValidateJSONRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "{", "[]", "null", `{"schema":"gpuhost.facts/v1"} {}`} {
		if err := ValidateJSON([]byte(in)); err == nil {
			t.Errorf("ValidateJSON(%q) = nil, want an error", in)
		}
	}
}

// TestTestdataDocuments validates every checked-in example: good-*.json must
// pass and bad-*.json must fail.
func TestTestdataDocuments(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata documents")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		err = ValidateJSON(data)
		switch base := filepath.Base(file); {
		case strings.HasPrefix(base, "good-") && err != nil:
			t.Errorf("%s: %v", file, err)
		case strings.HasPrefix(base, "bad-") && err == nil:
			t.Errorf("%s: validated, want an error", file)
		}
	}
}

// TestExampleDocument keeps testdata/good-full.json, the example shown to
// people writing facts by hand, equal to fullFacts(); -update rewrites it.
func TestExampleDocument(t *testing.T) {
	want, err := json.MarshalIndent(fullFacts(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	file := filepath.Join("testdata", "good-full.json")
	if *update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is stale; run go test ./facts -update", file)
	}
}
