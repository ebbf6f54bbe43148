package mounttab

import (
	"strings"
	"testing"
)

func TestParseFstab(t *testing.T) {
	got, err := ParseFstab([]byte("# /etc/fstab\n\nLABEL=root / ext4 defaults 0 1\n/swap\\040file none swap sw\nUUID=A /boot/efi vfat umask=0077,nofail 0 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	if got[1].Spec != "/swap file" || got[1].Type != "swap" || got[1].Line != 4 {
		t.Errorf("the escaped swap file: %+v", got[1])
	}
	if got[2].File != "/boot/efi" || strings.Join(got[2].Options, ",") != "umask=0077,nofail" || got[2].Line != 5 {
		t.Errorf("the ESP: %+v", got[2])
	}
	if _, err := ParseFstab([]byte("/dev/sda1 /\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("short fstab line: %v", err)
	}
	if _, err := ParseFstab([]byte("a / ext4 x\x00 0 1\n")); err == nil {
		t.Error("a NUL in fstab accepted")
	}
}

func TestRowsBounded(t *testing.T) {
	if _, err := Rows([]byte(strings.Repeat("a b\n", MaxEntries+1)), 2, 2); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d rows: %v", MaxEntries+1, err)
	}
}

func TestMountinfo(t *testing.T) {
	mi := "22 1 0:21 / /proc rw shared:12 - proc proc rw\n" +
		"25 1 254:0 / / rw shared:1 - ext4 /dev/mapper/root rw\n" +
		"30 25 8:1 / /boot/efi rw shared:9 - vfat /dev/vda1 rw\n" +
		"31 25 0:40 / /srv/with\\040space rw - tmpfs tmpfs rw\n"
	mounts, err := ParseMountinfo([]byte(mi))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 4 || mounts[3].Point != "/srv/with space" {
		t.Fatalf("%+v", mounts)
	}
	for file, want := range map[string]string{
		"/boot/efi/EFI/BOOT/BOOTX64.EFI": "/boot/efi",
		"/boot/efi":                      "/boot/efi",
		"/boot/efit":                     "/",
		"/etc/fstab":                     "/",
	} {
		if m, ok := For(mounts, file); !ok || m.Point != want {
			t.Errorf("For(%s) = %+v %v, want %s", file, m, ok, want)
		}
	}
	if m, _ := For(mounts, "/boot/efi"); m.Source != "/dev/vda1" || m.MajMin != "8:1" || m.FSType != "vfat" {
		t.Errorf("the ESP's source: %+v", m)
	}
	if _, err := ParseMountinfo([]byte("1 0 8:1 / /\n")); err == nil {
		t.Error("short mountinfo line accepted")
	}
}

func TestUnescape(t *testing.T) {
	if got := Unescape(`a\040b\\c\9`); got != `a b\\c\9` {
		t.Errorf("unescape %q", got)
	}
}

func FuzzFstab(f *testing.F) {
	f.Add([]byte("LABEL=root / ext4 defaults 0 1\n/swap\\040f none swap sw 0 0\n"))
	f.Add([]byte("/dev/a /\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseFstab(data)
		if err != nil {
			return
		}
		if len(entries) > MaxEntries {
			t.Errorf("%d entries", len(entries))
		}
		_ = Unescape(string(data))
	})
}

func FuzzMountinfo(f *testing.F) {
	f.Add([]byte("25 1 254:0 / / rw shared:1 - ext4 /dev/mapper/root rw\n"))
	f.Add([]byte("1 0 8:1 / /\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, err := ParseMountinfo(data)
		if err != nil {
			return
		}
		if len(mounts) > 4*MaxEntries {
			t.Errorf("%d mounts", len(mounts))
		}
		_, _ = For(mounts, "/boot/efi")
	})
}
