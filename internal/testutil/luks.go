package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/devmapper"
)

// LUKSFormat formats a 20 MiB file in a temp dir as a LUKS volume of type
// typ (luks1, luks2) with cipher and a key of keyBits, using cryptsetup
// (which formats a file without a loop device) and a cheap PBKDF so that
// tests stay fast. It returns the file and the UUID cryptsetup gave it; the
// key file is "key" beside it.
func LUKSFormat(t testing.TB, typ, cipher string, keyBits int) (file, uuid string) {
	t.Helper()
	cs := Tool(t, "cryptsetup", "cryptsetup-bin")
	dir := t.TempDir()
	key, vol := filepath.Join(dir, "key"), filepath.Join(dir, typ+".img")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vol, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(vol, 20<<20); err != nil {
		t.Fatal(err)
	}
	args := []string{"luksFormat", "--batch-mode", "--type", typ, "--pbkdf-force-iterations", "1000",
		"--cipher", cipher, "--key-size", strconv.Itoa(keyBits), "--key-file", key}
	if typ == "luks2" {
		args = append(args, "--pbkdf", "pbkdf2")
	}
	undo := devmapper.Keep()
	defer undo()
	Run(t, time.Minute, cs, append(args, vol)...)
	return vol, strings.TrimSpace(Run(t, time.Minute, cs, "luksUUID", vol))
}

// Cryptsetup runs cryptsetup with args and returns its output, leaving
// /dev/mapper as it was: a re-encryption, even of a file, opens
// device-mapper's control node, which cryptsetup makes when it is missing.
func Cryptsetup(t testing.TB, args ...string) string {
	t.Helper()
	cs := Tool(t, "cryptsetup", "cryptsetup-bin")
	undo := devmapper.Keep()
	defer undo()
	return Run(t, time.Minute, cs, args...)
}

// KeepDevMapper has /dev/mapper left as it is now when t ends, for a test
// that runs cryptsetup (or code that does) by other means than Cryptsetup.
func KeepDevMapper(t testing.TB) {
	t.Cleanup(devmapper.Keep())
}
