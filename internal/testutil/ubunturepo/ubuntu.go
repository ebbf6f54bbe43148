package ubunturepo

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// OSRelease is Ubuntu's /usr/lib/os-release of a suite's point release.
func OSRelease(suite string) string {
	r := releases[suite]
	return fmt.Sprintf("PRETTY_NAME=\"Ubuntu %[1]s LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"%[2]s\"\nVERSION=\"%[1]s LTS (%[3]s)\"\nVERSION_CODENAME=%[4]s\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=%[4]s\n",
		r.point, r.number, r.name, suite)
}

// ubuntuBaseFiles are the files base-files carries in Ubuntu's place of
// Debian's, by path in the package.
func ubuntuBaseFiles(suite string) map[string]string {
	r := releases[suite]
	return map[string]string{
		"usr/lib/os-release": OSRelease(suite),
		"etc/lsb-release":    fmt.Sprintf("DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=%s\nDISTRIB_CODENAME=%s\nDISTRIB_DESCRIPTION=\"Ubuntu %s LTS\"\n", r.number, suite, r.point),
		"etc/issue":          fmt.Sprintf("Ubuntu %s LTS \\n \\l\n\n", r.point),
		"etc/issue.net":      fmt.Sprintf("Ubuntu %s LTS\n", r.point),
		"etc/debian_version": r.debianVersion + "\n",
		"etc/dpkg/origins/ubuntu": "Vendor: Ubuntu\nVendor-URL: https://www.ubuntu.com/\nBugs: https://bugs.launchpad.net/ubuntu/+filebug\n" +
			"Parent: Debian\n",
	}
}

// Sudoers is Ubuntu's /etc/sudoers (jammy's and noble's are the same in
// what it grants): %admin beside %sudo, use_pty, and /snap/bin in
// secure_path.
const Sudoers = `#
# This file MUST be edited with the 'visudo' command as root.
#
# Please consider adding local content in /etc/sudoers.d/ instead of
# directly modifying this file.
#
# See the man page for details on how to write a sudoers file.
#
Defaults	env_reset
Defaults	mail_badpass
Defaults	secure_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"
Defaults	use_pty

# Host alias specification

# User alias specification

# Cmnd alias specification

# User privilege specification
root	ALL=(ALL:ALL) ALL

# Members of the admin group may gain root privileges
%admin ALL=(ALL) ALL

# Allow members of group sudo to execute any command
%sudo	ALL=(ALL:ALL) ALL

# See sudoers(5) for more information on "@include" directives:

@includedir /etc/sudoers.d
`

// KeyringPath is where ubuntu-keyring puts the archive's key, the
// templates' default keyring.
const KeyringPath = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"

// repack rebuilds Debian's package deb with files replaced or added
// (path in the package -> contents; a new file under etc/ becomes a
// conffile), its control file control and, when edit is set, its
// maintainer scripts edited. md5sums is made again for the files changed.
func repack(work, deb, out string, control stanza, files map[string]string, edit func(dir string) error) error {
	dir, err := os.MkdirTemp(work, "repack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if b, err := exec.Command("dpkg-deb", "-R", deb, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -R %s: %w: %s", deb, err, b)
	}
	conffiles, _ := os.ReadFile(filepath.Join(dir, "DEBIAN/conffiles"))
	sums, err := os.ReadFile(filepath.Join(dir, "DEBIAN/md5sums"))
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	for path, body := range files {
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if st, err := os.Lstat(dst); err == nil && st.Mode().IsRegular() {
			mode = st.Mode().Perm()
		}
		if err := os.WriteFile(dst, []byte(body), mode); err != nil {
			return err
		}
		if err := os.Chmod(dst, mode); err != nil {
			return err
		}
		sum := md5.Sum([]byte(body))
		entry := hex.EncodeToString(sum[:]) + "  " + path
		i := indexFunc(lines, func(l string) bool { return strings.HasSuffix(l, "  "+path) })
		if i >= 0 {
			lines[i] = entry
		} else {
			lines = append(lines, entry)
		}
		if strings.HasPrefix(path, "etc/") && !strings.Contains("\n"+string(conffiles), "\n/"+path+"\n") {
			conffiles = append(conffiles, []byte("/"+path+"\n")...)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "DEBIAN/md5sums"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if len(conffiles) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "DEBIAN/conffiles"), conffiles, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "DEBIAN/control"), []byte(control.String()), 0o644); err != nil {
		return err
	}
	if edit != nil {
		if err := edit(dir); err != nil {
			return err
		}
	}
	return dpkgBuild(dir, out)
}

