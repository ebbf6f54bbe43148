package facts

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
	Line    int      `json:"line,omitempty" jsonschema:"minimum=0"`
	// Absent says the device the entry names is not in the target: no
	// LUKS volume of a disk image answers to it, or a live host has no
	// such device. The entry then encrypts nothing, whatever it says.
	// Unknown (false) for a rootfs tree, which holds no devices.
	Absent bool `json:"absent,omitempty"`
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
	Line int    `json:"line,omitempty" jsonschema:"minimum=0"`
}

// Hop is one block device on the way from / down to a disk.
type Hop struct {
	// Device is the kernel name (dm-0, sda3) live, or the name the image's
	// files use (/dev/mapper/vg-root, UUID=...) offline.
	Device string `json:"device"`
	// Kind is lvm, crypt, verity, integrity, dm, raid, partition, disk,
	// loop, absent (a device a crypttab line names that the target does
	// not hold) or unknown.
	Kind string `json:"kind" jsonschema:"enum=lvm,enum=crypt,enum=verity,enum=integrity,enum=dm,enum=raid,enum=partition,enum=disk,enum=loop,enum=absent,enum=unknown"`
	// Name is the device-mapper name, the LVM vg/lv, or the crypttab name.
	Name string `json:"name,omitempty"`
	// Learned says where the hop was read: sysfs, fstab, crypttab,
	// lvm-metadata or luks-header.
	Learned string `json:"learned" jsonschema:"enum=sysfs,enum=fstab,enum=crypttab,enum=lvm-metadata,enum=luks-header"`
	// Depth is how many hops lie between this one and the device under /.
	Depth int `json:"depth" jsonschema:"minimum=0"`
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
	KeyBits int `json:"key_bits" jsonschema:"minimum=0"`
	// Hash is the passphrase hash of plain mode, where it is known.
	Hash string `json:"hash,omitempty"`
	// Source is kernel (the dm-crypt table), process (dmsetup) or file
	// (crypttab options, a LUKS header).
	Source string `json:"source" jsonschema:"enum=kernel,enum=process,enum=file"`
	// Error says why the cipher could not be read.
	Error string `json:"error,omitempty"`
	// Keyslots are a LUKS header's key slots, with what the empty
	// passphrase does to each; nil when no header was read.
	Keyslots []Keyslot `json:"keyslots,omitempty" factschema:"notnull"`
	// KeyslotsError says why the key slots of a header could not be read.
	KeyslotsError string `json:"keyslots_error,omitempty"`
	// VolumeKey is what a LUKS header tells of where the volume key came
	// from; nil when no header was read.
	VolumeKey *VolumeKey `json:"volume_key,omitempty"`
	// Tokens are a LUKS2 header's tokens, in the order of their ids.
	Tokens []LUKSToken `json:"tokens,omitempty" factschema:"notnull"`
	// FirstBootTPM2 is the TPM2 enrolment the image's first boot makes
	// for this volume, when it has one installed (offline only).
	FirstBootTPM2 *TPM2Enrolment `json:"first_boot_tpm2,omitempty"`
}

// LUKSToken is one token of a LUKS2 header: what unlocks key slots other
// than by passphrase (systemd-tpm2 for a key sealed to a TPM2).
type LUKSToken struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Keyslots []string `json:"keyslots"`
	// TPM2PCRs are the PCRs a systemd-tpm2 token's key is sealed to
	// (tpm2-pcrs), TPM2PubkeyPCRs those a signed policy binds
	// (tpm2_pubkey_pcrs).
	TPM2PCRs       []int `json:"tpm2_pcrs,omitempty" jsonschema:"minimum=0,maximum=23"`
	TPM2PubkeyPCRs []int `json:"tpm2_pubkey_pcrs,omitempty" jsonschema:"minimum=0,maximum=23"`
	// Error says why the token's fields could not be read.
	Error string `json:"error,omitempty"`
}

// TPM2Enrolment is a TPM2 enrolment an image has first boot make: the file
// that asks for it and the PCRs the key will be sealed to.
type TPM2Enrolment struct {
	File string `json:"file"`
	PCRs []int  `json:"pcrs" jsonschema:"minimum=0,maximum=23"`
	// Error says why the PCRs could not be read.
	Error string `json:"error,omitempty"`
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
	Origin string `json:"origin" jsonschema:"enum=image,enum=host,enum=unknown"`
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
	// File and Line are the fstab line that sets the swap up (offline
	// only), so that a finding about it points there.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty" jsonschema:"minimum=1"`
}
