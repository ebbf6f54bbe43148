package main

import (
	"errors"
	"fmt"

	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/policy/bundle"
)

// keyAlgHelp ends the help of every --*-alg flag: the algorithm is the
// key's own unless one is named.
const keyAlgHelp = " (default: the key's own: RS256 for RSA, ES256, ES384 or ES512 for ECDSA P-256, P-384 or P-521, EdDSA for Ed25519; an HMAC secret needs HS256, HS384 or HS512)"

// readKey reads the key file that keyFlag names and settles the algorithm
// to sign (signing) or verify with: alg, given with algFlag, when the key
// goes with it, else the key's own. Every error names the file and what to
// change, before OPA, whose messages name neither, sees the key.
func readKey(keyFlag, file, algFlag, alg string, signing bool) (pem, algorithm string, err error) {
	text, err := userfile.Read(file, userfile.MaxKey)
	if err != nil {
		return "", "", fmt.Errorf("reading %s: %w", keyFlag, err)
	}
	settle := bundle.VerificationKey
	if signing {
		settle = bundle.SigningKey
	}
	pem, algorithm, err = settle(string(text), alg)
	var ae *bundle.AlgorithmError
	switch {
	case err == nil:
		return pem, algorithm, nil
	case errors.As(err, &ae) && ae.Type == bundle.HMACSecret:
		return "", "", fmt.Errorf("%s %s: %w; give %s %s, or a PEM key if one was meant", keyFlag, file, err, algFlag, ae.Fits[0])
	case errors.As(err, &ae):
		return "", "", fmt.Errorf("%s %s: %w; leave out %s to use %s", keyFlag, file, err, algFlag, ae.Fits[0])
	}
	return "", "", fmt.Errorf("%s %s: %w", keyFlag, file, err)
}