func dpkgBuild(dir, out string) error {
	cmd := exec.Command("dpkg-deb", "-Zxz", "-z1", "--build", dir, out)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", Date.Unix()))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb --build %s: %w: %s", out, err, b)
	}
	return nil
}

func indexFunc(s []string, f func(string) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}

// originsUbuntu makes base-files' postinst point dpkg's default origin at
// Ubuntu, as Ubuntu's base-files does.
func originsUbuntu(dir string) error {
	p := filepath.Join(dir, "DEBIAN/postinst")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	s := strings.ReplaceAll(string(b), `"$DPKG_ROOT/etc/dpkg/origins/debian" ]`, `"$DPKG_ROOT/etc/dpkg/origins/ubuntu" ]`)
	s = strings.ReplaceAll(s, "ln -sf debian ", "ln -sf ubuntu ")
	if s == string(b) {
		return fmt.Errorf("base-files' postinst does not link the default dpkg origin as expected")
	}
	return os.WriteFile(p, []byte(s), 0o755)
}

// newPackage builds a package of Ubuntu's that Debian has no
// counterpart for: control and its files (path -> contents, or "->target"
// for a symlink). Files in a bin or sbin directory are executable, as
// dh_fixperms makes them; DEBIAN/ paths are the control area's.
func newPackage(work, out string, control stanza, files map[string]string) error {
	dir, err := os.MkdirTemp(work, "new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(dir, "DEBIAN"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "DEBIAN/control"), []byte(control.String()), 0o644); err != nil {
		return err
	}
	for path, body := range files {
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
			continue
		}
		mode := os.FileMode(0o644)
		if d := filepath.Base(filepath.Dir(path)); d == "bin" || d == "sbin" {
			mode = 0o755
		}
		if err := os.WriteFile(dst, []byte(body), mode); err != nil {
			return err
		}
	}
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-Zxz", "--build", dir, out)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", Date.Unix()))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb --build %s: %w: %s", out, err, b)
	}
	return nil
}

// keyringControl is ubuntu-keyring's control: it replaces
// debian-archive-keyring, whose dependents (apt) name it instead. Each
// build of the archive signs with a key of its own, so the version carries
// the key's digest: a real archive never publishes other contents under a
// version it has published, and apt caches kept across builds of the
// stand-in (the e2e's) hold .debs by name and version.
func keyringControl(suite string, key []byte) stanza {
	sum := sha256.Sum256(key)
	return stanza{
		{"Package", "ubuntu-keyring"}, {"Version", releases[suite].keyringVersion + "+key" + hex.EncodeToString(sum[:4])}, {"Architecture", "all"},
		{"Maintainer", "gpuhost tests <tests@gpuhost.invalid>"}, {"Installed-Size", "1"},
		{"Breaks", "debian-archive-keyring"}, {"Replaces", "debian-archive-keyring"},
		{"Section", "misc"}, {"Priority", "important"}, {"Multi-Arch", "foreign"},
		{"Description", "GnuPG keys of the Ubuntu archive (gpuhost stand-in: the stand-in archive's key)"},
	}
}

// kernelMeta is one of Ubuntu's kernel meta packages: name
// (linux-image-generic, linux-headers-generic) depending on Debian's
// package of the release.
func kernelMeta(name, version, dep, what string) stanza {
	return stanza{
		{"Package", name}, {"Version", version}, {"Architecture", "amd64"},
		{"Maintainer", "gpuhost tests <tests@gpuhost.invalid>"}, {"Installed-Size", "1"},
		{"Depends", dep}, {"Section", "kernel"}, {"Priority", "optional"},
		{"Description", "Generic Linux kernel " + what + " (gpuhost stand-in: Debian's kernel under Ubuntu's meta package)"},
	}
}

// cryptsetupControl is noble's systemd-cryptsetup, which Ubuntu splits out
// of systemd from 24.04 on and the noble template installs: bookworm's
// systemd carries systemd-cryptsetup and its generator itself, so the
// stand-in is empty and depends on systemd at the version published.
func cryptsetupControl(systemdVersion string) stanza {
	return stanza{
		{"Package", "systemd-cryptsetup"}, {"Version", systemdVersion}, {"Architecture", "amd64"},
		{"Maintainer", "gpuhost tests <tests@gpuhost.invalid>"}, {"Installed-Size", "1"},
		{"Depends", "systemd (= " + systemdVersion + ")"}, {"Section", "admin"}, {"Priority", "optional"},
		{"Description", "Provides cryptsetup, integritysetup and veritysetup utilities (gpuhost stand-in: bookworm's systemd carries them)"},
	}
}
