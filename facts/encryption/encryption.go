// Package encryption collects the encryption facts: crypttab, the chain of
// devices under the root filesystem and each swap, followed through LVM
// and device-mapper to a dm-crypt target, and its cipher from the kernel's
// table on a live host or the LUKS header of a disk image's partition.
package encryption

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/mounttab"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxChainDepth bounds the walk down device-mapper slaves.
	maxChainDepth = 16
	// maxChainNodes bounds the devices visited in one walk (a RAID of many
	// members can fan out).
	maxChainNodes = 256
)

// Collect reads crypttab, the root's and the swap's way down to their
// disks, and the LUKS headers they pass through: on a live host through
// the kernel's device-mapper tables, in an image or a tree through fstab
// and the partitions it is given. It reads the target alone, needing no
// other collector's facts.
func Collect(ctx context.Context, env *collect.Env) (*facts.Encryption, error) {
	fsys := env.FS
	trials := newTrialBudget(ctx, env.Budget)
	e := &facts.Encryption{Crypttab: []facts.CrypttabEntry{}, Swap: []facts.Swap{}}
	if data, ok, err := textfile.ReadOptional(fsys, "/etc/crypttab"); err != nil {
		return nil, fmt.Errorf("reading crypttab: %w", err)
	} else if ok {
		ct, err := parseCrypttab(data)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", fsys.Display("/etc/crypttab"), err)
		}
		for i := range ct {
			ct[i].File = "/etc/crypttab"
		}
		e.Crypttab = ct
	}
	if env.Live {
		if err := liveEncryption(fsys, e, trials); err != nil {
			return nil, err
		}
		markAbsentLive(fsys, e.Crypttab)
	} else {
		luks, err := imageLUKSHeaders(env.Devices, trials)
		if err != nil {
			return nil, err
		}
		if err := offlineEncryption(fsys, e, luks, env.Devices != nil); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// parseCrypttab reads crypttab(5): name, device, optional key file and
// comma-separated options per line.
func parseCrypttab(data []byte) ([]facts.CrypttabEntry, error) {
	rows, err := mounttab.Rows(data, 2, 4)
	if err != nil {
		return nil, err
	}
	out := make([]facts.CrypttabEntry, 0, len(rows))
	for _, row := range rows {
		fields := row.Fields
		ent := facts.CrypttabEntry{Name: fields[0], Device: fields[1], Options: []string{}, Line: row.Line}
		if len(fields) > 2 {
			ent.KeyFile = fields[2]
		}
		if len(fields) > 3 {
			for _, o := range strings.Split(fields[3], ",") {
				if o != "" {
					ent.Options = append(ent.Options, o)
				}
			}
		}
		out = append(out, ent)
	}
	return out, nil
}

// offlineEncryption follows swap and / from fstab through the LVM metadata
// backups and crypttab, reading the cipher from crypttab options or from a
// LUKS header the image carries: an image has no active mappings, only what
// its files set up.
func offlineEncryption(fsys sysroot.FS, e *facts.Encryption, luks []imageLUKS, image bool) error {
	data, ok, err := textfile.ReadOptional(fsys, "/etc/fstab")
	if err != nil {
		return fmt.Errorf("reading fstab: %w", err)
	}
	if !ok {
		return nil
	}
	entries, err := mounttab.ParseFstab(data)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", fsys.Display("/etc/fstab"), err)
	}
	r, err := newOfflineResolver(fsys, e.Crypttab, luks, image)
	if err != nil {
		return err
	}
	r.markAbsent(e.Crypttab)
	var mounts []mounttab.Mount
	for _, ent := range entries {
		if ent.Type != "swap" {
			mounts = append(mounts, mounttab.Mount{Point: ent.File, Source: ent.Spec})
		}
	}
	for _, ent := range entries {
		switch {
		case ent.Type == "swap":
			spec := ent.Spec
			// A swap file lies on whatever device holds its directory.
			if m, ok := mounttab.For(mounts, spec); ok && strings.HasPrefix(spec, "/") && !strings.HasPrefix(spec, "/dev/") {
				spec = m.Source
			}
			c := &chain{}
			enc := r.resolve(c, spec, "fstab", 0)
			e.Swap = append(e.Swap, facts.Swap{Device: ent.Spec, Encrypted: enc, Kind: "fstab", Hops: c.hops,
				File: "/etc/fstab", Line: ent.Line})
		case ent.File == "/":
			c := &chain{}
			enc := r.resolve(c, ent.Spec, "fstab", 0)
			e.Root = &facts.RootEncryption{Encrypted: enc, Source: "fstab", Device: ent.Spec, Chain: c.names, Hops: c.hops,
				File: "/etc/fstab", Line: ent.Line}
		}
	}
	return nil
}

