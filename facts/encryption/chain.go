package encryption

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// lvmBackupDir holds one metadata backup per volume group, written by
	// LVM after each change.
	lvmBackupDir = "/etc/lvm/backup"
	// maxLVMBackups bounds the volume groups read from it.
	maxLVMBackups = 256
	// maxLVMBackupSize bounds one backup file.
	maxLVMBackupSize = 1 << 20
)

// encryptingTypes maps the dm uuid prefixes of encrypting targets to the
// type recorded for them.
var encryptingTypes = map[string]string{
	"CRYPT-LUKS1-": "luks1", "CRYPT-LUKS2-": "luks2", "CRYPT-PLAIN-": "plain",
	"CRYPT-BITLK-": "bitlk", "CRYPT-TCRYPT-": "tcrypt", "CRYPT-FVAULT2-": "fvault2",
}

// chain records a walk from / down to the disks.
type chain struct {
	names []string
	hops  []facts.Hop
	nodes int
}

func (c *chain) add(h facts.Hop) *facts.Hop {
	c.names = append(c.names, h.Device)
	c.hops = append(c.hops, h)
	return &c.hops[len(c.hops)-1]
}

// full tells whether the walk has met as many devices as it may.
func (c *chain) full(depth int) bool {
	c.nodes++
	return depth >= maxChainDepth || c.nodes > maxChainNodes
}

// offlineResolver follows a device name in an image's fstab through the
// LVM metadata backups and crypttab, as the initramfs would assemble it.
type offlineResolver struct {
	crypttab map[string]facts.CrypttabEntry
	vgs      map[string]lvmVG
	luks     []imageLUKS
	enroll   firstBootEnroll
	// image says the target is a disk image whose volumes luks lists: a
	// crypttab device none of them answers to is not there.
	image bool
}

// imageLUKS is a LUKS header found on a partition of a disk image.
type imageLUKS struct {
	Device              string
	PartUUID, PartLabel string
	Header              luksHeader
	// Keyslots and KeyslotsError are what trying the header's key slots
	// found (see luksHeader.keyslots).
	Keyslots      []facts.Keyslot
	KeyslotsError string
}

// imageLUKSHeaders reads the LUKS header of each of an image's partitions
// that has one. A partition that starts with the LUKS magic but whose header
// does not parse is an error: the root may lie on it.
func imageLUKSHeaders(devices []collect.BlockDevice, b *trialBudget) ([]imageLUKS, error) {
	var out []imageLUKS
	for _, d := range devices {
		h, err := readLUKSHeader(d.R, d.Size)
		if errors.Is(err, errNotLUKS) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the LUKS header of %s: %w", d.Name, err)
		}
		var p facts.CryptParams
		h.keyslots(d.R, d.Size, &p, b)
		out = append(out, imageLUKS{Device: d.Name, PartUUID: d.PartUUID, PartLabel: d.PartLabel, Header: h, Keyslots: p.Keyslots, KeyslotsError: p.KeyslotsError})
	}
	return out, nil
}

func newOfflineResolver(fsys sysroot.FS, ct []facts.CrypttabEntry, luks []imageLUKS, image bool) (*offlineResolver, error) {
	r := &offlineResolver{crypttab: map[string]facts.CrypttabEntry{}, luks: luks, image: image}
	for _, c := range ct {
		r.crypttab[c.Name] = c
	}
	vgs, err := readLVMBackups(fsys)
	if err != nil {
		return nil, err
	}
	r.vgs = vgs
	if r.enroll, err = readFirstBootEnroll(fsys); err != nil {
		return nil, err
	}
	return r, nil
}

// The gpuhost-rootfs builder's first-boot enrolment: a unit that seals a
// key to the host's TPM2 and wipes the image's one-time key slot, and the
// file that names the volume and the slot.
const (
	enrollConf = "/etc/gpuhost/luks-enroll.conf"
	enrollUnit = "/etc/systemd/system/multi-user.target.wants/gpuhost-luks-enroll.service"
)

