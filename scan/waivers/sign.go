package waivers

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/gpuhost/gpuhost/internal/userfile"
	policybundle "github.com/gpuhost/gpuhost/policy/bundle"
)

// keyID is the key id a signature names: the one policy bundles are signed
// with, so one key pair (and one --verification-key) serves both.
const keyID = policybundle.KeyID

// maxSignature bounds a signature file: one JWT over one file is well under
// a kilobyte with RSA-4096.
const maxSignature = 64 << 10

// SignatureFile is the detached signature of a waiver file: the file's name
// with ".sig" added, holding the same JSON as a bundle's .signatures.json.
func SignatureFile(file string) string { return file + ".sig" }

// Key signs or verifies waiver files, as a policy bundle key does.
type Key struct {
	// PEM is the private key to sign with, the public key to verify with,
	// or the shared secret for the HS algorithms.
	PEM string
	// Algorithm is the JWT algorithm (RS256, ES256, EdDSA, HS256...); the
	// key's own when empty, as for a policy bundle.
	Algorithm string
}

// Sign returns the detached signature of a waiver file's content: OPA's
// .signatures.json, whose one JWT lists the file's SHA-256. name is the
// file's name, for errors and the payload. Sign refuses a file that does
// not load, so that a signature always vouches for usable waivers.
func Sign(data []byte, name string, key Key) ([]byte, error) {
	if _, err := Parse(data, name); err != nil {
		return nil, err
	}
	pem, alg, err := policybundle.SigningKey(key.PEM, key.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("signing waivers %s: %w", name, err)
	}
	files := []bundle.FileInfo{bundle.NewFile(filepath.Base(name), digest(data), string(bundle.SHA256))}
	token, err := bundle.GenerateSignedToken(files, bundle.NewSigningConfig(pem, alg, ""), keyID)
	if err != nil {
		return nil, fmt.Errorf("signing waivers %s: %w", name, err)
	}
	out, err := json.MarshalIndent(bundle.SignaturesConfig{Signatures: []string{token}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("signing waivers %s: %w", name, err)
	}
	return append(out, '\n'), nil
}

// Verify checks a detached signature (Sign's output) over a waiver file's
// content. It fails when the signature is malformed, made with another key,
// or lists anything but exactly this content.
func Verify(data, sig []byte, key Key) error {
	var sc bundle.SignaturesConfig
	dec := json.NewDecoder(bytes.NewReader(sig))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return fmt.Errorf("malformed signature: %w", err)
	}
	if sc.Plugin != "" {
		return fmt.Errorf("signature names plugin %q: only OPA's default signer is accepted", sc.Plugin)
	}
	pem, alg, err := policybundle.VerificationKey(key.PEM, key.Algorithm)
	if err != nil {
		return err
	}
	vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{
		keyID: {Key: pem, Algorithm: alg},
	}, keyID, "", nil)
	files, err := bundle.VerifyBundleSignature(sc, vc)
	if err != nil {
		for _, token := range sc.Signatures {
			if signed := tokenAlgorithm(token); signed != "" && signed != alg {
				return fmt.Errorf("bad signature: made with %s, and the key given goes with %s; verify with the public key of the key that signed it", signed, alg)
			}
		}
		return fmt.Errorf("bad signature: not made with the key given, or altered since (%w)", err)
	}
	if len(files) != 1 {
		return fmt.Errorf("signature lists %d files, want the waiver file alone", len(files))
	}
	for _, f := range files {
		if f.Algorithm != string(bundle.SHA256) {
			return fmt.Errorf("signature hashes with %q, want %s", f.Algorithm, bundle.SHA256)
		}
		if f.Hash != digest(data) {
			return errors.New("the file does not match its signature: it changed after signing")
		}
	}
	return nil
}

// LoadVerified reads a waiver file and its signature (SignatureFile), checks
// the signature with key over the very bytes it then parses, and validates
// them. A missing, malformed or wrong signature is an error: with a key,
// unverified waivers are never loaded.
func LoadVerified(file string, key Key) ([]Waiver, error) {
	data, err := userfile.Read(file, MaxFile)
	if err != nil {
		return nil, fmt.Errorf("loading waivers: %w", err)
	}
	sigFile := SignatureFile(file)
	sig, err := userfile.Read(sigFile, maxSignature)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("verifying waivers %s: no signature %s (sign the file with `gpuhost waivers sign`)", file, sigFile)
	}
	if err != nil {
		return nil, fmt.Errorf("verifying waivers %s: %w", file, err)
	}
	if err := Verify(data, sig, key); err != nil {
		return nil, fmt.Errorf("verifying waivers %s with %s: %w", file, sigFile, err)
	}
	return Parse(data, file)
}

// tokenAlgorithm is the algorithm a JWT's header names; empty when the
// header does not decode, which verification then reports.
func tokenAlgorithm(token string) string {
	header, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Alg
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
