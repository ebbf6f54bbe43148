package facts

// SecureBoot is the boot chain as Secure Boot sees it: the EFI binaries on
// the EFI system partition and the kernels with their Authenticode
// signatures, the out-of-tree kernel modules with their appended
// signatures and the keys they are judged against, and on a live host what
// the firmware and the kernel enforce. An image and the host booted from
// it fill the same fields, save Firmware and Lockdown, which only a
// running host has.
type SecureBoot struct {
	// ESP names the EFI system partitions that were read: /boot/efi in a
	// tree or on a host; a disk image's partitions of the ESP type
	// ("partition 1", or "partition 1, partition 3" where it has two);
	// "" when the target has none.
	ESP string `json:"esp"`
	// ESPError says why the partition could not be read.
	ESPError string `json:"esp_error,omitempty"`
	// BootFiles are the EFI binaries under the partition's /EFI and the
	// kernels /boot/vmlinuz-*.
	BootFiles []BootFile `json:"boot_files"`
	// Modules are the out-of-tree kernel modules: offline those under
	// /lib/modules/*/{updates,extra,dkms}, live the loaded ones the kernel
	// marks out-of-tree.
	Modules []KernelModule `json:"modules"`
	// ModulesError says why the modules could not all be listed.
	ModulesError string `json:"modules_error,omitempty"`
	// TrustedKeys are the certificates a module's signature is checked
	// against: the image's DKMS certificate, and on a live host the
	// Machine Owner Keys shim hands the kernel (MokListRT).
	TrustedKeys []TrustedKey `json:"trusted_keys"`
	// BootAnchors are the certificates the boot files' signatures are held
	// to, each with its store: db, the firmware's (live, from its
	// variable; offline, or where the variable cannot be read, the
	// Microsoft UEFI CAs that PC firmware ships in db); shim, the vendor
	// certificates of the shims db lets the firmware load; mok, the
	// enrolled Machine Owner Keys. Absent from documents collected before
	// signatures were held to anchors.
	BootAnchors []TrustedKey `json:"boot_anchors,omitempty"`
	// Firmware is what the EFI variables say (live only).
	Firmware *Firmware `json:"firmware,omitempty"`
	// Lockdown is the kernel's lockdown mode (live only).
	Lockdown *Lockdown `json:"lockdown,omitempty"`
}

// Roles of a boot file (BootFile.Role).
const (
	RoleShim       = "shim"
	RoleGRUB       = "grub"
	RoleMokManager = "mok-manager"
	RoleFallback   = "fallback"
	RoleEFI        = "efi"
	RoleKernel     = "kernel"
)

// Stores of a boot anchor (TrustedKey.Store).
const (
	StoreDB   = "db"
	StoreShim = "shim"
	StoreMOK  = "mok"
)

// BootFile is one EFI binary or kernel and the signatures it carries.
type BootFile struct {
	// Path names the file as the target holds it: /boot/efi/EFI/BOOT/BOOTX64.EFI,
	// partition 2:/EFI/BOOT/BOOTX64.EFI, /boot/vmlinuz-6.1.0-28-amd64.
	Path string `json:"path"`
	// Role is shim, grub, mok-manager, fallback, efi (another EFI binary)
	// or kernel, from the file's name and, for the removable-media path
	// EFI/BOOT/BOOTX64.EFI, its sections.
	Role string `json:"role" jsonschema:"enum=shim,enum=grub,enum=mok-manager,enum=fallback,enum=efi,enum=kernel"`
	Size int64  `json:"size" jsonschema:"minimum=0"`
	// Signatures are the Authenticode signatures in the file's
	// certificate table; none for an unsigned file.
	Signatures []Authenticode `json:"signatures"`
	// Error says why the file could not be read as a PE image.
	Error string `json:"error,omitempty"`
}

