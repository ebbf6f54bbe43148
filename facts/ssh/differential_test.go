package ssh

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// The differential test holds the sshd configuration reader to sshd's own
// on generated configurations: each case is an /etc/ssh tree (the main
// file, drop-ins under sshd_config.d, an absolute Include, Match blocks,
// Include inside Match, -o options, any keyword case, "=" and quotes,
// repeated keywords, list modifiers, time values), judged by "sshd -T" in
// a mount namespace whose /etc/ssh is the case's, and by the facts the
// collector writes from the same tree. make test runs a fixed seed's few
// dozen; make differential runs as many as DIFFERENTIAL_TIME allows.
var (
	sshdCases    = flag.Int("differential.sshd-cases", 24, "how many generated sshd configurations TestSSHDConfigDifferential runs")
	sshdSeed     = flag.Uint64("differential.sshd-seed", 1, "the seed of TestSSHDConfigDifferential's first configuration")
	sshdDuration = flag.Duration("differential.sshd-duration", 0, "stop TestSSHDConfigDifferential after this long (0: after -differential.sshd-cases)")
)

// sshdCase is one generated configuration: files by path under /etc/ssh,
// and the -o options of the command line.
type sshdCase struct {
	seed    uint64
	files   map[string]string
	options []string
}

func (c sshdCase) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c.files)) {
		fmt.Fprintf(&b, "--- /etc/ssh/%s\n%s", name, c.files[name])
	}
	if len(c.options) > 0 {
		fmt.Fprintf(&b, "--- -o %s\n", strings.Join(c.options, " -o "))
	}
	return b.String()
}

// sshdValues are the values the generator gives each keyword it writes.
var sshdValues = map[string][]string{
	"PermitRootLogin":                 {"yes", "no", "prohibit-password", "without-password", "forced-commands-only"},
	"PasswordAuthentication":          {"yes", "no"},
	"KbdInteractiveAuthentication":    {"yes", "no"},
	"ChallengeResponseAuthentication": {"yes", "no"},
	"PermitEmptyPasswords":            {"yes", "no"},
	"UsePAM":                          {"yes", "no"},
	"Ciphers":                         {"aes256-gcm@openssh.com,aes128-ctr", "+aes128-cbc", "-aes*-ctr", "^chacha20-poly1305@openssh.com", "-*cbc,3des*"},
	"KexAlgorithms":                   {"curve25519-sha256", "+diffie-hellman-group14-sha1", "-ecdh-sha2-*", "^sntrup761x25519-sha512@openssh.com"},
	"MACs":                            {"hmac-sha2-512-etm@openssh.com", "+hmac-sha1", "-umac-*", "^hmac-sha2-256"},
	"AuthenticationMethods":           {"any", "publickey", "publickey,password publickey,keyboard-interactive", "publickey,keyboard-interactive:pam"},
	"AllowGroups":                     {"admins", "ops wheel", "gpu-users"},
	"DenyUsers":                       {"guest", "nobody root"},
	"LogLevel":                        {"INFO", "verbose", "DEBUG2", "quiet"},
	"MaxAuthTries":                    {"3", "4", "10"},
	"MaxSessions":                     {"2", "10"},
	"X11Forwarding":                   {"yes", "no"},
	"ClientAliveInterval":             {"0", "300", "5m", "1h30s", "15"},
	"ClientAliveCountMax":             {"0", "3"},
	"LoginGraceTime":                  {"60", "2m", "0", "1m30s"},
	"IgnoreRhosts":                    {"yes", "no"},
	"HostbasedAuthentication":         {"yes", "no"},
	"PermitUserEnvironment":           {"yes", "no"},
	"AllowTcpForwarding":              {"yes", "no", "local"},
	"MaxStartups":                     {"10:30:100", "3:50:10", "20"},
}

type sshdGen struct {
	r     *rand.Rand
	files map[string]*strings.Builder
	keys  []string
}

