package encryption

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// importToken adds a token to vol with cryptsetup, which checks it with the
// token's own plugin where one is installed (systemd's for systemd-tpm2).
func importToken(t *testing.T, vol, js string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(file, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Cryptsetup(t, "token", "import", "--json-file", file, vol)
}

// dumpedPCRs reads the PCRs of each systemd-tpm2 token from `cryptsetup
// luksDump`, which systemd's token plugin prints as "0+7".
func dumpedPCRs(t *testing.T, vol string) map[string][2]string {
	t.Helper()
	out := testutil.Cryptsetup(t, "luksDump", vol)
	tokens := out[strings.Index(out, "Tokens:"):]
	tokens = tokens[:strings.Index(tokens, "Digests:")]
	got := map[string][2]string{}
	id := ""
	for _, l := range strings.Split(tokens, "\n") {
		if m := regexp.MustCompile(`^\s+(\d+): systemd-tpm2`).FindStringSubmatch(l); m != nil {
			id = m[1]
		}
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || id == "" {
			continue
		}
		p := got[id]
		switch k {
		case "tpm2-hash-pcrs":
			p[0] = strings.TrimSpace(v)
		case "tpm2-pubkey-pcrs":
			p[1] = strings.TrimSpace(v)
		}
		got[id] = p
	}
	return got
}

func joinPCRs(pcrs []int) string {
	if len(pcrs) == 0 {
		return "n/a"
	}
	s := make([]string, len(pcrs))
	for i, p := range pcrs {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, "+")
}

// The PCRs of systemd-cryptenroll's tokens are read from the header as
// systemd's own token plugin reads them for cryptsetup luksDump.
func TestTPM2TokenPCRsAgreeWithCryptsetup(t *testing.T) {
	vol, _ := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	key := filepath.Join(filepath.Dir(vol), "key")
	testutil.Cryptsetup(t, "luksAddKey", "--batch-mode", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--key-file", key, vol, key)
	importToken(t, vol, `{"type":"systemd-tpm2","keyslots":["0"],"tpm2-blob":"AAAA","tpm2-pcrs":[0,7],"tpm2-pcr-bank":"sha256",
		"tpm2-primary-alg":"ecc","tpm2-policy-hash":"00112233","tpm2-pin":false}`)
	importToken(t, vol, `{"type":"systemd-tpm2","keyslots":["1"],"tpm2-blob":"AAAA","tpm2-pcrs":[],"tpm2-pcr-bank":"sha256",
		"tpm2-primary-alg":"ecc","tpm2-policy-hash":"00112233","tpm2-pin":false,"tpm2_pubkey_pcrs":[11],"tpm2_pubkey":"AAAA"}`)
	_, _, p := tryVolume(t, vol)
	want := []facts.LUKSToken{
		{ID: "0", Type: "systemd-tpm2", Keyslots: []string{"0"}, TPM2PCRs: []int{0, 7}},
		{ID: "1", Type: "systemd-tpm2", Keyslots: []string{"1"}, TPM2PCRs: []int{}, TPM2PubkeyPCRs: []int{11}},
	}
	if !reflect.DeepEqual(p.Tokens, want) {
		t.Fatalf("tokens %+v, want %+v", p.Tokens, want)
	}
	peer := dumpedPCRs(t, vol)
	for _, tok := range p.Tokens {
		if got := [2]string{joinPCRs(tok.TPM2PCRs), joinPCRs(tok.TPM2PubkeyPCRs)}; peer[tok.ID] != got {
			t.Errorf("token %s: we read PCRs %v, cryptsetup luksDump %v", tok.ID, got, peer[tok.ID])
		}
	}
}

// A token whose PCR list is garbled costs only itself: the header and its
// other tokens still read.
func TestGarbledTokenCostsOnlyItself(t *testing.T) {
	all := map[string]luks2Token{
		"0": {Type: "systemd-tpm2", Keyslots: []byte(`["0"]`), PCRs: []byte(`[7]`)},
		"1": {Type: "systemd-tpm2", Keyslots: []byte(`["1"]`), PCRs: []byte(`["seven"]`)},
		"2": {Type: "systemd-tpm2", Keyslots: []byte(`[]`), PCRs: []byte(`[31]`)},
	}
	got := tokens(all)
	if len(got) != 3 || !reflect.DeepEqual(got[0].TPM2PCRs, []int{7}) || got[0].Error != "" {
		t.Fatalf("tokens %+v", got)
	}
	if got[1].Error == "" || got[1].TPM2PCRs != nil || !strings.Contains(got[2].Error, "31 is not a TPM2 PCR") {
		t.Errorf("garbled tokens %+v, %+v: want their errors", got[1], got[2])
	}
}

func TestParsePCRList(t *testing.T) {
	for in, want := range map[string][]int{
		"7": {7}, "0+7": {0, 7}, "7,11": {7, 11}, "secure-boot-policy+kernel-boot": {7, 11},
		"7:sha256=3d458cfe55cc03ea1f443f1562beec8df51c75e14a9fcf9a7234a13f198e7969": {7}, "": nil,
	} {
		if got, err := parsePCRList(in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parsePCRList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"24", "-1", "seven"} {
		if _, err := parsePCRList(in); err == nil {
			t.Errorf("parsePCRList(%q) took it", in)
		}
	}
}

// A tree's first-boot enrolment names the PCRs its key will be sealed to,
// on the crypt hop of the volume it names.
func TestFirstBootTPM2PCRs(t *testing.T) {
	const uuid = "3f1c2a9e-5b7d-4e60-9a8b-0c1d2e3f4a5b"
	for _, tc := range []struct {
		conf string
		want *facts.TPM2Enrolment
	}{
		{"TPM2_PCRS=7\n", &facts.TPM2Enrolment{File: enrollConf, PCRs: []int{7}}},
		{"TPM2_PCRS=0+2\n", &facts.TPM2Enrolment{File: enrollConf, PCRs: []int{0, 2}}},
		{"TPM2_PCRS=seven\n", &facts.TPM2Enrolment{File: enrollConf, Error: `TPM2_PCRS: "seven" is not a PCR`}},
	} {
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{
			"etc/fstab":                         "/dev/mapper/luks-" + uuid + " / ext4 defaults 0 1\n",
			"etc/crypttab":                      "luks-" + uuid + " UUID=" + uuid + " none luks,tpm2-device=auto\n",
			"etc/gpuhost/luks-enroll.conf":      "LUKS_UUID=" + uuid + "\nPROVISION_SLOT=0\n" + tc.conf,
			strings.TrimPrefix(enrollUnit, "/"): "[Unit]\n",
		})
		enc := mustCollect(t, collecttest.NewEnv(t, dir, false))
		hops := enc.Root.Hops
		if len(hops) == 0 || hops[0].Crypt == nil || !reflect.DeepEqual(hops[0].Crypt.FirstBootTPM2, tc.want) {
			t.Errorf("%q: hops %+v, want the first hop's enrolment %+v", tc.conf, hops, tc.want)
		}
	}
}

// FuzzPCRList holds the PCR list reader to PCRs a TPM2 has, whatever the
// enrolment file says.
func FuzzPCRList(f *testing.F) {
	for _, s := range []string{"7", "0+7", "secure-boot-policy,11", "7:sha256=00", "+,+", "99", "ima+debug"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pcrs, err := parsePCRList(s)
		if err != nil {
			return
		}
		for _, p := range pcrs {
			if p < 0 || p > 23 {
				t.Fatalf("parsePCRList(%q) = %v", s, pcrs)
			}
		}
	})
}
