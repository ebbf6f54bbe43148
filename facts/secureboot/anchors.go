package secureboot

import (
	"bytes"
	"crypto/x509"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// A signature that verifies proves only that whoever holds its key signed
// the file; Secure Boot loads the file when the signer's chain reaches a
// certificate the loader trusts. The firmware holds shim to db; shim holds
// GRUB, the kernel, MokManager and the fallback to db, to the vendor
// certificate built into it and to the MOK list. Neither checks a
// certificate's dates (firmware has no clock it trusts), and neither do we.
const (
	// imageSecurityDB is EFI_IMAGE_SECURITY_DATABASE_GUID, db's vendor.
	imageSecurityDB = "d719b2cb-3d3a-4596-a3bc-dad00e67656f"
	// maxChain bounds the certificates followed from a signer to an anchor.
	maxChain = 8
	// vendorCertSection is the PE section shim carries its vendor
	// certificates in: a table of four little-endian uint32 (the
	// authorized list's size, the deauthorized list's size, then their
	// offsets from the section's start), then the lists.
	vendorCertSection = ".vendor_cert"
	vendorTableSize   = 16
)

// builtinAnchors are the db certificates PC firmware ships (anchors/README.md
// says where each was taken from).
//
//go:embed anchors/*.der
var builtinAnchors embed.FS

// builtinSource names the built-in anchors in facts and findings.
const builtinSource = "built in"

// firmwareDB is the db the firmware holds shim to: on a live host the db
// variable, offline (or where the variable cannot be read) the built-in
// Microsoft CAs. An error reading the variable is kept as an anchor
// without a certificate, so the facts say why the built-ins stood in.
func firmwareDB(fsys sysroot.FS, live bool) []trustedKey {
	var keys []trustedKey
	if live {
		name := efivars + "/db-" + imageSecurityDB
		data, err := fsys.ReadFileLimit(name, maxEFIVar)
		switch {
		case err == nil && len(data) >= 4:
			keys, err = certificateList(data[4:], "db", facts.StoreDB)
			if err == nil && len(keys) > 0 {
				return keys
			}
			if err == nil {
				err = errors.New("it holds no X.509 certificate")
			}
			keys = []trustedKey{{fact: facts.TrustedKey{Source: "db", Store: facts.StoreDB, Error: fmt.Sprintf("parsing %s: %v", fsys.Display(name), err)}}}
		case err == nil:
			keys = []trustedKey{{fact: facts.TrustedKey{Source: "db", Store: facts.StoreDB, Error: fmt.Sprintf("%s is %d bytes, too short for a variable", fsys.Display(name), len(data))}}}
		case !sysroot.IsNotExist(err):
			keys = []trustedKey{{fact: facts.TrustedKey{Source: "db", Store: facts.StoreDB, Error: err.Error()}}}
		}
	}
	return append(keys, builtinDB()...)
}

// builtinDB parses the embedded certificates; they are part of the
// program, so one that does not parse is a build defect.
func builtinDB() []trustedKey {
	names, err := fs.Glob(builtinAnchors, "anchors/*.der")
	if err != nil {
		panic(err)
	}
	var keys []trustedKey
	for _, n := range names {
		der, err := builtinAnchors.ReadFile(n)
		if err != nil {
			panic(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			panic(fmt.Sprintf("built-in anchor %s: %v", n, err))
		}
		k := keyOf(builtinSource, cert)
		k.fact.Store, k.fact.Enrolled = facts.StoreDB, true
		keys = append(keys, k)
	}
	return keys
}

// certificateList reads the X.509 certificates of an EFI_SIGNATURE_LIST
// variable (db, MokListRT, a shim's vendor db); hash entries are not
// certificates and are left out.
func certificateList(data []byte, source, store string) ([]trustedKey, error) {
	entries, err := parseSignatureLists(data)
	if err != nil {
		return nil, err
	}
	var keys []trustedKey
	for _, e := range entries {
		if e.typ != certX509 {
			continue
		}
		cert, err := x509.ParseCertificate(e.data)
		if err != nil {
			keys = append(keys, trustedKey{fact: facts.TrustedKey{Source: source, Store: store, Enrolled: true, Error: fmt.Sprintf("parsing a certificate: %v", err)}})
			continue
		}
		k := keyOf(source, cert)
		k.fact.Store, k.fact.Enrolled = store, true
		keys = append(keys, k)
	}
	return keys, nil
}

// vendorCertificates reads what a shim's .vendor_cert section authorizes:
// one DER certificate, or an EFI_SIGNATURE_LIST where shim was built with
// a vendor db.
func vendorCertificates(sec []byte, source string) ([]trustedKey, error) {
	if len(sec) < vendorTableSize {
		return nil, fmt.Errorf("the %s section is %d bytes, too short for its table", vendorCertSection, len(sec))
	}
	size, off := int64(binary.LittleEndian.Uint32(sec)), int64(binary.LittleEndian.Uint32(sec[8:]))
	if off > int64(len(sec)) || size > int64(len(sec))-off {
		return nil, fmt.Errorf("the %s section's certificate (%d bytes at %d) lies outside its %d bytes", vendorCertSection, size, off, len(sec))
	}
	data := sec[off : off+size]
	if len(data) == 0 {
		return nil, nil
	}
	if cert, err := x509.ParseCertificate(data); err == nil {
		k := keyOf(source, cert)
		k.fact.Store, k.fact.Enrolled = facts.StoreShim, true
		return []trustedKey{k}, nil
	}
	keys, err := certificateList(data, source, facts.StoreShim)
	if err != nil {
		return nil, fmt.Errorf("the %s section holds neither a certificate nor a signature list: %w", vendorCertSection, err)
	}
	return keys, nil
}

// signerChain is what anchoring needs of a signature that verified over
// the file: its signer and the certificates it carries.
type signerChain struct {
	signer *x509.Certificate
	certs  []*x509.Certificate
}

// anchorOf follows the signer's chain, through the certificates the
// signature carries, to the first anchor it reaches: an anchor that is
// the signer or one of those certificates, or whose key signed one of
// them. Each link is a signature checked, never a name matched.
func anchorOf(c *signerChain, anchors []trustedKey) (trustedKey, bool) {
	cur := c.signer
	seen := []*x509.Certificate{cur}
	for range maxChain {
		for _, a := range anchors {
			if a.cert != nil && (bytes.Equal(a.cert.Raw, cur.Raw) || issued(a.cert, cur)) {
				return a, true
			}
		}
		i := slices.IndexFunc(c.certs, func(p *x509.Certificate) bool { return !slices.Contains(seen, p) && issued(p, cur) })
		if i < 0 {
			return trustedKey{}, false
		}
		cur = c.certs[i]
		seen = append(seen, cur)
	}
	return trustedKey{}, false
}

// issued says whether parent, a CA, signed child: as OpenSSL builds the
// chain for shim and sbverify, a certificate whose basic constraints or
// key usage forbid signing certificates issues none. Go refuses SHA-1
// and MD5 certificate signatures, so a chain through one reaches no
// anchor.
func issued(parent, child *x509.Certificate) bool {
	return bytes.Equal(parent.RawSubject, child.RawIssuer) && child.CheckSignatureFrom(parent) == nil
}

// anchorName is how a signature's Anchor names the anchor it reached.
func anchorName(k trustedKey) string {
	return fmt.Sprintf("%s: %s (%s)", k.fact.Store, k.fact.Subject, k.fact.Source)
}

// anchorBootFiles decides each valid signature's anchor and returns the
// anchors it held them to. Shims are held to db first; the vendor
// certificates of those that reach it then join db and the enrolled MOK
// keys as what GRUB, the kernels and shim's helpers are held to. A shim
// db does not reach adds nothing: the firmware would not run it.
func anchorBootFiles(files []bootRead, db, mok []trustedKey) ([]facts.BootFile, []facts.TrustedKey) {
	shimLoads := slices.Clone(db)
	for i := range files {
		f := &files[i]
		if f.fact.Role != facts.RoleShim {
			continue
		}
		if anchorFile(f, db) {
			shimLoads = append(shimLoads, f.vendor...)
		}
	}
	for _, k := range mok {
		if k.fact.Enrolled && k.cert != nil {
			k.fact.Store = facts.StoreMOK
			shimLoads = append(shimLoads, k)
		}
	}
	out := make([]facts.BootFile, len(files))
	for i := range files {
		if files[i].fact.Role != facts.RoleShim {
			anchorFile(&files[i], shimLoads)
		}
		out[i] = files[i].fact
	}
	return out, anchorFacts(shimLoads)
}

// anchorFile sets the anchor of each of f's valid signatures, and says
// whether any reached one.
func anchorFile(f *bootRead, anchors []trustedKey) bool {
	reached := false
	for i, c := range f.chains {
		if c == nil {
			continue
		}
		if a, ok := anchorOf(c, anchors); ok {
			f.fact.Signatures[i].Anchor = anchorName(a)
			reached = true
		}
	}
	return reached
}

// anchorFacts lists the anchors once each by store and fingerprint, with
// db's unreadable entries, which say why the built-ins stood in.
func anchorFacts(all []trustedKey) []facts.TrustedKey {
	out := []facts.TrustedKey{}
	for _, k := range all {
		if !slices.ContainsFunc(out, func(o facts.TrustedKey) bool {
			return o.Store == k.fact.Store && o.SHA256 == k.fact.SHA256 && o.Error == k.fact.Error && o.Source == k.fact.Source
		}) {
			out = append(out, k.fact)
		}
	}
	return out
}
