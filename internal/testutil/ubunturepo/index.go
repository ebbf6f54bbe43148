package ubunturepo

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// writeSuite writes one pocket's dists/POCKET: a Packages index per
// component (plain, gzip and xz, with a by-hash copy of each), the
// component's Release, and the pocket's Release signed as InRelease and
// Release.gpg. A pocket with no packages has empty indexes, as an
// Ubuntu release's -security has before its first update.
func writeSuite(root, suite, pocket string, pkgs []published, s *signer) error {
	dist := filepath.Join(root, "dists", pocket)
	var files []string // relative to dist
	for _, comp := range components {
		var index bytes.Buffer
		for _, p := range pkgs {
			if p.component != comp {
				continue
			}
			st, err := indexStanza(root, p)
			if err != nil {
				return err
			}
			index.WriteString(st.String())
			index.WriteString("\n")
		}
		dir := filepath.Join(comp, "binary-amd64")
		written, err := writeIndexes(filepath.Join(dist, dir), pocket, suite, comp, index.Bytes())
		if err != nil {
			return err
		}
		for _, w := range written {
			files = append(files, filepath.Join(dir, w))
		}
	}
	release, err := releaseFile(dist, suite, pocket, files)
	if err != nil {
		return err
	}
	return s.sign(dist, release)
}

// indexStanza is p's Packages stanza: its control with where the file
// lies and its digest.
func indexStanza(root string, p published) (stanza, error) {
	f, err := os.Open(filepath.Join(root, p.file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	st := p.stanza.without("Filename", "Size", "MD5sum", "SHA1", "SHA256", "SHA512")
	return append(st,
		field{"Filename", filepath.ToSlash(p.file)},
		field{"Size", fmt.Sprint(n)},
		field{"SHA256", hex.EncodeToString(h.Sum(nil))},
	), nil
}

// writeIndexes writes Packages, Packages.gz, Packages.xz and the
// component's Release into dir, a by-hash copy of each index, and returns
// the names Release lists.
func writeIndexes(dir, pocket, suite, comp string, packages []byte) ([]string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "by-hash", "SHA256"), 0o755); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = Date
	if _, err := zw.Write(packages); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	xz := exec.Command("xz", "-c", "-6")
	xz.Stdin = bytes.NewReader(packages)
	xzData, err := xz.Output()
	if err != nil {
		return nil, fmt.Errorf("xz: %w", err)
	}
	compRelease := fmt.Sprintf("Archive: %s\nVersion: %s\nComponent: %s\nOrigin: Ubuntu\nLabel: Ubuntu\nArchitecture: amd64\n", pocket, releases[suite].number, comp)
	files := []struct {
		name   string
		data   []byte
		byHash bool
	}{
		{"Packages", packages, true}, {"Packages.gz", gz.Bytes(), true}, {"Packages.xz", xzData, true},
		{"Release", []byte(compRelease), false},
	}
	var names []string
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
		if f.byHash {
			if err := os.WriteFile(filepath.Join(dir, "by-hash", "SHA256", sha(f.data)), f.data, 0o644); err != nil {
				return nil, err
			}
		}
		names = append(names, f.name)
	}
	return names, nil
}

// releaseFile writes the pocket's Release over files (relative to dist).
func releaseFile(dist, suite, pocket string, files []string) ([]byte, error) {
	r := releases[suite]
	var b strings.Builder
	fmt.Fprintf(&b, "Origin: Ubuntu\nLabel: Ubuntu\nSuite: %s\nVersion: %s\nCodename: %s\nDate: %s\n", pocket, r.number, suite, Date.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Architectures: amd64\nComponents: %s\nDescription: Ubuntu %s (gpuhost stand-in)\nAcquire-By-Hash: yes\nSHA256:\n", strings.Join(components, " "), r.number)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, " %s %d %s\n", sha(data), len(data), filepath.ToSlash(f))
	}
	release := []byte(b.String())
	return release, os.WriteFile(filepath.Join(dist, "Release"), release, 0o644)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// signer holds a throwaway signing key in a gpg home of its own. The home
// is a short directory under the system's temporary one: gpg-agent's
// socket lives there, and a long path cannot be bound.
type signer struct {
	home string
}

func newSigner() (*signer, error) {
	home, err := os.MkdirTemp("", "ubrepo-gpg-")
	if err != nil {
		return nil, err
	}
	s := &signer{home: home}
	if _, err := s.gpg(nil, "--passphrase", "", "--quick-generate-key", "gpuhost stand-in Ubuntu archive <ubuntu@gpuhost.invalid>", "ed25519", "sign", "never"); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close stops the gpg-agent the key's home started and removes the home.
func (s *signer) close() {
	_ = exec.Command("gpgconf", "--homedir", s.home, "--kill", "all").Run()
	_ = os.RemoveAll(s.home)
}

func (s *signer) publicKey() ([]byte, error) { return s.gpg(nil, "--export") }

func (s *signer) gpg(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("gpg", append([]string{"--homedir", s.home, "--batch", "--quiet", "--pinentry-mode", "loopback"}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpg %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// sign writes InRelease (clear-signed) and Release.gpg (detached) for
// release into dist.
func (s *signer) sign(dist string, release []byte) error {
	in, err := s.gpg(release, "--clearsign", "--digest-algo", "SHA512")
	if err != nil {
		return err
	}
	det, err := s.gpg(release, "--detach-sign", "--armor", "--digest-algo", "SHA512")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "InRelease"), in, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dist, "Release.gpg"), det, 0o644)
}