// Authenticode is one signature of a PE image (a WIN_CERTIFICATE of type
// PKCS_SIGNED_DATA).
type Authenticode struct {
	// Signer and Issuer are the distinguished names of the signing
	// certificate, Serial its serial number in hex.
	Signer string `json:"signer"`
	Issuer string `json:"issuer"`
	Serial string `json:"serial"`
	// DigestAlgorithm is the hash of the signed image digest (sha256).
	DigestAlgorithm string `json:"digest_algorithm"`
	// DigestMatches is true when the file's Authenticode digest (the image
	// without its checksum, its certificate table entry and the table) is
	// the digest the signature covers.
	DigestMatches bool `json:"digest_matches"`
	// SignatureValid is true when the signer's signature over the signed
	// data verifies with the certificate the signature carries.
	SignatureValid bool `json:"signature_valid"`
	// Anchor names the trust anchor the signer's certificate chain
	// verifies to, as "store: subject (source)", for a valid signature
	// over the file; "" when its chain reaches none of the anchors its
	// loader holds it to (the firmware holds shim to db; shim holds what
	// it loads to db, its vendor certificate and the MOK list).
	Anchor string `json:"anchor,omitempty"`
	// Error says why the signature could not be checked.
	Error string `json:"error,omitempty"`
}

// KernelModule is an out-of-tree kernel module and its appended signature.
type KernelModule struct {
	// Name is the module's name as the kernel knows it (nvidia_uvm).
	Name string `json:"name"`
	// File is the module file, "" when a loaded module's file was not
	// found.
	File string `json:"file"`
	// Kernel is the release the module belongs to.
	Kernel string `json:"kernel"`
	// Loaded is true for a module the running kernel holds (live only).
	Loaded bool `json:"loaded,omitempty"`
	// Taint is the kernel's taint letters for a loaded module: O out of
	// tree, E loaded without a signature it could verify, P proprietary.
	Taint string `json:"taint,omitempty"`
	// Signed is true when the file carries an appended module signature.
	Signed bool `json:"signed"`
	// HashAlgorithm, Signer and KeyID are what the signature names: the
	// digest, the issuer of the signing certificate and its serial number
	// (or subject key identifier) in hex, as modinfo shows them.
	HashAlgorithm string `json:"hash_algorithm,omitempty"`
	Signer        string `json:"signer,omitempty"`
	KeyID         string `json:"key_id,omitempty"`
	// VerifiedBy is the source of the trusted key whose certificate the
	// signature verifies with; "" when none does.
	VerifiedBy string `json:"verified_by,omitempty"`
	// Error says why the signature could not be read or does not verify.
	Error string `json:"error,omitempty"`
}

// TrustedKey is a certificate signatures are judged against: a module's
// (SecureBoot.TrustedKeys) or a boot file's (SecureBoot.BootAnchors).
type TrustedKey struct {
	// Source is where it was read: a file (/var/lib/dkms/mok.pub) or an
	// EFI variable (MokListRT).
	Source string `json:"source"`
	// Enrolled is true for a key the firmware's shim hands the kernel
	// (live), or, offline, the key the image names for enrolment: its
	// DKMS certificate, since nothing else records one.
	Enrolled bool   `json:"enrolled"`
	Subject  string `json:"subject,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	Serial   string `json:"serial,omitempty"`
	// SHA256 is the fingerprint of the certificate's DER.
	SHA256 string `json:"sha256,omitempty" jsonschema:"pattern=^[0-9a-f]{64}$"`
	// Store is where a boot anchor trusts: db, shim or mok
	// (SecureBoot.BootAnchors only).
	Store string `json:"store,omitempty" jsonschema:"enum=db,enum=shim,enum=mok"`
	// Error says why the source gave no certificate.
	Error string `json:"error,omitempty"`
}

// Firmware is what a live host's EFI variables say about Secure Boot.
type Firmware struct {
	// EFI is true when the host booted through UEFI (/sys/firmware/efi).
	EFI bool `json:"efi"`
	// SecureBoot and SetupMode are the variables' values; nil when they
	// could not be read.
	SecureBoot *bool `json:"secure_boot,omitempty"`
	SetupMode  *bool `json:"setup_mode,omitempty"`
	// Error says why a variable could not be read.
	Error string `json:"error,omitempty"`
}

// Lockdown is the kernel's lockdown mode on a live host.
type Lockdown struct {
	// Mode is none, integrity or confidentiality; "" when unknown.
	Mode   string `json:"mode" jsonschema:"enum=,enum=none,enum=integrity,enum=confidentiality"`
	Source string `json:"source"`
	// Error says why the mode could not be read.
	Error string `json:"error,omitempty"`
}
