package secureboot

import (
	"bytes"
	"crypto"
	_ "crypto/sha1" // named in signatures; Available() needs it linked
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// A signed kernel module ends with its signature, then struct
// module_signature (include/linux/module_signature.h), then the magic
// string. For a PKCS#7 signature (id_type 2, the only kind kernels since
// 4.3 accept) every field but sig_len is zero, and the signature is a
// detached SignedData over the bytes before it.
const (
	modSigMagic    = "~Module signature appended~\n"
	modSigInfoSize = 12
	modSigPKCS7    = 2
	// maxModSig bounds sig_len; sign-file's signatures carry no
	// certificates, so one signer's fits many times over.
	maxModSig = 64 << 10
	// modTail is how much of a module's end is kept to find its signature.
	modTail = maxModSig + modSigInfoSize + len(modSigMagic)
)

// hashes are the digests a module is hashed with as it streams past, its
// signature's own not yet known: those sign-file offers that Go verifies.
var hashes = []crypto.Hash{crypto.SHA256, crypto.SHA384, crypto.SHA512}

// errUnsigned says a module carries no appended signature.
var errUnsigned = errors.New("no appended module signature")

// errModuleRead wraps a failure to read a module's bytes, which says
// nothing of its signature.
var errModuleRead = errors.New("reading the module")

// moduleSignature is a module's appended signature: the DER of its
// SignedData and how many bytes of the file it covers.
type moduleSignature struct {
	der     []byte
	content int64
}

// parseModuleTrailer finds the appended signature in tail, the last bytes
// of a module of size bytes, as the kernel's mod_check_sig checks it.
func parseModuleTrailer(tail []byte, size int64) (moduleSignature, error) {
	if int64(len(tail)) > size {
		return moduleSignature{}, fmt.Errorf("%d bytes of tail in a %d-byte module", len(tail), size)
	}
	if !bytes.HasSuffix(tail, []byte(modSigMagic)) {
		return moduleSignature{}, errUnsigned
	}
	rest := tail[:len(tail)-len(modSigMagic)]
	if len(rest) < modSigInfoSize {
		return moduleSignature{}, errors.New("the module_signature before the magic is cut short")
	}
	info := rest[len(rest)-modSigInfoSize:]
	rest = rest[:len(rest)-modSigInfoSize]
	algo, hashID, idType, signerLen, keyIDLen := info[0], info[1], info[2], info[3], info[4]
	sigLen := binary.BigEndian.Uint32(info[8:])
	if idType != modSigPKCS7 {
		return moduleSignature{}, fmt.Errorf("signature id type %d is not PKCS#7 (%d)", idType, modSigPKCS7)
	}
	if algo != 0 || hashID != 0 || signerLen != 0 || keyIDLen != 0 || info[5] != 0 || info[6] != 0 || info[7] != 0 {
		return moduleSignature{}, errors.New("a PKCS#7 module_signature with fields other than sig_len set")
	}
	if sigLen > maxModSig {
		return moduleSignature{}, fmt.Errorf("sig_len %d is more than the %d read", sigLen, maxModSig)
	}
	if sigLen == 0 || int64(sigLen) > int64(len(rest)) {
		return moduleSignature{}, fmt.Errorf("sig_len %d with %d bytes before it", sigLen, len(rest))
	}
	der := rest[len(rest)-int(sigLen):]
	content := size - int64(len(modSigMagic)+modSigInfoSize) - int64(sigLen)
	return moduleSignature{der: bytes.Clone(der), content: content}, nil
}

// streamDigests hashes a stream whose signed length is known only at its
// end: every byte but the last keep goes into each hash as it passes, and
// the last keep are held for the trailer.
type streamDigests struct {
	hashes map[crypto.Hash]hash.Hash
	tail   []byte
	keep   int
	n      int64
}

func newStreamDigests(keep int, hs ...crypto.Hash) *streamDigests {
	s := &streamDigests{hashes: map[crypto.Hash]hash.Hash{}, keep: keep, tail: make([]byte, 0, 2*keep)}
	for _, h := range hs {
		s.hashes[h] = h.New()
	}
	return s
}

func (s *streamDigests) Write(p []byte) (int, error) {
	n := len(p)
	s.n += int64(n)
	for len(p) > 0 {
		take := min(len(p), 2*s.keep-len(s.tail))
		s.tail = append(s.tail, p[:take]...)
		p = p[take:]
		if len(s.tail) == 2*s.keep {
			s.spill(s.keep)
		}
	}
	return n, nil
}

// spill hashes the first n held bytes and keeps the rest.
func (s *streamDigests) spill(n int) {
	for _, h := range s.hashes {
		h.Write(s.tail[:n])
	}
	s.tail = s.tail[:copy(s.tail, s.tail[n:])]
}

// finish reads the trailer from what was held and returns the signature
// with the digests of the bytes it covers.
func (s *streamDigests) finish() (moduleSignature, knownDigest, error) {
	if len(s.tail) > s.keep {
		s.spill(len(s.tail) - s.keep)
	}
	sig, err := parseModuleTrailer(s.tail, s.n)
	if err != nil {
		return moduleSignature{}, nil, err
	}
	held := s.n - int64(len(s.tail))
	sums := knownDigest{}
	for k, h := range s.hashes {
		h.Write(s.tail[:sig.content-held])
		sums[k] = h.Sum(nil)
	}
	return sig, sums, nil
}

// digestModule streams r, a module's bytes, and returns its signature and
// the digests of what it covers.
func digestModule(r io.Reader) (moduleSignature, knownDigest, error) {
	s := newStreamDigests(modTail, hashes...)
	if _, err := io.Copy(s, r); err != nil {
		return moduleSignature{}, nil, fmt.Errorf("%w: %w", errModuleRead, err)
	}
	return s.finish()
}
