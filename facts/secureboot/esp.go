package secureboot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/diskfs/go-diskfs/filesystem/fat32"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/mounttab"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// espMount is where a tree or a host mounts its EFI system partition.
	espMount = "/boot/efi"
	// maxBootFile bounds an EFI binary or a kernel read whole to hash it.
	maxBootFile = 64 << 20
	// maxESPFiles bounds the directories and EFI binaries read under /EFI.
	maxESPFiles = 64
)

// espTree is a read-only view of an EFI system partition, its names
// relative to the partition's root.
type espTree interface {
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string, max int64) ([]byte, error)
	// Display names a file of the partition as facts show it.
	Display(name string) string
}

// mountedESP is the partition mounted at /boot/efi in a tree or on a host.
type mountedESP struct{ fsys sysroot.FS }

func (m mountedESP) ReadDir(name string) ([]fs.DirEntry, error) {
	return m.fsys.ReadDir(espMount + name)
}

func (m mountedESP) ReadFile(name string, max int64) ([]byte, error) {
	return m.fsys.ReadFileLimit(espMount+name, max)
}

func (m mountedESP) Display(name string) string { return m.fsys.Display(espMount + name) }

// fatESP is a disk image's partition read as FAT32.
type fatESP struct {
	fs   *fat32.FileSystem
	part *partition
	name string
}

// openFATESP opens d as FAT32 once its boot sector and FAT have been
// checked; errNotFAT32 when it holds none.
func openFATESP(d collect.BlockDevice) (esp *fatESP, err error) {
	p := &partition{r: d.R, size: d.Size, left: maxESPBytes}
	p.sr = io.NewSectionReader(p, 0, p.size)
	bs := make([]byte, 512)
	if d.Size < 512 {
		return nil, errNotFAT32
	}
	if _, err := p.ReadAt(bs, 0); err != nil {
		return nil, fmt.Errorf("reading the boot sector: %w", err)
	}
	l, err := parseFAT32BootSector(bs, d.Size)
	if err != nil {
		return nil, err
	}
	fat := make([]byte, l.fatBytes)
	if _, err := p.ReadAt(fat, l.fatStart); err != nil {
		return nil, fmt.Errorf("reading the FAT: %w", err)
	}
	if err := checkFATChains(fat, int(maxChainBytes/l.bytesPerCluster)); err != nil {
		return nil, err
	}
	defer recoverCorrupt(&err)
	f, err := fat32.Read(p, d.Size, 0, l.bytesPerSector)
	if err != nil {
		return nil, err
	}
	return &fatESP{fs: f, part: p, name: d.Name}, p.err
}

// recoverCorrupt turns a panic of the FAT reader over crafted input into
// an error.
func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("corrupt FAT32 file system (%v)", r)
	}
}

func (e *fatESP) ReadDir(name string) (out []fs.DirEntry, err error) {
	defer recoverCorrupt(&err)
	// go-diskfs takes io/fs's paths: relative, no leading slash.
	out, err = e.fs.ReadDir(strings.TrimPrefix(name, "/"))
	if err != nil {
		// go-diskfs says "not found" in words only.
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "does not exist") {
			return nil, fs.ErrNotExist
		}
		return nil, err
	}
	return out, e.part.err
}

