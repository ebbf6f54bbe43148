package encryption

import (
	"encoding/json"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"slices"
	"strconv"
	"strings"
)

// maxTokens bounds the tokens recorded from one header; LUKS2 allows 32.
const maxTokens = 32

// luks2Token is the part of a LUKS2 token read for the facts. The fields
// systemd-cryptenroll writes are read apart from the rest, so that a token
// that garbles them costs only itself, not the header.
type luks2Token struct {
	Type       string          `json:"type"`
	Keyslots   json.RawMessage `json:"keyslots"`
	PCRs       json.RawMessage `json:"tpm2-pcrs"`
	PubkeyPCRs json.RawMessage `json:"tpm2_pubkey_pcrs"`
}

// tokens lists a header's tokens in the order of their ids.
func tokens(all map[string]luks2Token) []facts.LUKSToken {
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, errA := strconv.Atoi(a)
		y, errB := strconv.Atoi(b)
		if errA != nil || errB != nil {
			return strings.Compare(a, b)
		}
		return x - y
	})
	var out []facts.LUKSToken
	for _, id := range ids[:min(len(ids), maxTokens)] {
		t := all[id]
		tok := facts.LUKSToken{ID: id, Type: t.Type, Keyslots: []string{}}
		var errs []string
		if len(t.Keyslots) > 0 {
			if err := json.Unmarshal(t.Keyslots, &tok.Keyslots); err != nil {
				errs = append(errs, fmt.Sprintf("keyslots: %v", err))
			}
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			out  *[]int
		}{{"tpm2-pcrs", t.PCRs, &tok.TPM2PCRs}, {"tpm2_pubkey_pcrs", t.PubkeyPCRs, &tok.TPM2PubkeyPCRs}} {
			if len(f.raw) == 0 {
				continue
			}
			pcrs, err := jsonPCRs(f.raw)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", f.name, err))
				continue
			}
			*f.out = pcrs
		}
		tok.Error = strings.Join(errs, "; ")
		out = append(out, tok)
	}
	return out
}

// jsonPCRs reads a JSON array of PCR indexes.
func jsonPCRs(raw json.RawMessage) ([]int, error) {
	var pcrs []int
	if err := json.Unmarshal(raw, &pcrs); err != nil {
		return nil, err
	}
	for _, p := range pcrs {
		if p < 0 || p > 23 {
			return nil, fmt.Errorf("%d is not a TPM2 PCR", p)
		}
	}
	return pcrs, nil
}

// pcrNames are the names systemd gives PCRs where a list may use them
// (systemd-cryptenroll --tpm2-pcrs, crypttab's tpm2-pcrs=).
var pcrNames = map[string]int{
	"platform-code": 0, "platform-config": 1, "external-code": 2, "external-config": 3,
	"boot-loader-code": 4, "boot-loader-config": 5, "host-platform": 6, "secure-boot-policy": 7,
	"kernel-initrd": 9, "ima": 10, "kernel-boot": 11, "kernel-config": 12, "sysexts": 13,
	"shim-policy": 14, "system-identity": 15, "debug": 16, "application-support": 23,
}

// parsePCRList reads a PCR list as systemd takes it: indexes or names,
// separated by + or commas, each perhaps with an expected value after a
// colon.
func parsePCRList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '+' || r == ',' }) {
		f, _, _ = strings.Cut(strings.TrimSpace(f), ":")
		n, err := strconv.Atoi(f)
		if err != nil {
			named, ok := pcrNames[f]
			if !ok {
				return nil, fmt.Errorf("%q is not a PCR", f)
			}
			n = named
		}
		if n < 0 || n > 23 {
			return nil, fmt.Errorf("%d is not a TPM2 PCR", n)
		}
		out = append(out, n)
	}
	return out, nil
}
