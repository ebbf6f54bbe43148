package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestAdvisoryScanAndExitCode: --fail-on none passes a failing scan but
// not one that cannot be trusted, and --exit-code replaces a failure's 1,
// never a 2; 0 and 2 are refused as --exit-code, naming what to use.
func TestAdvisoryScanAndExitCode(t *testing.T) {
	weak := filepath.Join("testdata", "rootfs-weak")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"scan", "rootfs", weak}, 1},
		{[]string{"scan", "rootfs", weak, "--fail-on", "none"}, 0},
		{[]string{"scan", "rootfs", weak, "--exit-code", "7"}, 7},
		{[]string{"scan", "rootfs", weak, "--fail-on", "none", "--exit-code", "7"}, 0},
		{[]string{"scan", "rootfs", weak, "--exit-code", "0"}, 2},
		{[]string{"scan", "rootfs", weak, "--exit-code", "2"}, 2},
		{[]string{"scan", "rootfs", weak, "--exit-code", "126"}, 2},
	} {
		if o := gpuhost(t, "", tc.args...); o.code != tc.want {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, o.code, tc.want, o.stderr)
		}
	}

	// A document whose collector failed cannot be trusted: an advisory scan
	// and --exit-code leave its 2 alone.
	data, err := os.ReadFile(filepath.Join("..", "..", "scan", "testdata", "weak-facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["collectors"].(map[string]any)["ssh"] = map[string]any{"status": "error", "reason": "sshd_config: line 3: bad keyword"}
	broken := filepath.Join(t.TempDir(), "broken.json")
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"scan", "facts", broken, "--fail-on", "none"},
		{"scan", "facts", broken, "--exit-code", "7"},
		{"scan", "facts", broken, "--summary", "--fail-on", "none"},
	} {
		if o := gpuhost(t, "", args...); o.code != 2 {
			t.Errorf("%v: exit %d, want 2: the scan cannot be trusted\n%s", args, o.code, o.stderr)
		}
	}
}
