// Package files collects what CIS asks of the files themselves, reading
// them as ComplianceAsCode's OVAL has OpenSCAP read them: the owner, group
// and mode of the files the benchmark names, the home directories of the
// interactive accounts and the dot files in them, the rsh and ftp trust
// files, and a walk of the tree's local filesystems for world-writable
// entries and who owns each file. It judges nothing: the checks beside it
// (fs/) do, against the params.
package files

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// benchmarkFile is one entry of the list the benchmark's rules name: a
// path, or a glob over one directory. dir marks a path the rule reads as
// a directory (OVAL's path with no filename), where anything else is no
// item.
type benchmarkFile struct {
	pattern string
	dir     bool
}

// benchmarkFiles are the files of the file_owner_*, file_groupowner_* and
// file_permissions_* rules of CIS Ubuntu 22.04 Level 1 Server, in the
// order of the benchmark's sections. The globs are OVAL's: every name in
// /etc/ssh ending in _key (host private keys) or .pub.
var benchmarkFiles = []benchmarkFile{
	{pattern: "/etc/passwd"}, {pattern: "/etc/passwd-"},
	{pattern: "/etc/group"}, {pattern: "/etc/group-"},
	{pattern: "/etc/shadow"}, {pattern: "/etc/shadow-"},
	{pattern: "/etc/gshadow"}, {pattern: "/etc/gshadow-"},
	{pattern: "/etc/crontab"},
	{pattern: "/etc/cron.hourly", dir: true}, {pattern: "/etc/cron.daily", dir: true},
	{pattern: "/etc/cron.weekly", dir: true}, {pattern: "/etc/cron.monthly", dir: true},
	{pattern: "/etc/cron.d", dir: true},
	{pattern: "/etc/cron.allow"}, {pattern: "/etc/at.allow"},
	{pattern: "/etc/issue"}, {pattern: "/etc/motd"},
	{pattern: "/boot/grub/grub.cfg"},
	{pattern: "/etc/ssh/sshd_config"}, {pattern: "/etc/ssh/*_key"}, {pattern: "/etc/ssh/*.pub"},
}

// Collect reads the benchmark's files, the interactive accounts' homes
// and the whole tree. acc is the access collector's facts, whose accounts
// give the homes and whose names the owners; nil when it had none. A
// target without /etc/passwd is no Linux system this collector knows.
func Collect(ctx context.Context, env *collect.Env, acc *facts.Access) (*facts.Files, error) {
	fsys := env.FS
	if _, err := fsys.Lstat("/etc/passwd"); sysroot.IsNotExist(err) {
		return nil, collect.NotApplicable("no /etc/passwd")
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display("/etc/passwd"), err)
	}
	names := namesOf(acc)
	f := &facts.Files{}
	for _, b := range benchmarkFiles {
		f.Patterns = append(f.Patterns, b.pattern)
	}
	var err error
	if f.Benchmark, err = benchmark(fsys, names); err != nil {
		return nil, err
	}
	if err := readHomes(ctx, fsys, accounts(acc), f); err != nil {
		return nil, err
	}
	skip, err := skippedMounts(env)
	if err != nil {
		return nil, err
	}
	if f.Walk, err = walk(ctx, fsys, skip, maxWalkEntries); err != nil {
		return nil, err
	}
	return f, nil
}

// names maps the target's uids and gids to their names.
type names struct{ users, groups map[int]string }

func namesOf(acc *facts.Access) names {
	n := names{users: map[int]string{}, groups: map[int]string{}}
	if acc == nil {
		return n
	}
	// The first entry for an id is the one ls shows.
	for _, u := range acc.Users {
		if _, ok := n.users[u.UID]; !ok {
			n.users[u.UID] = u.Name
		}
	}
	for _, g := range acc.Groups {
		if _, ok := n.groups[g.GID]; !ok {
			n.groups[g.GID] = g.Name
		}
	}
	return n
}

func accounts(acc *facts.Access) []facts.Account {
	if acc == nil {
		return nil
	}
	return acc.Users
}

// benchmark stats each file of benchmarkFiles, a glob's matches in name
// order.
func benchmark(fsys sysroot.FS, n names) ([]facts.BenchmarkFile, error) {
	out := []facts.BenchmarkFile{}
	for _, b := range benchmarkFiles {
		paths := []string{b.pattern}
		if strings.ContainsAny(b.pattern, "*?[") {
			var err error
			if paths, err = globFiles(fsys, b.pattern); err != nil {
				return nil, err
			}
		}
		for _, p := range paths {
			bf, err := statBenchmark(fsys, p, b, n)
			if err != nil {
				return nil, err
			}
			out = append(out, bf)
		}
	}
	return out, nil
}

// globFiles is the entries of a glob that are not directories: OVAL's
// filename pattern collects files only.
func globFiles(fsys sysroot.FS, pattern string) ([]string, error) {
	matches, err := fsys.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		info, err := fsys.Lstat(m)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", fsys.Display(m), err)
		}
		if !info.IsDir() {
			out = append(out, fsys.Display(m))
		}
	}
	return out, nil
}

func statBenchmark(fsys sysroot.FS, p string, b benchmarkFile, n names) (facts.BenchmarkFile, error) {
	bf := facts.BenchmarkFile{Path: p, Pattern: b.pattern, Directory: b.dir, Type: "missing"}
	info, err := fsys.Lstat(p)
	if sysroot.IsNotExist(err) {
		return bf, nil
	}
	if err != nil {
		return bf, fmt.Errorf("reading %s: %w", p, err)
	}
	in, err := inodeOf(p, info)
	if err != nil {
		return bf, err
	}
	bf.Type, bf.Mode, bf.UID, bf.GID = in.typ, in.mode, in.uid, in.gid
	bf.Owner, bf.Group = n.users[in.uid], n.groups[in.gid]
	return bf, nil
}

// join names an entry of dir as the facts show it.
func join(dir, name string) string { return path.Join("/", dir, name) }