func (e *fatESP) ReadFile(name string, max int64) (data []byte, err error) {
	defer recoverCorrupt(&err)
	f, err := e.fs.OpenFile(strings.TrimPrefix(name, "/"), os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err = sysroot.ReadAllLimit(f, max, e.Display(name))
	if err == nil {
		err = e.part.err
	}
	return data, err
}

func (e *fatESP) Display(name string) string { return e.name + ":" + name }

// ESP partition types: GPT's EFI System partition GUID, and MBR's type
// byte for it.
const (
	espGPTType = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
	espMBRType = "ef"
)

// findESP is the target's EFI system partitions: a disk image's partitions
// of the ESP type, as the firmware finds them (a FAT partition of another
// type is none, and a disk without one has none, whatever its root holds
// at /boot/efi), or the directory mounted at /boot/efi of a tree or host.
// where names them, "" when the target has none.
func findESP(env *collect.Env) (trees []espTree, where string, err error) {
	if len(env.Devices) > 0 {
		var names []string
		for _, d := range env.Devices {
			if !strings.EqualFold(d.PartType, espGPTType) && d.PartType != espMBRType {
				continue
			}
			names = append(names, d.Name)
			esp, err := openFATESP(d)
			if errors.Is(err, errNotFAT32) {
				// Firmware reads FAT12 and FAT16 too; this reader does not,
				// so the partition could not be judged.
				err = fmt.Errorf("%s is typed EFI system partition but holds no FAT32 file system (a FAT12 or FAT16 ESP is not read)", d.Name)
			}
			if err != nil {
				return nil, strings.Join(names, ", "), fmt.Errorf("reading the EFI system partition, %s: %w", d.Name, err)
			}
			trees = append(trees, esp)
		}
		return trees, strings.Join(names, ", "), nil
	}
	info, err := env.FS.Stat(espMount)
	switch {
	case sysroot.IsNotExist(err):
		return nil, "", nil
	case err != nil:
		return nil, espMount, err
	case !info.IsDir():
		return nil, espMount, fmt.Errorf("%s is not a directory", env.FS.Display(espMount))
	}
	if env.Live {
		if err := espMounted(env.FS, info); err != nil {
			return nil, espMount, err
		}
	}
	return []espTree{mountedESP{env.FS}}, espMount, nil
}

// espMounted refuses a host whose fstab mounts the ESP at /boot/efi when
// nothing is mounted there: the directory then holds what lies under the
// mount point, not what the firmware loads. fstab's nofail mounts (the
// ESP's, as the rootfs builder writes it) come up after local-fs.target,
// so a scan early in boot can meet the directory empty. A mount point is
// told by its device, which differs from its parent's, as mountpoint(1)
// does: unlike a mount table's paths, that holds through a host root
// mounted elsewhere (a DaemonSet's /host).
func espMounted(fsys sysroot.FS, info fs.FileInfo) error {
	data, ok, err := textfile.ReadOptional(fsys, "/etc/fstab")
	if err != nil || !ok {
		// The encryption collector reports an fstab it cannot read.
		return nil
	}
	entries, err := mounttab.ParseFstab(data)
	if err != nil {
		return nil
	}
	i := slices.IndexFunc(entries, func(e mounttab.FstabEntry) bool { return path.Clean(e.File) == espMount })
	if i < 0 {
		return nil
	}
	parent, err := fsys.Stat(path.Dir(espMount))
	if err != nil {
		return fmt.Errorf("reading %s: %w", fsys.Display(path.Dir(espMount)), err)
	}
	here, up := deviceOf(info), deviceOf(parent)
	if here == 0 || here != up {
		return nil
	}
	return fmt.Errorf("%s mounts %s at %s (line %d), and nothing is mounted there: the directory is not the partition the firmware loads", fsys.Display("/etc/fstab"), entries[i].Spec, espMount, entries[i].Line)
}

// deviceOf is the device a file lies on, 0 when its FileInfo has none.
func deviceOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// espBinaries reads every EFI binary in the partition's /EFI/<vendor>
// directories (EFI/BOOT, EFI/debian, ...), with its signatures.
func espBinaries(t espTree) ([]bootRead, error) {
	vendors, err := t.ReadDir("/EFI")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || sysroot.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", t.Display("/EFI"), err)
	}
	var out []bootRead
	seen := 0
	for _, v := range vendors {
		if !v.IsDir() || !validName(v.Name()) {
			continue
		}
		dir := "/EFI/" + v.Name()
		files, err := t.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", t.Display(dir), err)
		}
		for _, f := range files {
			if seen++; seen > maxESPFiles {
				return nil, fmt.Errorf("more than %d entries under %s", maxESPFiles, t.Display("/EFI"))
			}
			if !f.Type().IsRegular() || !strings.EqualFold(path.Ext(f.Name()), ".efi") || !validName(f.Name()) {
				continue
			}
			name := dir + "/" + f.Name()
			data, err := t.ReadFile(name, maxBootFile)
			if err != nil {
				out = append(out, bootRead{fact: facts.BootFile{Path: t.Display(name), Role: roleOf(f.Name(), nil), Signatures: []facts.Authenticode{}, Error: err.Error()}})
				continue
			}
			out = append(out, readBootFile(t.Display(name), f.Name(), data))
		}
	}
	return out, nil
}

