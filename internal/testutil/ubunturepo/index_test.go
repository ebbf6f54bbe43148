package ubunturepo

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestE2EReleaseListsByHashCopies reads every pocket's InRelease as apt
// would: its signature verifies with the archive's keyring, it announces
// Acquire-By-Hash, and every index it lists is there with its size and
// digest, and so is its by-hash copy.
func TestE2EReleaseListsByHashCopies(t *testing.T) {
	a, _ := e2eArchive(t, false)
	for _, suite := range []string{"jammy", "noble"} {
		for _, pocket := range []string{suite, suite + "-updates", suite + "-security"} {
			dist := filepath.Join(a.Root, "dists", pocket)
			if out, err := exec.Command("gpgv", "--keyring", a.Keyring, filepath.Join(dist, "InRelease")).CombinedOutput(); err != nil {
				t.Errorf("%s: InRelease does not verify: %v\n%s", pocket, err, out)
			}
			if out, err := exec.Command("gpgv", "--keyring", a.Keyring, filepath.Join(dist, "Release.gpg"), filepath.Join(dist, "Release")).CombinedOutput(); err != nil {
				t.Errorf("%s: Release.gpg does not verify: %v\n%s", pocket, err, out)
			}
			release, err := os.ReadFile(filepath.Join(dist, "Release"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(release, []byte("\nAcquire-By-Hash: yes\n")) {
				t.Errorf("%s: Release does not announce Acquire-By-Hash", pocket)
			}
			n := checkListed(t, dist, release)
			if n != 3*4 {
				t.Errorf("%s: Release lists %d files, want 12 (three components, each Packages, .gz, .xz and Release)", pocket, n)
			}
		}
	}
}

// checkListed checks each file Release's SHA256 lists, and its by-hash
// copy where it is an index.
func checkListed(t *testing.T, dist string, release []byte) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(release))
	inSHA := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			inSHA = line == "SHA256:"
			continue
		}
		f := strings.Fields(line)
		if !inSHA || len(f) != 3 {
			continue
		}
		n++
		data, err := os.ReadFile(filepath.Join(dist, f[2]))
		if err != nil {
			t.Errorf("%s lists %s: %v", dist, f[2], err)
			continue
		}
		if sha(data) != f[0] || f[1] != strconv.Itoa(len(data)) {
			t.Errorf("%s: %s does not match its Release entry", dist, f[2])
		}
		if filepath.Base(f[2]) == "Release" {
			continue
		}
		byHash := filepath.Join(dist, filepath.Dir(f[2]), "by-hash", "SHA256", f[0])
		if copied, err := os.ReadFile(byHash); err != nil || !bytes.Equal(copied, data) {
			t.Errorf("%s: the by-hash copy of %s is missing or differs (%v)", dist, f[2], err)
		}
	}
	return n
}
