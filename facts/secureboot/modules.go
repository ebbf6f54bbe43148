package secureboot

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// dkmsCert is the certificate DKMS signs modules with, which the
	// gpuhost-gpu provisioner leaves in the image for mokutil --import.
	dkmsCert = "/var/lib/dkms/mok.pub"
	// maxModuleFile bounds a module file; maxModuleBytes what it
	// decompresses to, with room for NVIDIA's, the largest.
	maxModuleFile  = 256 << 20
	maxModuleBytes = 512 << 20
	// maxModules bounds the out-of-tree modules read, maxModuleDirEntries
	// the entries walked to find them, maxModuleDepth how deep.
	maxModules          = 512
	maxModuleDirEntries = 20000
	maxModuleDepth      = 6
	// maxXZDict and maxZstdWindow bound a decompressor's window: xz's
	// own presets go up to 64 MiB, and kbuild and DKMS ask for less.
	maxXZDict     = 64 << 20
	maxXZFile     = 128 << 20
	maxZstdWindow = 64 << 20
)

// outOfTreeDirs are where modules built outside the kernel tree go under
// /lib/modules/<release>: DKMS's updates/dkms, and extra.
var outOfTreeDirs = []string{"updates", "extra", "dkms"}

// trustedKey is a certificate modules are checked against.
type trustedKey struct {
	fact facts.TrustedKey
	cert *x509.Certificate
}

// readCertificate reads a PEM or DER certificate file, as the kernel's
// sign-file accepts either; ok is false when the file is absent.
func readCertificate(fsys sysroot.FS, name string) (trustedKey, bool, error) {
	data, err := fsys.ReadFileLimit(name, 1<<20)
	if sysroot.IsNotExist(err) {
		return trustedKey{}, false, nil
	}
	if err != nil {
		return trustedKey{}, false, err
	}
	if b, _ := pem.Decode(data); b != nil {
		data = b.Bytes
	}
	cert, err := x509.ParseCertificate(data)
	if err != nil {
		return trustedKey{}, true, fmt.Errorf("parsing the certificate %s: %w", fsys.Display(name), err)
	}
	return keyOf(fsys.Display(name), cert), true, nil
}

func keyOf(source string, cert *x509.Certificate) trustedKey {
	sum := sha256.Sum256(cert.Raw)
	return trustedKey{cert: cert, fact: facts.TrustedKey{Source: source, Subject: cert.Subject.String(), Issuer: cert.Issuer.String(),
		Serial: serialText(cert.SerialNumber), SHA256: hex.EncodeToString(sum[:])}}
}

// moduleFiles lists the out-of-tree module files of every kernel under
// /lib/modules, by release.
func moduleFiles(fsys sysroot.FS) (map[string][]string, error) {
	releases, err := fsys.ReadDir("/lib/modules")
	if sysroot.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing kernel modules: %w", err)
	}
	out := map[string][]string{}
	budget, found := maxModuleDirEntries, 0
	for _, r := range releases {
		if !r.IsDir() || !validName(r.Name()) {
			continue
		}
		for _, sub := range outOfTreeDirs {
			var files []string
			if err := walkModules(fsys, "/lib/modules/"+r.Name()+"/"+sub, 0, &budget, &files); err != nil {
				return nil, err
			}
			if found += len(files); found > maxModules {
				return nil, fmt.Errorf("more than %d out-of-tree modules under %s", maxModules, fsys.Display("/lib/modules"))
			}
			out[r.Name()] = append(out[r.Name()], files...)
		}
	}
	return out, nil
}

func walkModules(fsys sysroot.FS, dir string, depth int, budget *int, found *[]string) error {
	if depth > maxModuleDepth {
		return nil
	}
	entries, err := fsys.ReadDir(dir)
	if sysroot.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing kernel modules: %w", err)
	}
	for _, e := range entries {
		if *budget--; *budget < 0 {
			return fmt.Errorf("listing kernel modules: more than %d entries under %s", maxModuleDirEntries, fsys.Display("/lib/modules"))
		}
		p := path.Join(dir, e.Name())
		switch {
		case !validName(e.Name()) || e.Type()&fs.ModeSymlink != 0:
			// Links are not followed: they could loop or point anywhere.
		case e.IsDir():
			if err := walkModules(fsys, p, depth+1, budget, found); err != nil {
				return err
			}
		case e.Type().IsRegular() && moduleName(e.Name()) != "":
			*found = append(*found, p)
		}
	}
	return nil
}