// genSSHD writes the configuration of one seed.
func genSSHD(seed uint64) sshdCase {
	g := &sshdGen{r: rand.New(rand.NewPCG(seed, 0x5eed5eed)), files: map[string]*strings.Builder{}}
	g.keys = slices.Sorted(maps.Keys(sshdValues))
	main := g.file("sshd_config")
	main.WriteString("HostKey /etc/ssh/ssh_host_ed25519_key\n")
	if g.r.IntN(2) == 0 {
		// Debian's and Ubuntu's first line.
		main.WriteString("Include /etc/ssh/sshd_config.d/*.conf\n")
	}
	for range g.r.IntN(8) {
		g.setting(main)
	}
	if g.r.IntN(3) == 0 {
		main.WriteString("Include sshd_config.d/late-*.conf extra/nothing-here.conf\n")
		g.dropIn("sshd_config.d/late-1.conf")
	}
	if g.r.IntN(3) == 0 {
		main.WriteString("Include /etc/ssh/extra/abs.conf\n")
		g.dropIn("extra/abs.conf")
	}
	for range 1 + g.r.IntN(3) {
		g.dropIn(fmt.Sprintf("sshd_config.d/%02d-%s.conf", g.r.IntN(100), g.pick("cloud", "harden", "site")))
	}
	for range g.r.IntN(6) {
		g.setting(main)
	}
	if g.r.IntN(2) == 0 {
		g.match(main, true)
	}
	c := sshdCase{seed: seed, files: map[string]string{}}
	for name, b := range g.files {
		c.files[name] = b.String()
	}
	for range g.r.IntN(3) {
		k := g.keys[g.r.IntN(len(g.keys))]
		c.options = append(c.options, k+"="+g.value(k))
	}
	return c
}

func (g *sshdGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *sshdGen) file(name string) *strings.Builder {
	if b, ok := g.files[name]; ok {
		return b
	}
	b := &strings.Builder{}
	g.files[name] = b
	return b
}

func (g *sshdGen) value(k string) string {
	vs := sshdValues[k]
	return vs[g.r.IntN(len(vs))]
}

// setting writes one keyword line in one of the spellings sshd accepts.
func (g *sshdGen) setting(b *strings.Builder) {
	k := g.keys[g.r.IntN(len(g.keys))]
	v := g.value(k)
	switch g.r.IntN(6) {
	case 0:
		k = strings.ToLower(k)
	case 1:
		k = strings.ToUpper(k)
	}
	sep := g.pick(" ", "\t", "=", " = ", "  ")
	if strings.Contains(v, " ") && !strings.Contains(v, ",") && g.r.IntN(2) == 0 {
		v = `"` + v + `"`
	}
	if g.r.IntN(5) == 0 {
		// sshd 9.2 reads a "#" after a value as more arguments, so
		// comments have lines of their own.
		b.WriteString(g.pick("# set by the generator\n", "\t#PasswordAuthentication yes\n", "\n"))
	}
	fmt.Fprintf(b, "%s%s%s%s\n", g.pick("", "", "\t", "  "), k, sep, v)
}

// matchKeywords are keywords sshd allows inside Match.
var matchKeywords = []string{"PasswordAuthentication", "PermitRootLogin", "X11Forwarding", "AuthenticationMethods", "MaxAuthTries", "ClientAliveInterval", "KbdInteractiveAuthentication", "AllowGroups", "DenyUsers", "MaxSessions"}

// dropIn writes an included file: settings, and sometimes a Match block,
// which ends with the file.
func (g *sshdGen) dropIn(name string) {
	b := g.file(name)
	for range 1 + g.r.IntN(4) {
		g.setting(b)
	}
	if g.r.IntN(3) == 0 {
		g.match(b, false)
	}
}

// matchSetting writes a keyword sshd allows under Match.
func (g *sshdGen) matchSetting(b *strings.Builder) {
	k := matchKeywords[g.r.IntN(len(matchKeywords))]
	fmt.Fprintf(b, "\t%s %s\n", k, g.value(k))
}

// match writes a Match block of settings that must not touch the global
// ones, sometimes with an Include inside it.
func (g *sshdGen) match(b *strings.Builder, mayInclude bool) {
	fmt.Fprintf(b, "Match %s\n", g.pick("User alice", "Group admins", "Address 10.0.0.0/8", "all", "User root,bob Address 192.0.2.*"))
	for range 1 + g.r.IntN(3) {
		g.matchSetting(b)
	}
	if mayInclude && g.r.IntN(2) == 0 {
		b.WriteString("\tInclude /etc/ssh/match.d/*.conf\n")
		in := g.file("match.d/in-match.conf")
		for range 1 + g.r.IntN(3) {
			g.matchSetting(in)
		}
	}
}

