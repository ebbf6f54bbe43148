package access

import (
	"context"
	"fmt"
	"io/fs"
	"path"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	passwdPath = "/etc/passwd"
	groupPath  = "/etc/group"
	shadowPath = "/etc/shadow"
	// loginDefsPath is the shadow suite's defaults (login.defs(5)).
	loginDefsPath = "/etc/login.defs"
	// maxAccountsFile bounds passwd, group and shadow.
	maxAccountsFile = 16 << 20
	// maxEtcEntries bounds the walk of /etc for writable files; maxEtcDepth
	// its depth.
	maxEtcEntries = 100000
	maxEtcDepth   = 16
	// maxWritable bounds the writable files listed: past it the facts
	// would only repeat what the first ones say.
	maxWritable = 1000
)

// Collect reads the accounts, sudo, sshd's PAM stack and /etc's modes. A
// target without /etc/passwd is no Linux system this collector knows. It
// reads the target alone, needing no other collector's facts.
func Collect(_ context.Context, env *collect.Env) (*facts.Access, error) {
	fsys := env.FS
	data, err := fsys.ReadFileLimit(passwdPath, maxAccountsFile)
	if sysroot.IsNotExist(err) {
		return nil, collect.NotApplicable("no " + passwdPath)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(passwdPath), err)
	}
	a := &facts.Access{}
	if a.Users, err = ParsePasswd(fsys.Display(passwdPath), data); err != nil {
		return nil, err
	}
	data, err = fsys.ReadFileLimit(shadowPath, maxAccountsFile)
	switch {
	case err == nil:
		states, err := ParseShadow(fsys.Display(shadowPath), data)
		if err != nil {
			return nil, err
		}
		for i, u := range a.Users {
			if s, ok := states[u.Name]; ok && u.Password == "none" {
				a.Users[i].Password = s
			}
		}
	case !sysroot.IsNotExist(err):
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(shadowPath), err)
	}
	data, err = fsys.ReadFileLimit(groupPath, maxAccountsFile)
	if err != nil && !sysroot.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(groupPath), err)
	}
	if a.Groups, err = ParseGroup(fsys.Display(groupPath), data); err != nil {
		return nil, err
	}
	if a.Sudo, err = LoadSudoers(fsys); err != nil {
		return nil, err
	}
	if a.PAMSSHD, err = LoadPAM(fsys, "sshd"); err != nil {
		return nil, err
	}
	if a.EtcWritable, err = etcWritable(fsys, a.Groups); err != nil {
		return nil, err
	}
	data, err = fsys.ReadFileLimit(loginDefsPath, maxAccountsFile)
	switch {
	case err == nil:
		a.LoginDefs = ParseLoginDefs(fsys.Display(loginDefsPath), data)
	case !sysroot.IsNotExist(err):
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(loginDefsPath), err)
	}
	return a, nil
}

// etcWritable walks /etc for what a group other than root's, or anyone,
// may write. Symlinks are not followed; their own mode means nothing.
func etcWritable(fsys sysroot.FS, groups []facts.Group) ([]facts.WritableFile, error) {
	names := map[int]string{}
	for _, g := range groups {
		names[g.GID] = g.Name
	}
	out := []facts.WritableFile{}
	seen := 0
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > maxEtcDepth {
			return nil
		}
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("reading %s: %w", fsys.Display(dir), err)
		}
		for _, e := range entries {
			if seen++; seen > maxEtcEntries {
				return fmt.Errorf("reading /etc: more than %d entries", maxEtcEntries)
			}
			if e.Type()&fs.ModeSymlink != 0 {
				continue
			}
			name := path.Join(dir, e.Name())
			info, err := fsys.Lstat(name)
			if err != nil {
				return fmt.Errorf("reading %s: %w", fsys.Display(name), err)
			}
			mode := info.Mode()
			gid := ownerGID(info)
			groupW := mode.Perm()&0o020 != 0 && gid != 0
			worldW := mode.Perm()&0o002 != 0 && mode&fs.ModeSticky == 0
			if (groupW || worldW) && len(out) < maxWritable {
				out = append(out, facts.WritableFile{Path: fsys.Display(name), Mode: mode.String(), GID: gid, Group: names[gid],
					GroupWritable: groupW, WorldWritable: worldW})
			}
			if info.IsDir() {
				if err := walk(name, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if _, err := fsys.Stat("/etc"); err != nil {
		return out, nil
	}
	return out, walk("/etc", 0)
}