// firstBootEnroll is the volume (by LUKS UUID) and key slot the image's
// first boot wipes, and whether it re-encrypts the volume first; zero when
// the image has no enrolment installed.
type firstBootEnroll struct {
	uuid, slot string
	reencrypt  bool
	// pcrs are the PCRs first boot seals the new key to; pcrsErr says
	// why TPM2_PCRS could not be read.
	pcrs    []int
	pcrsErr error
}

// readFirstBootEnroll reads the enrolment's file, which counts only when
// its unit is enabled: a file nothing acts on wipes nothing.
func readFirstBootEnroll(fsys sysroot.FS) (firstBootEnroll, error) {
	if _, err := fsys.Lstat(enrollUnit); err != nil {
		return firstBootEnroll{}, nil
	}
	data, ok, err := textfile.ReadOptional(fsys, enrollConf)
	if err != nil || !ok {
		return firstBootEnroll{}, err
	}
	var e firstBootEnroll
	for _, l := range textfile.Lines(data) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "LUKS_UUID":
			e.uuid = v
		case "PROVISION_SLOT":
			e.slot = v
		case "REENCRYPT":
			e.reencrypt = v == "1"
		case "TPM2_PCRS":
			e.pcrs, e.pcrsErr = parsePCRList(v)
		}
	}
	return e, nil
}

// markFirstBoot notes on each of slots that first boot wipes it, and on
// vk that first boot re-encrypts the volume.
func (e firstBootEnroll) markFirstBoot(uuid string, slots []facts.Keyslot, vk *facts.VolumeKey) {
	if e.uuid == "" || !strings.EqualFold(e.uuid, uuid) {
		return
	}
	for i := range slots {
		if slots[i].ID == e.slot {
			slots[i].FirstBoot = enrollConf
		}
	}
	if e.reencrypt {
		vk.FirstBoot = enrollConf
	}
}

// tpm2 is the TPM2 enrolment first boot makes for the volume uuid, nil
// when it makes none.
func (e firstBootEnroll) tpm2(uuid string) *facts.TPM2Enrolment {
	if e.uuid == "" || !strings.EqualFold(e.uuid, uuid) {
		return nil
	}
	t := &facts.TPM2Enrolment{File: enrollConf, PCRs: slices.Clone(e.pcrs)}
	if e.pcrsErr != nil {
		t.Error = fmt.Sprintf("TPM2_PCRS: %v", e.pcrsErr)
	}
	return t
}

// readLVMBackups reads every volume group's metadata backup. A backup that
// does not parse is an error: the root may lie on it.
func readLVMBackups(fsys sysroot.FS) (map[string]lvmVG, error) {
	vgs := map[string]lvmVG{}
	entries, err := fsys.ReadDir(lvmBackupDir)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return vgs, nil
		}
		return nil, fmt.Errorf("listing LVM metadata backups: %w", err)
	}
	if len(entries) > maxLVMBackups {
		return nil, fmt.Errorf("listing LVM metadata backups: more than %d in %s", maxLVMBackups, fsys.Display(lvmBackupDir))
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name := lvmBackupDir + "/" + e.Name()
		data, err := fsys.ReadFileLimit(name, maxLVMBackupSize)
		if err != nil {
			return nil, fmt.Errorf("reading LVM metadata: %w", err)
		}
		vg, err := parseLVMMetadata(data)
		if err != nil {
			return nil, fmt.Errorf("parsing LVM metadata %s: %w", fsys.Display(name), err)
		}
		vgs[vg.Name] = vg
	}
	return vgs, nil
}

var lvmUUIDLink = regexp.MustCompile(`^/dev/disk/by-id/dm-uuid-LVM-([0-9A-Za-z]{32})([0-9A-Za-z]{32})$`)

var cryptUUIDLink = regexp.MustCompile(`^/dev/disk/by-id/dm-uuid-(CRYPT-[A-Z0-9]+-)[0-9a-fA-F]+-(.+)$`)

