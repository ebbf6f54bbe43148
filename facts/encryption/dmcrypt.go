package encryption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// dmTarget is one target of a device-mapper table. Of a crypt target only
// the cipher and the key's size are kept, never the key.
type dmTarget struct {
	Type    string
	Cipher  string
	KeyBits int
	Err     error
}

// newDMTarget reads a target's parameters, which the caller clears after.
func newDMTarget(typ string, params []byte) dmTarget {
	t := dmTarget{Type: typ}
	if typ == "crypt" {
		t.Cipher, t.KeyBits, t.Err = parseCryptParams(params)
	}
	return t
}

// parseCryptParams reads the parameters of a dm-crypt target, "<cipher>
// <key> <iv_offset> <device> <offset> [options]", and returns the cipher
// and the key's size in bits. The key is either hex (two digits a byte) or
// a kernel keyring reference ":<bytes>:<type>:<description>"; only its
// length is kept, and no string is made of it.
func parseCryptParams(params []byte) (string, int, error) {
	fields := bytes.Fields(params)
	if len(fields) < 5 {
		return "", 0, fmt.Errorf("dm-crypt table has %d fields, want at least 5", len(fields))
	}
	cipher := string(fields[0])
	if !validCipherSpec(cipher) {
		return "", 0, fmt.Errorf("dm-crypt cipher %q is not a cipher spec", cipher)
	}
	bits, err := cryptKeyBits(fields[1])
	if err != nil {
		return cipher, 0, err
	}
	return cipher, bits, nil
}

func cryptKeyBits(key []byte) (int, error) {
	if bytes.Equal(key, []byte("-")) {
		// cipher_null takes no key.
		return 0, nil
	}
	if rest, ok := bytes.CutPrefix(key, []byte(":")); ok {
		size, _, _ := bytes.Cut(rest, []byte(":"))
		n, err := strconv.Atoi(string(size))
		if err != nil || n < 0 || n > 1024 {
			return 0, errors.New("dm-crypt keyring key has no valid size")
		}
		return n * 8, nil
	}
	for _, c := range key {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0, errors.New("dm-crypt key is neither hex nor a keyring reference")
		}
	}
	if len(key)%2 != 0 {
		return 0, errors.New("dm-crypt hex key has an odd length")
	}
	return len(key) * 4, nil
}

// parseDMSetupTable reads `dmsetup table NAME`: one target a line,
// "<start> <length> <type> <params>".
func parseDMSetupTable(out []byte) ([]dmTarget, error) {
	var targets []dmTarget
	for i, l := range bytes.Split(out, []byte("\n")) {
		fields := bytes.Fields(l)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 3 || len(targets) >= 1024 {
			return nil, fmt.Errorf("dmsetup table line %d is malformed", i+1)
		}
		_, params, _ := bytes.Cut(l, fields[2])
		targets = append(targets, newDMTarget(string(fields[2]), params))
	}
	return targets, nil
}

// validCipherSpec accepts the characters dm-crypt cipher specs use
// (aes-xts-plain64, aes-cbc-essiv:sha256, capi:xts(aes)-plain64).
func validCipherSpec(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_:().,", c)) {
			return false
		}
	}
	return true
}

// cryptFromTable picks the crypt targets of a table and returns the cipher
// of the weakest: a table can join segments with different keys.
func cryptFromTable(targets []dmTarget, source string) *facts.CryptParams {
	var best *facts.CryptParams
	for _, t := range targets {
		if t.Type != "crypt" {
			continue
		}
		cp := &facts.CryptParams{Cipher: t.Cipher, KeyBits: t.KeyBits, Source: source}
		if t.Err != nil {
			cp.Error = t.Err.Error()
			return cp
		}
		if best == nil || cp.KeyBits < best.KeyBits {
			best = cp
		}
	}
	if best == nil {
		return &facts.CryptParams{Source: source, Error: "the device-mapper table has no crypt target"}
	}
	return best
}

// cryptFromCrypttab reads the cipher a crypttab entry asks for. LUKS keeps
// its cipher in the header, so a LUKS entry without one says nothing here.
func cryptFromCrypttab(ent facts.CrypttabEntry) *facts.CryptParams {
	cp := &facts.CryptParams{Source: "file"}
	plain := true
	for _, o := range ent.Options {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "luks":
			cp.Type, plain = "luks", false
		case "bitlk", "tcrypt", "fvault2":
			cp.Type, plain = k, false
		case "plain":
			plain = true
		case "cipher":
			cp.Cipher = v
		case "size":
			if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= 8192 {
				cp.KeyBits = n
			}
		case "hash":
			cp.Hash = v
		}
	}
	if plain {
		cp.Type = "plain"
	}
	if cp.Cipher == "" {
		if cp.Type == "plain" {
			cp.Error = "crypttab names no cipher= for this plain mapping"
		} else {
			cp.Error = "the cipher is in the LUKS header, which is not in the scanned tree"
		}
	}
	return cp
}

// dmsetupTable runs `dmsetup table NAME` on the real host, where the
// kernel's interface could not be opened directly.
func dmsetupTable(name string) ([]dmTarget, error) {
	bin, err := exec.LookPath("dmsetup")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "table", "--", name).Output()
	defer clear(out)
	if err != nil {
		return nil, err
	}
	if len(out) > dmTableBuffer {
		return nil, errors.New("dmsetup table output too large")
	}
	return parseDMSetupTable(out)
}