func liveEncryption(fsys sysroot.FS, e *facts.Encryption, trials *trialBudget) error {
	const mi = "/proc/self/mountinfo"
	data, err := fsys.ReadFile(mi)
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	mounts, err := mounttab.ParseMountinfo(data)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", fsys.Display(mi), err)
	}
	if m, ok := mounttab.For(mounts, "/"); ok {
		c, enc := devChain(fsys, m.MajMin, m.Source, trials)
		e.Root = &facts.RootEncryption{Encrypted: enc, Source: "dm", Device: m.Source, Chain: c.names, Hops: c.hops}
	}

	const sw = "/proc/swaps"
	data, ok, err := textfile.ReadOptional(fsys, sw)
	if err != nil {
		return fmt.Errorf("reading swaps: %w", err)
	}
	if !ok {
		return nil
	}
	for i, l := range textfile.Lines(data) {
		fields := strings.Fields(l)
		if i == 0 && len(fields) > 0 && fields[0] == "Filename" {
			continue
		}
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return fmt.Errorf("parsing %s: line %d: malformed", fsys.Display(sw), i+1)
		}
		if len(e.Swap) >= mounttab.MaxEntries {
			return fmt.Errorf("parsing %s: line %d: more than %d entries", fsys.Display(sw), i+1, mounttab.MaxEntries)
		}
		dev := mounttab.Unescape(fields[0])
		s := facts.Swap{Device: dev, Kind: fields[1]}
		switch {
		case strings.HasPrefix(dev, "/dev/zram"):
			// zram is compressed RAM: nothing reaches a disk, so it needs no
			// encryption; policy tells it apart by Kind.
			s.Kind = "zram"
		case s.Kind == "file":
			if m, ok := mounttab.For(mounts, dev); ok {
				var c *chain
				c, s.Encrypted = devChain(fsys, m.MajMin, m.Source, trials)
				s.Hops = c.hops
			}
		default:
			var c *chain
			c, s.Encrypted = devChain(fsys, "", dev, trials)
			s.Hops = c.hops
		}
		e.Swap = append(e.Swap, s)
	}
	return nil
}

// devChain walks from a block device down its device-mapper slaves and
// returns the devices met and whether every path to a disk passes through
// an encrypting target. The device is found by maj:min under /sys/dev/block,
// or else by its /dev name under /sys/class/block.
func devChain(fsys sysroot.FS, majmin, devPath string, trials *trialBudget) (*chain, bool) {
	c := &chain{names: []string{}}
	base := ""
	if majmin != "" {
		if _, err := fsys.Stat("/sys/dev/block/" + majmin); err == nil {
			base = "/sys/dev/block/" + majmin
		}
	}
	if base == "" && strings.HasPrefix(devPath, "/dev/") {
		name := path.Base(devPath)
		// /dev/mapper/NAME links to ../dm-N.
		if target, err := textfile.Readlink(fsys, devPath); err == nil {
			name = path.Base(target)
		}
		if validDevName(name) {
			for _, dir := range []string{"/sys/class/block/", "/sys/block/"} {
				if _, err := fsys.Stat(dir + name); err == nil {
					base = dir + name
					break
				}
			}
		}
	}
	if base == "" {
		return c, false
	}
	w := &chainWalker{fsys: fsys, seen: map[string]bool{}, table: dmTables(fsys.Root()), trials: trials}
	enc := w.walk(c, base, path.Base(base), 0)
	return c, enc
}

