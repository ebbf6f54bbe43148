package lock

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse holds the parser to what a lock file's readers rely on: any
// input is refused or read, never a panic, and what is read writes back to
// a canonical text that reads as the same lock. A refusal is printable
// ASCII a line at a time, so that no input byte reaches a terminal or log.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("gpuhost.lock/v1\n"))
	f.Add([]byte("gpuhost.lock/v1\npackage ab=1:2~b+c all " + sumA + "\n"))
	f.Add([]byte("gpuhost.lock/v1\nsnapshot 20250101T000000Z\nkeyring /a " + sumB + "\n"))
	f.Add([]byte("gpuhost.lock/v1\npackage ab=1\x1b[2J all " + sumA + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			if l != nil {
				t.Fatal("a lock returned with an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !printable(line) {
					t.Fatalf("the error holds a byte that is not printable ASCII: %q", line)
				}
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("Parse read a lock Validate refuses: %v", err)
		}
		out := mustEncode(t, l)
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Encode wrote a lock Parse refuses: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, l) {
			t.Fatalf("round trip changed the lock:\n%+v\n%+v", l, back)
		}
		if !bytes.Equal(mustEncode(t, back), out) {
			t.Fatal("Encode is not canonical")
		}
	})
}

// FuzzEncodeRoundTrip holds the writer to what makes a lock's records
// unforgeable: from any field values, Encode either refuses the lock,
// saying so in printable ASCII, or writes exactly one line per record that
// reads back as the same records, sorted, and no others.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("debian-12-gpu", "http://mirror.invalid/debian", "20250101T000000Z",
		"/etc/apt/sources.list.d/debian.sources", sumA, "/usr/share/keyrings/debian-archive-keyring.gpg", sumB,
		"libc6", "2.36-9+deb12u10", "amd64", sumA, "adduser")
	f.Add("", "", "", "/etc/apt/sources.list", sumA, "/etc/apt/trusted.gpg", sumA, "dpkg", "1:1.21.22", "all", sumB, "dpkg")
	f.Add("t"+evil, "http://m\nmirror http://evil", "20250101T000000Z\n", "/etc/apt/sources.list.d/x\nmirror http://evil\n", sumA,
		"/k\x00", sumB+"\n", "a\nb", "1\nmirror http://evil\n", "amd64\n", sumA+"\npackage x=1 all "+sumA, "z")
	f.Add("t", "file:///srv/mirror", "20250101T000000Z", "/a b", sumA, "/\xff", sumB, "ab", "1 all "+sumA+"\npackage cd=1", "all", sumA, "ef")
	f.Fuzz(func(t *testing.T, template, mirror, snapshot, srcPath, srcSum, keyPath, keySum, name, version, arch, sum, name2 string) {
		l := &Lock{
			Template: template,
			Mirror:   mirror,
			Snapshot: snapshot,
			Sources:  []File{{Path: srcPath, SHA256: srcSum}},
			Keyrings: []File{{Path: keyPath, SHA256: keySum}},
			Packages: []Package{
				{Name: name2, Version: version, Arch: arch, SHA256: sum},
				{Name: name, Version: version, Arch: arch, SHA256: sum},
			},
		}
		data, err := l.Encode()
		if err != nil {
			if data != nil {
				t.Fatal("Encode wrote a lock it refused")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !printable(line) {
					t.Fatalf("the error holds a byte that is not printable ASCII: %q", line)
				}
			}
			return
		}
		records := 1 + len(l.Sources) + len(l.Keyrings) + len(l.Packages)
		for _, h := range []string{template, mirror, snapshot} {
			if h != "" {
				records++
			}
		}
		got := 0
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !printable(line) {
				t.Fatalf("Encode wrote a line that is not printable ASCII: %q", line)
			}
			if !strings.HasPrefix(line, "#") {
				got++
			}
		}
		if got != records {
			t.Fatalf("Encode wrote %d records for %d:\n%s", got, records, data)
		}
		back, err := Parse(data)
		if err != nil {
			t.Fatalf("Encode wrote a lock Parse refuses: %v\n%s", err, data)
		}
		want := *l
		want.Packages = append([]Package(nil), l.Packages...)
		want.sort()
		if !reflect.DeepEqual(back, &want) {
			t.Fatalf("write then parse changed the records:\n%+v\n%+v", &want, back)
		}
		again, err := back.Encode()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("Encode is not canonical: %v", err)
		}
	})
}
