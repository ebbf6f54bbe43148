package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// tree writes files into a new directory and gives each the mode its
// entry says, which git and WriteTree do not keep. A name ending in /
// is a directory; an entry with a link is a symlink.
type entry struct {
	mode os.FileMode
	data string
	link string
}

func tree(t *testing.T, entries map[string]entry) string {
	t.Helper()
	return treeIn(t, t.TempDir(), entries)
}

// treeIn is tree in dir.
func treeIn(t *testing.T, dir string, entries map[string]entry) string {
	t.Helper()
	// Parents first, so that a directory's own mode is set after what is
	// written into it.
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e := entries[name]
		p := filepath.Join(dir, strings.TrimSuffix(name, "/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case e.link != "":
			err = os.Symlink(e.link, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(e.data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Reverse(names)
	for _, name := range names {
		if e := entries[name]; e.link == "" && e.mode != 0 {
			if err := os.Chmod(filepath.Join(dir, strings.TrimSuffix(name, "/")), e.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func chown(t *testing.T, dir string, owners map[string][2]int) {
	t.Helper()
	for name, o := range owners {
		if err := os.Lchown(filepath.Join(dir, name), o[0], o[1]); err != nil {
			t.Fatal(err)
		}
	}
}

const passwd = "root:x:0:0:root:/root:/bin/bash\n" +
	"svc:x:999:999::/srv/svc:/usr/sbin/nologin\n" +
	"alice:x:1000:1000::/home/alice:/bin/bash\n" +
	"bob:x:1001:1001::/home/bob:/bin/bash\n" +
	"carol:x:1002:1002::/home/carol:/bin/bash\n" +
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"

func accountsOf(t *testing.T) *facts.Access {
	t.Helper()
	return &facts.Access{
		Users: []facts.Account{
			{Name: "root", UID: 0, GID: 0, Home: "/root"}, {Name: "svc", UID: 999, GID: 999, Home: "/srv/svc"},
			{Name: "alice", UID: 1000, GID: 1000, Home: "/home/alice"}, {Name: "bob", UID: 1001, GID: 1001, Home: "/home/bob"},
			{Name: "carol", UID: 1002, GID: 1002, Home: "/home/carol"}, {Name: "nobody", UID: 65534, GID: 65534, Home: "/nonexistent"},
		},
		Groups: []facts.Group{{Name: "root", GID: 0}, {Name: "shadow", GID: 42}},
	}
}

func collectTree(t *testing.T, dir string) *facts.Files {
	t.Helper()
	f, err := Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)}, accountsOf(t))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func byPath(f *facts.Files) map[string]facts.BenchmarkFile {
	m := map[string]facts.BenchmarkFile{}
	for _, b := range f.Benchmark {
		m[b.Path] = b
	}
	return m
}

func TestBenchmarkFiles(t *testing.T) {
	dir := tree(t, map[string]entry{
		"etc/passwd":                       {mode: 0o644, data: passwd},
		"etc/shadow.real":                  {mode: 0o666},
		"etc/shadow":                       {link: "shadow.real"},
		"etc/group":                        {mode: 0o664},
		"etc/cron.d/":                      {mode: os.ModeSticky | 0o755},
		"etc/cron.daily":                   {mode: 0o777},
		"etc/ssh/sshd_config":              {mode: 0o600},
		"etc/ssh/ssh_host_rsa_key":         {mode: 0o640},
		"etc/ssh/ssh_host_rsa_key.pub":     {mode: 0o644},
		"etc/ssh/ssh_host_ed25519_key":     {link: "../../srv/key"},
		"etc/ssh/moduli_key/":              {},
		"etc/ssh/ssh_host_ed25519_key.pub": {mode: os.ModeSetuid | 0o644},
	})
	f := collectTree(t, dir)
	got := byPath(f)
	for path, want := range map[string]facts.BenchmarkFile{
		"/etc/passwd":                       {Type: "regular", Mode: "0644", Pattern: "/etc/passwd"},
		"/etc/shadow":                       {Type: "symlink", Mode: "0777", Pattern: "/etc/shadow"},
		"/etc/group":                        {Type: "regular", Mode: "0664", Pattern: "/etc/group"},
		"/etc/gshadow":                      {Type: "missing", Pattern: "/etc/gshadow"},
		"/etc/cron.d":                       {Type: "directory", Mode: "1755", Pattern: "/etc/cron.d", Directory: true},
		"/etc/cron.daily":                   {Type: "regular", Mode: "0777", Pattern: "/etc/cron.daily", Directory: true},
		"/etc/ssh/ssh_host_rsa_key":         {Type: "regular", Mode: "0640", Pattern: "/etc/ssh/*_key"},
		"/etc/ssh/ssh_host_ed25519_key":     {Type: "symlink", Mode: "0777", Pattern: "/etc/ssh/*_key"},
		"/etc/ssh/ssh_host_ed25519_key.pub": {Type: "regular", Mode: "4644", Pattern: "/etc/ssh/*.pub"},
		"/etc/ssh/ssh_host_rsa_key.pub":     {Type: "regular", Mode: "0644", Pattern: "/etc/ssh/*.pub"},
	} {
		g, ok := got[path]
		if !ok {
			t.Errorf("%s: not collected", path)
			continue
		}
		if g.Type != want.Type || g.Mode != want.Mode || g.Pattern != want.Pattern || g.Directory != want.Directory {
			t.Errorf("%s: %+v, want %+v", path, g, want)
		}
	}
	// A directory is no match of a glob: OVAL's filename collects files.
	if _, ok := got["/etc/ssh/moduli_key"]; ok {
		t.Error("the directory moduli_key was taken for a key")
	}
	if len(f.Patterns) != len(benchmarkFiles) || f.Patterns[0] != "/etc/passwd" {
		t.Errorf("patterns = %v", f.Patterns)
	}
}

func TestBenchmarkOwnersByName(t *testing.T) {
	testutil.Root(t)
	dir := tree(t, map[string]entry{"etc/passwd": {data: passwd}, "etc/shadow": {mode: 0o640}, "etc/motd": {}})
	chown(t, dir, map[string][2]int{"etc/shadow": {0, 42}, "etc/motd": {1000, 4242}})
	got := byPath(collectTree(t, dir))
	if s := got["/etc/shadow"]; s.UID != 0 || s.GID != 42 || s.Owner != "root" || s.Group != "shadow" {
		t.Errorf("/etc/shadow: %+v", s)
	}
	if m := got["/etc/motd"]; m.UID != 1000 || m.GID != 4242 || m.Owner != "alice" || m.Group != "" {
		t.Errorf("/etc/motd: %+v", m)
	}
}

func TestNoPasswdIsNotApplicable(t *testing.T) {
	dir := tree(t, map[string]entry{"etc/hostname": {data: "x\n"}})
	_, err := Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)}, nil)
	if s := collecttest.Status(err); s != collect.StatusNotApplicable {
		t.Errorf("status %s (%v), want not_applicable", s, err)
	}
}

func TestHomesAndDotFiles(t *testing.T) {
	dir := tree(t, map[string]entry{
		"etc/passwd":                  {data: passwd},
		"home/alice/":                 {mode: 0o750},
		"home/alice/.bashrc":          {},
		"home/alice/.bash_history":    {link: "/dev/null"},
		"home/alice/notes":            {},
		"home/alice/.config/":         {},
		"home/alice/.config/.deep":    {},
		"home/alice/.config/sub/.far": {},
		"home/alice/.netrc":           {},
		"home/alice/linked/":          {link: "../../srv"},
		"srv/carol/":                  {mode: 0o700},
		"srv/carol/.profile":          {},
		"home/carol":                  {link: "../srv/carol"},
		"srv/svc/.x":                  {},
		"home/.rhosts":                {},
		"home/x/y/.rhosts":            {},
		"root/.rhosts":                {},
		"root/.netrc":                 {},
		"etc/hosts.equiv":             {},
	})
	f := collectTree(t, dir)
	if f.HomesIncomplete != "" {
		t.Fatalf("incomplete: %s", f.HomesIncomplete)
	}
	var homes []string
	for _, h := range f.Homes {
		homes = append(homes, h.User+" "+h.Type+" "+map[bool]string{true: "dir", false: "none"}[h.IsDir])
	}
	// svc (uid 999) is no interactive user; nobody is kept for the checks
	// to leave out by name.
	if want := []string{"alice directory dir", "bob missing none", "carol symlink dir", "nobody missing none"}; !slices.Equal(homes, want) {
		t.Errorf("homes = %q, want %q", homes, want)
	}
	var dots []string
	for _, d := range f.DotFiles {
		dots = append(dots, d.Path+" "+d.Type)
	}
	// One level down, not two; not through the symlinked directory; the
	// symlinked home itself is read through its link.
	want := []string{
		"/home/alice/.bash_history symlink", "/home/alice/.bashrc regular", "/home/alice/.config/.deep regular",
		"/home/alice/.netrc regular", "/home/carol/.profile regular",
	}
	if !slices.Equal(dots, want) {
		t.Errorf("dot files = %q, want %q", dots, want)
	}
	if want := []string{"/root/.rhosts", "/etc/hosts.equiv", "/home/.rhosts", "/home/alice/.netrc"}; !slices.Equal(f.TrustFiles, want) {
		t.Errorf("trust files = %q, want %q", f.TrustFiles, want)
	}
}

func TestHomesBounded(t *testing.T) {
	entries := map[string]entry{"etc/passwd": {data: passwd}}
	for i := range 30 {
		entries[filepath.Join("home/alice", strings.Repeat("d", i+1))+"/"] = entry{}
	}
	dir := tree(t, entries)
	r := &homeReader{fsys: collecttest.OpenFS(t, dir), f: &facts.Files{}, entries: maxHomeEntries - 10}
	if r.dotFiles("/home/alice") || !strings.Contains(r.f.HomesIncomplete, "more than") {
		t.Errorf("past the bound: incomplete %q", r.f.HomesIncomplete)
	}
}

func TestWalk(t *testing.T) {
	dir := tree(t, map[string]entry{
		"etc/passwd":       {data: passwd},
		"tmp/":             {mode: os.ModeSticky | 0o777},
		"opt/drop/":        {mode: 0o777},
		"opt/drop/run.sh":  {mode: 0o666},
		"opt/link":         {link: "/etc/passwd"},
		"opt/group-only":   {mode: 0o664},
		"var/lib/x/deep/f": {},
	})
	fsys := collecttest.OpenFS(t, dir)
	w, err := walk(context.Background(), fsys, mountSkip{}, maxWalkEntries)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Complete || w.Stopped != "" || len(w.Unread) != 0 {
		t.Errorf("walk not complete: %+v", w)
	}
	if w.Entries != 13 {
		t.Errorf("entries = %d, want 13", w.Entries)
	}
	if !slices.Equal(w.WorldWritableDirs.Paths, []string{"/opt/drop"}) || w.WorldWritableDirs.Count != 1 {
		t.Errorf("world-writable dirs = %+v", w.WorldWritableDirs)
	}
	// The symlink's 0777 is no one's to write.
	if !slices.Equal(w.WorldWritableFiles.Paths, []string{"/opt/drop/run.sh"}) {
		t.Errorf("world-writable files = %+v", w.WorldWritableFiles)
	}
	total := 0
	for _, o := range w.Owners {
		total += o.Count
	}
	// Every entry but the 8 directories.
	if total != 5 {
		t.Errorf("owners count %d entries, want 5: %+v", total, w.Owners)
	}
}

func TestWalkStopsAndSaysWhy(t *testing.T) {
	dir := tree(t, map[string]entry{"a/b/c/d": {}, "e/f": {}})
	fsys := collecttest.OpenFS(t, dir)
	w, err := walk(context.Background(), fsys, mountSkip{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if w.Complete || w.Entries != 3 || !strings.Contains(w.Stopped, "limit of 3") || w.StoppedAt != "/a/b" {
		t.Errorf("at the limit: %+v", w)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the scan's deadline passed"))
	if w, _ = walk(ctx, fsys, mountSkip{}, 100); w.Complete || !strings.Contains(w.Stopped, "deadline") {
		t.Errorf("cancelled: %+v", w)
	}
}

func TestWalkTooDeep(t *testing.T) {
	deep := strings.Repeat("d/", maxWalkDepth+1) + "f"
	dir := tree(t, map[string]entry{deep: {}})
	w, err := walk(context.Background(), collecttest.OpenFS(t, dir), mountSkip{}, maxWalkEntries)
	if err != nil {
		t.Fatal(err)
	}
	if w.Complete || len(w.Unread) != 1 || !strings.Contains(w.Unread[0], "deeper than") {
		t.Errorf("too deep: complete %v, unread %q", w.Complete, w.Unread)
	}
}

func TestWalkLiveSkipsPseudoAndNetworkMounts(t *testing.T) {
	// The host's tree is read from a directory, as a container reads it
	// from /host: the scanner's mount table names its mounts there, and
	// its own /proc is no mount of the tree.
	dir := t.TempDir()
	mi := "1 0 8:1 / / rw - ext4 /dev/vda1 rw\n" +
		"2 1 0:5 / " + dir + "/proc rw - proc proc rw\n" +
		"3 1 0:6 / " + dir + "/mnt/share rw - nfs4 srv:/share rw\n" +
		"4 1 0:7 / " + dir + "/mnt/fuse rw - fuse.sshfs u@h:/ rw\n" +
		"5 1 0:8 / " + dir + "/run rw - tmpfs tmpfs rw\n" +
		"6 1 0:9 / " + dir + "/mnt/over rw - nfs srv:/x rw\n" +
		"7 1 8:2 / " + dir + "/mnt/over rw - ext4 /dev/vda2 rw\n" +
		"8 1 0:10 / /proc rw - proc proc rw\n"
	treeIn(t, dir, map[string]entry{
		"etc/passwd":          {data: passwd},
		"proc/self/mountinfo": {data: mi},
		"proc/1/x":            {mode: 0o666},
		"mnt/share/":          {mode: 0o777},
		"mnt/share/f":         {mode: 0o666},
		"mnt/fuse/f":          {mode: 0o666},
		"run/f":               {mode: 0o666},
		"mnt/over/f":          {mode: 0o666},
	})
	env := collecttest.NewEnv(t, dir, true)
	skip, err := skippedMounts(env)
	if err != nil {
		t.Fatal(err)
	}
	w, err := walk(context.Background(), env.FS, skip, maxWalkEntries)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, s := range w.Skipped {
		skipped = append(skipped, s.Path+" "+s.FSType)
	}
	if want := []string{"/proc proc", "/mnt/fuse fuse.sshfs", "/mnt/share nfs4"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
	// The mount point itself is seen from its parent; what is below it
	// is not walked. An ext4 mounted over an nfs is walked.
	if want := []string{"/mnt/over/f", "/run/f"}; !slices.Equal(w.WorldWritableFiles.Paths, want) {
		t.Errorf("world-writable files = %q, want %q", w.WorldWritableFiles.Paths, want)
	}
	if !slices.Equal(w.WorldWritableDirs.Paths, []string{"/mnt/share"}) {
		t.Errorf("world-writable dirs = %q", w.WorldWritableDirs.Paths)
	}
}

func TestInTree(t *testing.T) {
	for _, c := range []struct{ root, point, want string }{
		{"/", "/proc", "/proc"}, {"/host", "/host/proc", "/proc"}, {"/host", "/host", "/"},
		{"/host", "/proc", ""}, {"/host", "/hostile", ""},
	} {
		got, ok := inTree(c.root, c.point)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("inTree(%s, %s) = %q %v, want %q", c.root, c.point, got, ok, c.want)
		}
	}
}

func TestWalkStaysOnTheTreesFilesystem(t *testing.T) {
	testutil.Root(t)
	dir := tree(t, map[string]entry{"etc/passwd": {data: passwd}, "mnt/other/": {}})
	mnt := filepath.Join(dir, "mnt/other")
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "mode=0777"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mnt, "f"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	w, err := walk(context.Background(), collecttest.OpenFS(t, dir), mountSkip{}, maxWalkEntries)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Skipped) != 1 || w.Skipped[0].Path != "/mnt/other" || w.WorldWritableFiles.Count != 0 {
		t.Errorf("skipped %+v, world-writable files %+v", w.Skipped, w.WorldWritableFiles)
	}
}

func TestOctal(t *testing.T) {
	for m, want := range map[os.FileMode]string{
		0o644: "0644", 0o755 | os.ModeSetuid: "4755", 0o777 | os.ModeSticky | os.ModeDir: "1777", os.ModeSetgid | 0o2: "2002",
	} {
		if got := octal(m); got != want {
			t.Errorf("octal(%v) = %s, want %s", m, got, want)
		}
	}
}