// moduleName is the kernel's name for a module file (nvidia-uvm.ko.xz is
// nvidia_uvm), "" for a file that is not a module.
func moduleName(file string) string {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if base, ok := strings.CutSuffix(file, ext); ok && base != "" {
			return strings.ReplaceAll(base, "-", "_")
		}
	}
	return ""
}

// checkModule reads the module file name (kernel release) and checks its
// appended signature against keys.
func checkModule(fsys sysroot.FS, name, release string, keys []trustedKey) facts.KernelModule {
	m := facts.KernelModule{Name: moduleName(path.Base(name)), File: fsys.Display(name), Kernel: release}
	rc, err := fsys.Stream(name, maxModuleFile)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	defer rc.Close()
	r, err := decompressor(name, rc)
	if err != nil {
		m.Error = fmt.Sprintf("decompressing %s: %v", m.File, err)
		return m
	}
	sig, sums, err := digestModule(&limitedReader{r: r, left: maxModuleBytes, where: m.File})
	switch {
	case errors.Is(err, errUnsigned):
		return m
	case errors.Is(err, errModuleRead):
		m.Error = err.Error()
		return m
	}
	m.Signed = true
	if err != nil {
		m.Error = fmt.Sprintf("reading the signature of %s: %v", m.File, err)
		return m
	}
	p7, err := parsePKCS7(sig.der)
	if err != nil {
		m.Error = fmt.Sprintf("parsing the signature of %s: %v", m.File, err)
		return m
	}
	issuer, serial := signerName(p7)
	m.Signer, m.KeyID = issuer.CommonName, serialText(serial)
	if m.Signer == "" {
		m.Signer = issuer.String()
	}
	_, m.HashAlgorithm, _ = digestOf(p7.Signers[0].DigestAlgorithm.Algorithm)
	for _, k := range keys {
		if k.cert == nil || !names(p7, k.cert) {
			continue
		}
		if err := verifyDetached(p7, sums, k.cert); err != nil {
			m.Error = fmt.Sprintf("the signature of %s does not verify with the certificate %s: %v", m.File, k.fact.Source, err)
			return m
		}
		m.VerifiedBy = k.fact.Source
		return m
	}
	m.Error = fmt.Sprintf("%s is signed by %q (key %s), which is none of the trusted keys", m.File, m.Signer, m.KeyID)
	return m
}

// decompressor undoes the compression the module file's name says, each
// decoder's window bounded.
func decompressor(name string, r io.Reader) (io.Reader, error) {
	switch {
	case strings.HasSuffix(name, ".ko.xz"):
		return newXZReader(r)
	case strings.HasSuffix(name, ".ko.zst"):
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxModuleBytes))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case strings.HasSuffix(name, ".ko.gz"):
		return gzip.NewReader(r)
	}
	return r, nil
}

// newXZReader decodes an xz stream read whole (it is compressed, so a
// fraction of the module) once every block's LZMA2 dictionary is known to
// be within maxXZDict: the decoder allocates what a block header asks for.
func newXZReader(r io.Reader) (io.Reader, error) {
	data, err := sysroot.ReadAllLimit(r, maxXZFile, "the xz stream")
	if err != nil {
		return nil, err
	}
	if err := checkXZDictionaries(data, maxXZDict); err != nil {
		return nil, err
	}
	return xz.NewReader(bytes.NewReader(data))
}

// limitedReader fails a read that goes past left bytes instead of
// returning less, so a module that decompresses beyond the bound is an
// error, not a cut-short digest.
type limitedReader struct {
	r     io.Reader
	left  int64
	where string
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return n, fmt.Errorf("%s decompresses to more than %d bytes: %w", l.where, maxModuleBytes, sysroot.ErrTooLarge)
	}
	return n, err
}