func TestSSHDConfigDifferential(t *testing.T) {
	testutil.Root(t)
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	key := filepath.Join(t.TempDir(), "ssh_host_ed25519_key")
	testutil.Run(t, 30*time.Second, keygen, "-q", "-N", "", "-t", "ed25519", "-f", key)
	keyData, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	var deadline time.Time
	if *sshdDuration > 0 {
		deadline = time.Now().Add(*sshdDuration)
	}
	// The facts take the key exchange defaults of the tree's
	// openssh-server, and this tree's is the machine's own.
	kex := KexDefaultsFor(strings.TrimSpace(testutil.Run(t, 10*time.Second, testutil.Tool(t, "dpkg-query", "dpkg"), "-W", "-f=${Version}", "openssh-server")))
	ran, failed, refused, connections, refusedConns := 0, 0, 0, 0, 0
	for i := range *sshdCases {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		c := genSSHD(*sshdSeed + uint64(i))
		root := t.TempDir()
		tree := map[string]any{"etc/ssh/ssh_host_ed25519_key": string(keyData)}
		for name, text := range c.files {
			tree["etc/ssh/"+name] = text
		}
		collecttest.WriteTree(t, root, tree)
		if err := os.Chmod(filepath.Join(root, "etc/ssh/ssh_host_ed25519_key"), 0o600); err != nil {
			t.Fatal(err)
		}
		truth, err := sshdEffective(sshd, unshare, root, t.TempDir(), c.options, "")
		if err != nil {
			// sshd checks what it reads ("any" alone, a method it has
			// turned off): a configuration it refuses runs no daemon, and
			// is not compared.
			refused++
			t.Logf("seed %d: sshd refuses the configuration: %v", c.seed, err)
			continue
		}
		ran++
		env := collecttest.NewEnv(t, root, false)
		cfg, err := LoadSSHDWith(env.FS, SSHDConfigPath, c.options)
		if err != nil {
			t.Errorf("seed %d: the reader refused what sshd read: %v\n%s", c.seed, err, c)
			continue
		}
		cfg.KexDefaults = kex
		settings := cfg.Settings(SSHDConfigPath)
		ds := compareEffective(settings, truth)
		// Per connection, what sshd applies under Match must be the
		// facts' global value or one a Match block of the facts sets,
		// which is what the checks judge.
		for _, conn := range connectionSpecs {
			truthC, err := sshdEffective(sshd, unshare, root, t.TempDir(), c.options, conn)
			if err != nil {
				// A Match block's settings are checked only when a
				// connection it matches applies them ("any" after
				// another list): sshd would refuse that connection.
				refusedConns++
				t.Logf("seed %d: sshd -T -C %s refuses the configuration: %v", c.seed, conn, err)
				continue
			}
			for _, d := range compareMatched(settings, truthC) {
				ds = append(ds, conn+": "+d)
			}
			connections++
		}
		if len(ds) > 0 {
			failed++
			t.Errorf("seed %d: %d keywords differ from sshd -T:\n\t%s\n%s", c.seed, len(ds), strings.Join(ds, "\n\t"), c)
		}
	}
	t.Logf("%d configurations from seed %d compared (and %d connections with sshd -T -C, %d more it refused), %d with a keyword that differs from sshd -T; %d refused by sshd",
		ran, *sshdSeed, connections, refusedConns, failed, refused)
	if ran == 0 {
		t.Error("no configuration sshd accepts was generated")
	}
}

// sshdEffective runs "sshd -T" on the case's tree, bound on /etc/ssh in a
// mount namespace of its own (with a private /run), and returns each
// keyword's lines.
func sshdEffective(sshd, unshare, root, run string, options []string, conn string) (map[string][]string, error) {
	argv := []string{sshd, "-T", "-f", "/etc/ssh/sshd_config"}
	if conn != "" {
		argv = append(argv, "-C", conn)
	}
	for _, o := range options {
		argv = append(argv, "-o", o)
	}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	script := fmt.Sprintf("mount --make-rprivate / && mount --bind '%s' /run && mkdir -p -m 0755 /run/sshd && mount --bind '%s' /etc/ssh && exec %s",
		run, filepath.Join(root, "etc/ssh"), strings.Join(quoted, " "))
	out, err := runFor(30*time.Second, unshare, "--mount", "sh", "-c", script)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	m := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			m[k] = append(m[k], v)
		}
	}
	return m, nil
}