// resolve walks from spec, a device name that learned came from, and tells
// whether every path down from it passes a crypt device.
func (r *offlineResolver) resolve(c *chain, spec, learned string, depth int) bool {
	if c.full(depth) {
		c.add(facts.Hop{Device: spec, Kind: "unknown", Learned: learned, Depth: depth})
		return false
	}
	if name, ok := mapperName(spec); ok {
		if ent, ok := r.crypttab[name]; ok {
			return r.cryptHop(c, spec, ent, depth)
		}
		if vg, lv, ok := splitLVMDMName(name); ok {
			if enc, ok := r.lvmHop(c, spec, vg, lv, depth); ok {
				return enc
			}
		}
		c.add(facts.Hop{Device: spec, Kind: "dm", Name: name, Learned: learned, Depth: depth})
		return false
	}
	if m := lvmUUIDLink.FindStringSubmatch(spec); m != nil {
		for _, vg := range r.vgs {
			if stripDashes(vg.ID) != m[1] {
				continue
			}
			for name, lv := range vg.LVs {
				if stripDashes(lv.ID) == m[2] {
					enc, _ := r.lvmHop(c, spec, vg.Name, name, depth)
					return enc
				}
			}
		}
	}
	if m := cryptUUIDLink.FindStringSubmatch(spec); m != nil {
		if ent, ok := r.crypttab[m[2]]; ok {
			return r.cryptHop(c, spec, ent, depth)
		}
		if typ, ok := encryptingTypes[m[1]]; ok {
			c.add(facts.Hop{Device: spec, Kind: "crypt", Name: m[2], Learned: learned, Depth: depth,
				Crypt: &facts.CryptParams{Type: typ, Source: "file", Error: "no crypttab entry or LUKS header names this mapping's cipher"}})
			return true
		}
	}
	if vg, lv, ok := devVGLV(spec); ok {
		if enc, ok := r.lvmHop(c, spec, vg, lv, depth); ok {
			return enc
		}
	}
	c.add(facts.Hop{Device: spec, Kind: leafKind(spec), Learned: learned, Depth: depth})
	return false
}

// cryptHop records a crypttab mapping and walks to the device it opens.
func (r *offlineResolver) cryptHop(c *chain, spec string, ent facts.CrypttabEntry, depth int) bool {
	h := c.add(facts.Hop{Device: spec, Kind: "crypt", Name: ent.Name, Learned: "crypttab", Depth: depth, Crypt: cryptFromCrypttab(ent)})
	if l, ok := r.headerFor(ent.Device); ok {
		// An image's volume is under the image's key, whatever its header
		// records: every host booted from it starts with that key.
		vk := facts.VolumeKey{Origin: facts.KeyFromImage, Reencrypting: l.Header.VolumeKey.Reencrypting}
		h.Crypt = &facts.CryptParams{Type: fmt.Sprintf("luks%d", l.Header.Version), Cipher: l.Header.Cipher, KeyBits: l.Header.KeyBits, Source: "file",
			Keyslots: slices.Clone(l.Keyslots), KeyslotsError: l.KeyslotsError, VolumeKey: &vk, Tokens: slices.Clone(l.Header.Tokens)}
		r.enroll.markFirstBoot(l.Header.UUID, h.Crypt.Keyslots, &vk)
		r.firstBootTPM2(h.Crypt, l.Header.UUID)
		c.add(facts.Hop{Device: ent.Device, Kind: "partition", Name: l.Device, Learned: "luks-header", Depth: depth + 1})
		return true
	}
	if r.image {
		// A disk image holds its volumes: a crypttab line naming none of
		// them opens nothing at boot, and / is not on it.
		h.Crypt.Error = "the image holds no LUKS volume that answers to " + ent.Device
		c.add(facts.Hop{Device: ent.Device, Kind: "absent", Learned: "crypttab", Depth: depth + 1})
		return false
	}
	// A tree holds no header; its crypttab names the volume by UUID.
	if u, ok := strings.CutPrefix(ent.Device, "UUID="); ok {
		r.firstBootTPM2(h.Crypt, u)
	}
	// The walk goes on below for the record; the mapping encrypts whatever
	// it lies on.
	r.resolve(c, ent.Device, "crypttab", depth+1)
	return true
}

// firstBootTPM2 notes on cp the TPM2 enrolment first boot makes for the
// volume uuid.
func (r *offlineResolver) firstBootTPM2(cp *facts.CryptParams, uuid string) {
	cp.FirstBootTPM2 = r.enroll.tpm2(uuid)
}

