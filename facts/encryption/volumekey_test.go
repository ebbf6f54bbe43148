package encryption

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// recordImageKey adds the token the gpuhost-rootfs builder writes: the
// header's own digest of the volume key, under the gpuhost-image-key type.
func recordImageKey(t *testing.T, vol string) {
	t.Helper()
	var md struct {
		Digests map[string]keyDigest `json:"digests"`
	}
	if err := json.Unmarshal([]byte(testutil.Cryptsetup(t, "luksDump", "--dump-json-metadata", vol)), &md); err != nil {
		t.Fatal(err)
	}
	d, ok := md.Digests["0"]
	if !ok {
		t.Fatalf("%s has no digest 0: %+v", vol, md.Digests)
	}
	tok, err := json.Marshal(map[string]any{"type": imageKeyToken, "keyslots": []string{}, "salt": d.Salt, "digest": d.Digest})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(file, tok, 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Cryptsetup(t, "token", "import", "--json-file", file, vol)
}

func volumeKeyOf(t *testing.T, vol string) facts.VolumeKey {
	t.Helper()
	_, _, p := tryVolume(t, vol)
	if p.VolumeKey == nil {
		t.Fatalf("%s: no volume key facts (%+v)", vol, p)
	}
	return *p.VolumeKey
}

// A volume's key is told apart from the image's by the header's digest
// against the recorded one, through a re-encryption that cryptsetup
// starts, leaves unfinished and then finishes, as first boot's would.
func TestVolumeKeyOriginThroughAReencryption(t *testing.T) {
	vol, _ := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	key := filepath.Join(filepath.Dir(vol), "key")
	if got := volumeKeyOf(t, vol); got != (facts.VolumeKey{Origin: facts.KeyUnknown}) {
		t.Errorf("no token: %+v, want unknown", got)
	}
	recordImageKey(t, vol)
	if got := volumeKeyOf(t, vol); got != (facts.VolumeKey{Origin: facts.KeyFromImage}) {
		t.Errorf("the image's own key: %+v, want image", got)
	}
	reencrypt := []string{"reencrypt", "--batch-mode", "--force-offline-reencrypt", "--disable-locks", "--key-file", key}
	testutil.Cryptsetup(t, append(reencrypt, "--key-slot", "0", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--init-only", vol)...)
	if got := volumeKeyOf(t, vol); !got.Reencrypting || got.Origin != facts.KeyFromImage {
		t.Errorf("re-encryption begun: %+v, want reencrypting under the image's key", got)
	}
	testutil.Cryptsetup(t, append(reencrypt, "--resume-only", vol)...)
	if got := volumeKeyOf(t, vol); got != (facts.VolumeKey{Origin: facts.KeyOfHost}) {
		t.Errorf("re-encrypted: %+v, want host", got)
	}
	// The key still opens the volume: the re-encryption kept its slot.
	testutil.Cryptsetup(t, "open", "--test-passphrase", "--key-file", key, vol)
}

// LUKS1 has no tokens, so nothing tells whose key it is; a token of
// another type, or one naming another digest, does not make a key the
// image's.
func TestVolumeKeyUnrecorded(t *testing.T) {
	vol, _ := testutil.LUKSFormat(t, "luks1", "aes-xts-plain64", 512)
	if got := volumeKeyOf(t, vol); got != (facts.VolumeKey{Origin: facts.KeyUnknown}) {
		t.Errorf("LUKS1: %+v, want unknown", got)
	}
	md := luks2Metadata{}
	if err := json.Unmarshal([]byte(`{
		"digests": {"0": {"segments": ["0"], "salt": "c2FsdA==", "digest": "ZGlnZXN0"}},
		"tokens": {
			"0": {"type": "systemd-tpm2", "salt": "c2FsdA==", "digest": "ZGlnZXN0"},
			"1": {"type": "gpuhost-image-key", "salt": "c2FsdA==", "digest": "b3RoZXI="},
			"2": {"type": "gpuhost-image-key", "salt": "", "digest": ""}
		}}`), &md); err != nil {
		t.Fatal(err)
	}
	if got := md.volumeKey(); got != (facts.VolumeKey{Origin: facts.KeyOfHost}) {
		t.Errorf("another digest recorded: %+v, want host", got)
	}
}