// dmTables is how the walk reads device-mapper tables; tests of fake sysfs
// trees replace it.
var dmTables = dmTableReader

// dmTableReader returns how tables are read for a host rooted at root: the
// kernel's ioctl, or, where that cannot be had on the real root, dmsetup.
func dmTableReader(root string) func(string) ([]dmTarget, string, error) {
	return func(name string) ([]dmTarget, string, error) {
		t, err := kernelDMTable(root, name)
		if err == nil {
			return t, "kernel", nil
		}
		if root != "/" {
			return nil, "kernel", err
		}
		t, derr := dmsetupTable(name)
		if derr != nil {
			return nil, "kernel", fmt.Errorf("%w; dmsetup: %v", err, derr)
		}
		return t, "process", nil
	}
}

type chainWalker struct {
	fsys  sysroot.FS
	seen  map[string]bool
	table func(name string) ([]dmTarget, string, error)
	// trials pays for trying the empty passphrase on the key slots of the
	// LUKS headers the walk reads.
	trials *trialBudget
}

func (w *chainWalker) walk(c *chain, p, fallbackName string, depth int) bool {
	name := w.devName(p, fallbackName)
	if c.full(depth) || w.seen[name] {
		c.add(facts.Hop{Device: name, Kind: "unknown", Learned: "sysfs", Depth: depth})
		return false
	}
	w.seen[name] = true
	h := facts.Hop{Device: name, Learned: "sysfs", Depth: depth}
	uuid := w.sysfsLine(p + "/dm/uuid")
	h.Name = w.sysfsLine(p + "/dm/name")
	h.Kind = w.kind(p, name, uuid)
	if h.Kind == "crypt" {
		h.Crypt = w.crypt(h.Name, uuid)
		if strings.HasPrefix(uuid, "CRYPT-LUKS") {
			w.keyslots(p, h.Crypt)
		}
	}
	c.add(h)
	encrypting := h.Kind == "crypt"
	slaves, err := w.fsys.ReadDir(p + "/slaves")
	if err != nil || len(slaves) == 0 {
		return encrypting
	}
	all := true
	for _, s := range slaves {
		if !validDevName(s.Name()) {
			all = false
			continue
		}
		if !w.walk(c, p+"/slaves/"+s.Name(), s.Name(), depth+1) {
			all = false
		}
	}
	return encrypting || all
}

