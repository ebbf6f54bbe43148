package access

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseLoginDefs(t *testing.T) {
	d := ParseLoginDefs("/etc/login.defs", []byte("# comment\n\nPASS_MAX_DAYS\t99999\nUMASK 022\n  pass_max_days   365  \nENCRYPT_METHOD \"SHA512\"\nMAIL_DIR\n"))
	want := map[string]string{"PASS_MAX_DAYS": "365", "UMASK": "022", "ENCRYPT_METHOD": "SHA512", "MAIL_DIR": ""}
	if fmt.Sprint(d.Settings) != fmt.Sprint(want) {
		t.Errorf("settings %v; want %v", d.Settings, want)
	}
	if d.Lines["PASS_MAX_DAYS"] != 5 || d.Lines["UMASK"] != 4 {
		t.Errorf("lines %v; want the last line that set each", d.Lines)
	}
}

// TestLoginDefsBounded: a file of many distinct keywords keeps at most
// maxLoginDefs of them.
func TestLoginDefsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 10 * maxLoginDefs {
		fmt.Fprintf(&b, "K%d 1\n", i)
	}
	if d := ParseLoginDefs("x", []byte(b.String())); len(d.Settings) != maxLoginDefs || len(d.Lines) != maxLoginDefs {
		t.Errorf("%d settings kept; want %d", len(d.Settings), maxLoginDefs)
	}
}

func FuzzParseLoginDefs(f *testing.F) {
	f.Add([]byte("PASS_MAX_DAYS 365\nUMASK\t027\n# x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := ParseLoginDefs("x", data)
		for k := range d.Settings {
			if k != strings.ToUpper(k) || d.Lines[k] < 1 {
				t.Fatalf("keyword %q kept as is, or without its line", k)
			}
		}
	})
}
