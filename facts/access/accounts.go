// Package access collects who may log in to a host and what they may do
// as root: accounts and groups, sudo's rules, sshd's PAM stack, and what
// under /etc someone other than its owner may write.
package access

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"strconv"
	"strings"
)

// maxEntries bounds the accounts or groups one file may hold.
const maxEntries = 100000

// maxLine bounds one line of passwd, group, shadow, sudoers or PAM.
const maxLine = 64 << 10

// lines calls fn for each line of data that is not blank, with its number.
func lines(display string, data []byte, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	count := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if count++; count > maxEntries {
			return fmt.Errorf("parsing %s: more than %d lines", display, maxEntries)
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", display, err)
	}
	return nil
}

// id parses a uid or gid.
func id(display string, n int, what, s string) (int, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parsing %s line %d: %s %q is not a number", display, n, what, s)
	}
	return int(v), nil
}

// ParsePasswd reads /etc/passwd (name:password:uid:gid:gecos:home:shell).
// The password state is "none" when the field is "x" (shadow decides),
// "empty" when it is empty, "locked" for ! or *, "hash" otherwise.
func ParsePasswd(display string, data []byte) ([]facts.Account, error) {
	users := []facts.Account{}
	err := lines(display, data, func(n int, line string) error {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
			// NIS compat entries name no local account.
			return nil
		}
		f := strings.Split(line, ":")
		if len(f) != 7 {
			return fmt.Errorf("parsing %s line %d: %d fields, want 7", display, n, len(f))
		}
		uid, err := id(display, n, "uid", f[2])
		if err != nil {
			return err
		}
		gid, err := id(display, n, "gid", f[3])
		if err != nil {
			return err
		}
		pw := passwordState(f[1])
		if f[1] == "x" {
			pw = "none"
		}
		users = append(users, facts.Account{Name: f[0], UID: uid, GID: gid, Home: f[5], Shell: f[6], Password: pw})
		return nil
	})
	return users, err
}

// passwordState classifies a password field as shadow(5) defines it.
func passwordState(pw string) string {
	switch {
	case pw == "":
		return "empty"
	case strings.HasPrefix(pw, "!") || strings.HasPrefix(pw, "*"):
		return "locked"
	default:
		return "hash"
	}
}

// ParseShadow reads /etc/shadow's password field for each name, as
// passwordState classifies it. The hashes themselves are never kept.
func ParseShadow(display string, data []byte) (map[string]string, error) {
	states := map[string]string{}
	err := lines(display, data, func(n int, line string) error {
		f := strings.Split(line, ":")
		if len(f) < 2 {
			return fmt.Errorf("parsing %s line %d: want name:password:...", display, n)
		}
		states[f[0]] = passwordState(f[1])
		return nil
	})
	return states, err
}

// ParseGroup reads /etc/group (name:password:gid:members).
func ParseGroup(display string, data []byte) ([]facts.Group, error) {
	groups := []facts.Group{}
	err := lines(display, data, func(n int, line string) error {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
			return nil
		}
		f := strings.Split(line, ":")
		if len(f) != 4 {
			return fmt.Errorf("parsing %s line %d: %d fields, want 4", display, n, len(f))
		}
		gid, err := id(display, n, "gid", f[2])
		if err != nil {
			return err
		}
		members := []string{}
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		groups = append(groups, facts.Group{Name: f[0], GID: gid, Members: members})
		return nil
	})
	return groups, err
}