// factsValues are the facts' global settings by sshd -T's keyword, as
// sshd -T spells them.
func factsValues(s facts.SSHSettings) map[string]string {
	root := s.PermitRootLogin
	if root == "prohibit-password" {
		// sshd -T prints the old spelling.
		root = "without-password"
	}
	m := map[string]string{
		"permitrootlogin":              root,
		"passwordauthentication":       s.PasswordAuthentication,
		"kbdinteractiveauthentication": s.KbdInteractiveAuthentication,
		"permitemptypasswords":         s.PermitEmptyPasswords,
		"usepam":                       s.UsePAM,
		"ciphers":                      strings.Join(s.Ciphers, ","),
		"kexalgorithms":                strings.Join(s.KexAlgorithms, ","),
		"macs":                         strings.Join(s.MACs, ","),
		"authenticationmethods":        strings.Join(s.AuthenticationMethods, " "),
		"allowgroups":                  strings.Join(s.AllowGroups, " "),
		"denyusers":                    strings.Join(s.DenyUsers, " "),
	}
	maps.Copy(m, s.Options)
	return m
}

// compareEffective lists the keywords whose facts differ from sshd -T.
func compareEffective(s facts.SSHSettings, truth map[string][]string) []string {
	one := func(k string) string {
		if v := truth[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	// sshd -T prints one line per AllowGroups or DenyUsers entry, and an
	// AuthenticationMethods list as one line.
	words := func(k string) string {
		var out []string
		for _, v := range truth[k] {
			out = append(out, strings.Fields(v)...)
		}
		return strings.Join(out, " ")
	}
	want := map[string][2]string{}
	for k, v := range factsValues(s) {
		theirs := one(k)
		if k == "allowgroups" || k == "denyusers" {
			theirs = words(k)
		}
		want[k] = [2]string{v, theirs}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if ours, theirs := want[k][0], want[k][1]; !strings.EqualFold(ours, theirs) {
			out = append(out, fmt.Sprintf("%s: facts %q, sshd -T %q", k, ours, theirs))
		}
	}
	return out
}

// connectionSpecs are the connections sshd -T -C is asked about: users,
// and addresses inside and outside the Match blocks the generator writes.
var connectionSpecs = []string{
	"user=alice,host=client.example,addr=10.1.2.3,laddr=10.0.0.1,lport=22",
	"user=root,host=client.example,addr=192.0.2.7,laddr=10.0.0.1,lport=22",
	"user=bob,host=client.example,addr=127.0.0.1,laddr=127.0.0.1,lport=22",
}

// compareMatched lists the keywords allowed under Match whose value for
// one connection (truth, sshd -T -C) is neither the facts' global value
// nor one that a Match block of the facts sets.
func compareMatched(s facts.SSHSettings, truth map[string][]string) []string {
	norm := func(k, v string) string {
		v = strings.ToLower(strings.TrimSpace(v))
		switch k {
		case "permitrootlogin":
			if v == "prohibit-password" {
				v = "without-password"
			}
		case "clientaliveinterval":
			if n, ok := sshdSeconds(v); ok {
				v = strconv.Itoa(n)
			}
		case "authenticationmethods", "allowgroups", "denyusers":
			// The facts keep a Match setting's first argument; sshd -T
			// prints the whole list.
			if f := strings.Fields(v); len(f) > 0 {
				v = f[0]
			}
		}
		return v
	}
	global := factsValues(s)
	var out []string
	for _, kw := range matchKeywords {
		k := strings.ToLower(kw)
		allowed := []string{norm(k, global[k])}
		for _, m := range s.Match {
			for _, set := range m.Settings {
				if set.Keyword == k {
					allowed = append(allowed, norm(k, set.Value))
				}
			}
		}
		var got string
		if v := truth[k]; len(v) > 0 {
			got = norm(k, v[0])
		}
		if !slices.Contains(allowed, got) {
			out = append(out, fmt.Sprintf("%s: sshd -T -C %q, the facts allow %q", k, got, allowed))
		}
	}
	return out
}

// runFor runs a command with a bound on its time and returns its output.
func runFor(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