func (w *chainWalker) sysfsLine(p string) string {
	data, err := w.fsys.ReadFileLimit(p, 4096)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// kind tells what the device at p is, from its dm uuid prefix or, for a
// device outside device-mapper, its name and sysfs attributes.
func (w *chainWalker) kind(p, name, uuid string) string {
	for pre := range encryptingTypes {
		if strings.HasPrefix(uuid, pre) {
			return "crypt"
		}
	}
	switch {
	case strings.HasPrefix(uuid, "LVM-"):
		return "lvm"
	case strings.HasPrefix(uuid, "CRYPT-VERITY-"):
		return "verity"
	case strings.HasPrefix(uuid, "CRYPT-INTEGRITY-"):
		return "integrity"
	case uuid != "" || strings.HasPrefix(name, "dm-"):
		return "dm"
	case strings.HasPrefix(name, "md"):
		return "raid"
	case strings.HasPrefix(name, "loop"):
		return "loop"
	}
	if _, err := w.fsys.Stat(p + "/partition"); err == nil {
		return "partition"
	}
	return "disk"
}

// crypt reads the cipher of an encrypting mapping from its table.
func (w *chainWalker) crypt(name, uuid string) *facts.CryptParams {
	typ := ""
	for pre, t := range encryptingTypes {
		if strings.HasPrefix(uuid, pre) {
			typ = t
		}
	}
	if name == "" {
		return &facts.CryptParams{Type: typ, Source: "kernel", Error: "sysfs gives no device-mapper name to read the table by"}
	}
	targets, source, err := w.table(name)
	if err != nil {
		return &facts.CryptParams{Type: typ, Source: source, Error: fmt.Sprintf("reading the dm-crypt table of %s: %v", name, err)}
	}
	cp := cryptFromTable(targets, source)
	cp.Type = typ
	return cp
}

// keyslots tries the key slots of the LUKS header on the one device under
// the mapping at p, opened read-only under the host's root (/dev/NAME),
// its size as sysfs gives it.
func (w *chainWalker) keyslots(p string, cp *facts.CryptParams) {
	fail := func(format string, args ...any) { cp.KeyslotsError = fmt.Sprintf(format, args...) }
	slaves, err := w.fsys.ReadDir(p + "/slaves")
	if err != nil || len(slaves) != 1 || !validDevName(slaves[0].Name()) {
		fail("the mapping does not lie on exactly one device whose header could be read")
		return
	}
	name := slaves[0].Name()
	sectors, err := strconv.ParseInt(w.sysfsLine(p+"/slaves/"+name+"/size"), 10, 64)
	if err != nil || sectors <= 0 || sectors > math.MaxInt64/512 {
		fail("sysfs gives no size for %s", name)
		return
	}
	root, err := os.OpenRoot(w.fsys.Root())
	if err != nil {
		fail("opening the host root to read /dev/%s: %v", name, err)
		return
	}
	defer root.Close()
	f, err := root.Open("dev/" + name)
	if err != nil {
		fail("reading the LUKS header: %v", err)
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&fs.ModeDevice == 0 {
		fail("/dev/%s is not a block device", name)
		return
	}
	hdr, err := readLUKSHeader(f, sectors*512)
	if err != nil {
		fail("reading the LUKS header of /dev/%s: %v", name, err)
		return
	}
	hdr.keyslots(f, sectors*512, cp, w.trials)
}

// devName is the kernel name of the device at p (dm-0, sda3).
func (w *chainWalker) devName(p, fallback string) string {
	if data, err := w.fsys.ReadFileLimit(p+"/uevent", 4096); err == nil {
		for _, l := range textfile.Lines(data) {
			if v, ok := strings.CutPrefix(l, "DEVNAME="); ok && validDevName(v) {
				return v
			}
		}
	}
	if t, err := textfile.Readlink(w.fsys, p); err == nil && validDevName(path.Base(t)) {
		return path.Base(t)
	}
	return fallback
}

func validDevName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00") && len(s) <= 255
}

// markAbsentLive sets Absent on each crypttab entry whose device the host
// does not have: the udev link a UUID, PARTUUID or PARTLABEL names, or the
// device path itself. An entry naming its device otherwise is left alone.
func markAbsentLive(fsys sysroot.FS, ct []facts.CrypttabEntry) {
	links := []struct{ prefix, dir string }{
		{"UUID=", "/dev/disk/by-uuid/"}, {"PARTUUID=", "/dev/disk/by-partuuid/"}, {"PARTLABEL=", "/dev/disk/by-partlabel/"},
	}
	for i := range ct {
		dev := ct[i].Device
		for _, l := range links {
			if v, ok := strings.CutPrefix(dev, l.prefix); ok {
				dev = l.dir + v
			}
		}
		if !strings.HasPrefix(dev, "/dev/") || strings.Contains(dev, "..") {
			continue
		}
		if _, err := fsys.Stat(dev); errors.Is(err, fs.ErrNotExist) {
			ct[i].Absent = true
		}
	}
}