func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

// bootRead is a boot file's facts and what holding its signatures to the
// anchors needs, which outlives the file's bytes: each signature's chain
// (nil where the signature is not valid over the file) and, for a shim,
// the vendor certificates it trusts.
type bootRead struct {
	fact   facts.BootFile
	chains []*signerChain
	vendor []trustedKey
}

// checkBootFile reads data, the file name shown as display, as a PE image
// and checks each of its signatures, holding none to an anchor.
func checkBootFile(display, name string, data []byte) facts.BootFile {
	return readBootFile(display, name, data).fact
}

// readBootFile is checkBootFile, with the chains and vendor certificates
// anchoring needs.
func readBootFile(display, name string, data []byte) bootRead {
	r := bootRead{fact: facts.BootFile{Path: display, Size: int64(len(data)), Signatures: []facts.Authenticode{}}}
	bf := &r.fact
	img, err := parsePE(data)
	bf.Role = roleOf(name, img)
	if err != nil {
		bf.Error = err.Error()
		return r
	}
	sigs, blobs, err := img.certificates()
	if err != nil {
		bf.Error = fmt.Sprintf("reading the certificate table: %v", err)
		return r
	}
	r.chains = make([]*signerChain, len(sigs))
	for i := range sigs {
		if blobs[i] != nil {
			sigs[i], r.chains[i] = checkAuthenticode(img, blobs[i])
		}
	}
	bf.Signatures = append(bf.Signatures, sigs...)
	if bf.Role == facts.RoleShim && img.vendorCert != nil {
		// A shim whose vendor certificate cannot be read still boots
		// what db signed; the file says why it vouches for nothing more.
		if r.vendor, err = vendorCertificates(img.vendorCert, "vendor certificate of "+display); err != nil {
			bf.Error = err.Error()
		}
	}
	return r
}

// roleOf tells what a boot file is by its name, as Debian and Ubuntu name
// them, and for the removable-media path (BOOTX64.EFI) by its sections:
// shim embeds its vendor certificate in .vendor_cert, and a GRUB core
// image carries its modules in mods.
func roleOf(name string, img *peImage) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasPrefix(n, "vmlinuz"):
		return facts.RoleKernel
	case strings.HasPrefix(n, "shim"):
		return facts.RoleShim
	case strings.HasPrefix(n, "grub"):
		return facts.RoleGRUB
	case strings.HasPrefix(n, "mm"):
		return facts.RoleMokManager
	case strings.HasPrefix(n, "fb"):
		return facts.RoleFallback
	case img != nil && img.hasSection(".vendor_cert"):
		return facts.RoleShim
	case img != nil && img.hasSection("mods"):
		return facts.RoleGRUB
	}
	return facts.RoleEFI
}

// kernels reads each /boot/vmlinuz-* with its signatures.
func kernels(fsys sysroot.FS) ([]bootRead, error) {
	names, err := fsys.Glob("/boot/vmlinuz-*")
	if err != nil {
		return nil, err
	}
	var out []bootRead
	for _, n := range names {
		name := "/" + strings.TrimPrefix(n, "/")
		info, err := fsys.Lstat(name)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		data, err := fsys.ReadFileLimit(name, maxBootFile)
		if err != nil {
			out = append(out, bootRead{fact: facts.BootFile{Path: fsys.Display(name), Role: facts.RoleKernel, Signatures: []facts.Authenticode{}, Error: err.Error()}})
			continue
		}
		out = append(out, readBootFile(fsys.Display(name), path.Base(name), data))
	}
	return out, nil
}