// markAbsent sets Absent on each crypttab entry of an image that no LUKS
// volume of the image answers to.
func (r *offlineResolver) markAbsent(ct []facts.CrypttabEntry) {
	if !r.image {
		return
	}
	for i := range ct {
		if _, ok := r.headerFor(ct[i].Device); !ok {
			ct[i].Absent = true
		}
	}
}

// headerFor finds the LUKS header a crypttab device names: by the UUID in
// the header, or by the partition table's GUID or name.
func (r *offlineResolver) headerFor(dev string) (imageLUKS, bool) {
	for _, l := range r.luks {
		for _, id := range []struct{ prefix, value string }{
			{"UUID=", l.Header.UUID}, {"/dev/disk/by-uuid/", l.Header.UUID},
			{"PARTUUID=", l.PartUUID}, {"/dev/disk/by-partuuid/", l.PartUUID},
			{"PARTLABEL=", l.PartLabel}, {"/dev/disk/by-partlabel/", l.PartLabel},
		} {
			if v, ok := strings.CutPrefix(dev, id.prefix); ok && v != "" && strings.EqualFold(v, id.value) {
				return l, true
			}
		}
	}
	return imageLUKS{}, false
}

// lvmHop records vg/lv and walks to every PV and sub-LV it lies on; ok is
// false when no backup describes it.
func (r *offlineResolver) lvmHop(c *chain, spec, vgName, lvName string, depth int) (enc, ok bool) {
	vg, found := r.vgs[vgName]
	if !found {
		return false, false
	}
	lv, found := vg.LVs[lvName]
	if !found {
		return false, false
	}
	c.add(facts.Hop{Device: spec, Kind: "lvm", Name: vgName + "/" + lvName, Learned: "lvm-metadata", Depth: depth})
	all := true
	for _, k := range lv.PVs {
		dev := vg.PVs[k].Device
		if dev == "" {
			c.add(facts.Hop{Device: k, Kind: "unknown", Learned: "lvm-metadata", Depth: depth + 1})
			all = false
			continue
		}
		if !r.resolve(c, dev, "lvm-metadata", depth+1) {
			all = false
		}
	}
	for _, sub := range lv.On {
		if c.full(depth + 1) {
			return false, true
		}
		if enc, ok := r.lvmHop(c, "/dev/"+vgName+"/"+sub, vgName, sub, depth+1); !ok || !enc {
			all = false
		}
	}
	return all, true
}

// mapperName returns NAME for /dev/mapper/NAME and its by-id link.
func mapperName(spec string) (string, bool) {
	for _, pre := range []string{"/dev/mapper/", "/dev/disk/by-id/dm-name-"} {
		if name, ok := strings.CutPrefix(spec, pre); ok && validDevName(name) {
			return name, true
		}
	}
	return "", false
}

// devVGLV reads /dev/VG/LV, the link LVM makes for each LV.
func devVGLV(spec string) (string, string, bool) {
	rest, ok := strings.CutPrefix(spec, "/dev/")
	if !ok {
		return "", "", false
	}
	vg, lv, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(lv, "/") || vg == "disk" || vg == "mapper" {
		return "", "", false
	}
	return vg, lv, validDevName(vg) && validDevName(lv)
}

var partitionName = regexp.MustCompile(`^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+)[0-9]+$|^(nvme[0-9]+n[0-9]+|mmcblk[0-9]+|loop[0-9]+)p[0-9]+$`)

// leafKind guesses what a device name that leads no further names.
func leafKind(spec string) string {
	switch {
	case strings.HasPrefix(spec, "PARTUUID="), strings.HasPrefix(spec, "PARTLABEL="),
		strings.HasPrefix(spec, "/dev/disk/by-partuuid/"), strings.HasPrefix(spec, "/dev/disk/by-partlabel/"):
		return "partition"
	case strings.HasPrefix(spec, "/dev/md"):
		return "raid"
	case strings.HasPrefix(spec, "/dev/loop"):
		return "loop"
	case strings.HasPrefix(spec, "/dev/"):
		if partitionName.MatchString(path.Base(spec)) {
			return "partition"
		}
		return "disk"
	}
	return "unknown"
}

func stripDashes(s string) string { return strings.ReplaceAll(s, "-", "") }
