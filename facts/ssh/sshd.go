package ssh

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	version "github.com/knqyf263/go-deb-version"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// sshdConfigDir is where sshd resolves relative Include paths.
const sshdConfigDir = "/etc/ssh"

// OpenSSH 9.6p1 defaults (Ubuntu 24.04; 9.x changed none of these three
// lists before 9.9 added mlkem768x25519-sha256 to the key exchange), from
// sshd_config(5). They apply when a file leaves the keyword unset, and are the
// base that "+", "-" and "^" lists modify.
var (
	DefaultSSHCiphers = []string{
		"chacha20-poly1305@openssh.com",
		"aes128-ctr", "aes192-ctr", "aes256-ctr",
		"aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
	}
	DefaultSSHKexAlgorithms = []string{
		"sntrup761x25519-sha512@openssh.com",
		"curve25519-sha256", "curve25519-sha256@libssh.org",
		"ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521",
		"diffie-hellman-group-exchange-sha256",
		"diffie-hellman-group16-sha512", "diffie-hellman-group18-sha512",
		"diffie-hellman-group14-sha256",
	}
	DefaultSSHMACs = []string{
		"umac-64-etm@openssh.com", "umac-128-etm@openssh.com",
		"hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com",
		"hmac-sha1-etm@openssh.com",
		"umac-64@openssh.com", "umac-128@openssh.com",
		"hmac-sha2-256", "hmac-sha2-512", "hmac-sha1",
	}
	DefaultSSHHostKeyAlgorithms = []string{
		"ssh-ed25519-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
		"sk-ssh-ed25519-cert-v01@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
		"rsa-sha2-512-cert-v01@openssh.com", "rsa-sha2-256-cert-v01@openssh.com",
		"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
		"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
		"rsa-sha2-512", "rsa-sha2-256",
	}
)

// sshdAliases maps deprecated keywords onto the option they set, so that
// first-value-wins applies across both spellings as it does in sshd.
var sshdAliases = map[string]string{
	"challengeresponseauthentication": "kbdinteractiveauthentication",
}

// sshdAccumulates are the keywords whose lines add to one list instead of
// the first line winning.
var sshdAccumulates = map[string]bool{
	"allowgroups": true, "denygroups": true, "allowusers": true, "denyusers": true,
}

// SSHDConfig is sshd_config's global settings after Include, first value
// winning, and its Match blocks.
type SSHDConfig struct {
	// Values maps a lower-case keyword to the arguments it first had.
	Values map[string][]string
	// Explicit lists the lower-case keywords set outside Match, as written
	// and as their canonical name, sorted.
	Explicit []string
	// Locations maps each canonical keyword of Explicit to the file and
	// line its value came from.
	Locations map[string]collect.FileLine
	// Files lists the files read, the main one first, with display paths.
	Files []string
	// Match lists the Match blocks in the order sshd reads them.
	Match []facts.SSHMatch
	// HostKeys lists every HostKey outside Match: unlike most keywords,
	// each one adds a key.
	HostKeys []string
	// KexDefaults are the key exchange algorithms of the sshd that reads
	// the file, for a file that does not set KexAlgorithms; nil is
	// DefaultSSHKexAlgorithms (see KexDefaultsFor).
	KexDefaults []string
	// paths are the files of Files as the source names them, to stat, and
	// includeDirs the folders Include patterns look in.
	paths       []string
	includeDirs []string
}

// ParseSSHD parses one sshd_config buffer; Include lines are not followed.
func ParseSSHD(data []byte) (*SSHDConfig, error) {
	p := newSSHDParser(textfile.NoSource{})
	if err := p.parse("sshd_config", data, 0); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// LoadSSHD reads name from src and follows Include lines (globs, relative to
// /etc/ssh), to a bounded depth.
func LoadSSHD(src textfile.Source, name string) (*SSHDConfig, error) {
	return LoadSSHDWith(src, name, nil)
}

// LoadSSHDWith is LoadSSHD for a daemon started with "-o keyword=value"
// options: sshd reads them before the file, so they win over it.
func LoadSSHDWith(src textfile.Source, name string, options []string) (*SSHDConfig, error) {
	data, err := textfile.ReadText(src, name)
	if err != nil {
		return nil, err
	}
	p := newSSHDParser(src)
	for i, o := range options {
		if err := p.line(sshdCommandLine, i+1, o, 0); err != nil {
			return nil, fmt.Errorf("parsing sshd option %q: %w", o, err)
		}
	}
	if err := p.parse(name, data, 0); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// sshdCommandLine names the origin of "-o" options in Match settings.
const sshdCommandLine = "(command line)"

// maxSSHDMatch bounds the Match blocks and the settings one configuration
// records.
const maxSSHDMatch = 4096

type sshdParser struct {
	src      textfile.Source
	cfg      *SSHDConfig
	explicit map[string]bool
	// match is the index in cfg.Match of the block the lines now belong
	// to, plus one; 0 outside Match. An index, not a pointer, because the
	// slice moves as it grows while an include's caller still holds it.
	match    int
	settings int
}

func newSSHDParser(src textfile.Source) *sshdParser {
	return &sshdParser{src: src, cfg: &SSHDConfig{Values: map[string][]string{}, Locations: map[string]collect.FileLine{}}, explicit: map[string]bool{}}
}

func (p *sshdParser) finish() *SSHDConfig {
	p.cfg.Explicit = make([]string, 0, len(p.explicit))
	for k := range p.explicit {
		p.cfg.Explicit = append(p.cfg.Explicit, k)
	}
	slices.Sort(p.cfg.Explicit)
	return p.cfg
}

func (p *sshdParser) parse(name string, data []byte, depth int) error {
	display := p.src.Display(name)
	p.cfg.Files = append(p.cfg.Files, display)
	p.cfg.paths = append(p.cfg.paths, name)
	// As in sshd, a Match opened in an included file ends with that file.
	saved := p.match
	defer func() { p.match = saved }()
	for i, line := range strings.Split(string(data), "\n") {
		if err := p.line(display, i+1, line, depth); err != nil {
			return fmt.Errorf("parsing %s:%d: %w", display, i+1, err)
		}
	}
	return nil
}

func (p *sshdParser) line(file string, lineNo int, line string, depth int) error {
	s := strings.Trim(line, " \t\r\f\v")
	if s == "" || s[0] == '#' {
		return nil
	}
	end := strings.IndexAny(s, " \t=")
	if end < 0 {
		end = len(s)
	}
	keyword := strings.ToLower(s[:end])
	rest := strings.TrimLeft(s[end:], " \t")
	if strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], " \t")
	}
	if keyword == "" {
		return errors.New("missing keyword")
	}
	args, err := splitSSHArgs(rest)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("%s: missing argument", keyword)
	}
	if canon, ok := sshdAliases[keyword]; ok {
		if p.match == 0 {
			p.explicit[keyword] = true
		}
		keyword = canon
	}
	switch keyword {
	case "match":
		return p.openMatch(file, lineNo, args)
	case "include":
		// Inside a Match, what the files say applies under that Match.
		return p.include(args, depth)
	}
	if p.match != 0 {
		return p.matchSetting(file, lineNo, keyword, args)
	}
	p.explicit[keyword] = true
	if _, seen := p.cfg.Locations[keyword]; !seen {
		p.cfg.Locations[keyword] = collect.FileLine{File: file, Line: lineNo}
	}
	if keyword == "hostkey" {
		p.cfg.HostKeys = append(p.cfg.HostKeys, args[0])
		return nil
	}
	if keyword == "maxstartups" {
		// sshd reads every MaxStartups line, each over the last: a single
		// number sets start and full and keeps the rate.
		prev := SSHOptionDefaults["maxstartups"]
		if v := p.cfg.Values[keyword]; len(v) > 0 {
			prev = v[0]
		}
		p.cfg.Values[keyword] = []string{overMaxStartups(prev, args[0])}
		p.cfg.Locations[keyword] = collect.FileLine{File: file, Line: lineNo}
		return nil
	}
	if sshdAccumulates[keyword] {
		p.cfg.Values[keyword] = append(p.cfg.Values[keyword], args...)
		return nil
	}
	if _, seen := p.cfg.Values[keyword]; !seen {
		p.cfg.Values[keyword] = args
	}
	return nil
}

func (p *sshdParser) openMatch(file string, lineNo int, args []string) error {
	if len(p.cfg.Match) >= maxSSHDMatch {
		return fmt.Errorf("more than %d Match blocks", maxSSHDMatch)
	}
	p.cfg.Match = append(p.cfg.Match, facts.SSHMatch{File: file, Line: lineNo, Criteria: strings.Join(args, " "), Settings: []facts.SSHSetting{}})
	p.match = len(p.cfg.Match)
	return nil
}

func (p *sshdParser) matchSetting(file string, lineNo int, keyword string, args []string) error {
	if p.settings++; p.settings > maxSSHDMatch {
		return fmt.Errorf("more than %d settings under Match", maxSSHDMatch)
	}
	m := &p.cfg.Match[p.match-1]
	m.Settings = append(m.Settings, facts.SSHSetting{Keyword: keyword, Value: canonicalValue(keyword, strings.Join(args, " ")), File: file, Line: lineNo})
	return nil
}

func (p *sshdParser) include(patterns []string, depth int) error {
	if depth+1 > textfile.MaxIncludeDepth {
		return fmt.Errorf("Include nested deeper than %d", textfile.MaxIncludeDepth)
	}
	for _, pat := range patterns {
		// A glob's folder holds drop-ins: removing one changes it.
		if dir := path.Dir(pat); strings.ContainsAny(path.Base(pat), "*?[") {
			if !path.IsAbs(dir) {
				dir = path.Join(sshdConfigDir, dir)
			}
			if !slices.Contains(p.cfg.includeDirs, dir) && len(p.cfg.includeDirs) < textfile.MaxIncludeFiles {
				p.cfg.includeDirs = append(p.cfg.includeDirs, dir)
			}
		}
		files, err := textfile.GlobSorted(p.src, sshdConfigDir, pat)
		if err != nil {
			return err
		}
		for _, f := range files {
			if len(p.cfg.Files) >= textfile.MaxIncludeFiles {
				return fmt.Errorf("Include: more than %d files", textfile.MaxIncludeFiles)
			}
			data, err := textfile.ReadText(p.src, f)
			if err != nil {
				if sysroot.IsNotExist(err) {
					// sshd ignores an Include that matches nothing.
					continue
				}
				return err
			}
			if err := p.parse(f, data, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitSSHArgs splits arguments as OpenSSH's argv_split does: whitespace
// separates, double or single quotes group, a backslash escapes a quote, a
// backslash or a space, and a # at the start of a word ends the line.
func splitSSHArgs(s string) ([]string, error) {
	var args []string
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '#' {
			break
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c = s[i]
			if quote == 0 && (c == ' ' || c == '\t') {
				break
			}
			if c == '\\' && i+1 < len(s) && strings.IndexByte("\"'\\ ", s[i+1]) >= 0 {
				i++
				b.WriteByte(s[i])
				continue
			}
			switch {
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote != 0 && c == quote:
				quote = 0
			default:
				b.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, errors.New("unterminated quote")
		}
		args = append(args, b.String())
	}
	return args, nil
}

// first returns the first argument of keyword, lower-cased, or def.
func (c *SSHDConfig) first(keyword, def string) string {
	if v := c.Values[keyword]; len(v) > 0 {
		return strings.ToLower(v[0])
	}
	return def
}

// Facts turns the settings into the ssh facts, with OpenSSH's defaults for
// what the files leave unset. configPath is the display path of sshd_config.
func (c *SSHDConfig) Facts(configPath string) *facts.SSH {
	return &facts.SSH{SSHSettings: c.Settings(configPath), Source: "file"}
}

// withMatchAll is the configuration a connection gets whatever its user,
// host and address: the global settings, with those of "Match all" blocks
// over them. sshd gives a connection the first value a matching block
// sets for each keyword, over the global one, and "-o" options too.
func (c *SSHDConfig) withMatchAll() *SSHDConfig {
	e := *c
	e.Values, e.Locations = maps.Clone(c.Values), maps.Clone(c.Locations)
	e.Explicit = slices.Clone(c.Explicit)
	set := map[string]bool{}
	for _, m := range c.Match {
		if !strings.EqualFold(strings.TrimSpace(m.Criteria), "all") {
			continue
		}
		for _, st := range m.Settings {
			args := strings.Fields(st.Value)
			switch {
			case sshdAccumulates[st.Keyword] && set[st.Keyword]:
				e.Values[st.Keyword] = append(e.Values[st.Keyword], args...)
				continue
			case set[st.Keyword]:
				continue
			}
			set[st.Keyword] = true
			e.Values[st.Keyword] = args
			e.Locations[st.Keyword] = collect.FileLine{File: st.File, Line: st.Line}
			if !slices.Contains(e.Explicit, st.Keyword) {
				e.Explicit = append(e.Explicit, st.Keyword)
			}
		}
	}
	slices.Sort(e.Explicit)
	return &e
}

// Settings is what Facts fills, for one daemon or the file: what any
// connection gets (the global settings and "Match all" blocks over them),
// and the Match blocks as they are.
func (c *SSHDConfig) Settings(configPath string) facts.SSHSettings {
	match := c.Match
	c = c.withMatchAll()
	root := c.first("permitrootlogin", "prohibit-password")
	if root == "without-password" {
		// The old spelling of the same setting.
		root = "prohibit-password"
	}
	return facts.SSHSettings{
		ConfigPath:                   configPath,
		Files:                        append([]string{}, c.Files...),
		PermitRootLogin:              root,
		PasswordAuthentication:       c.first("passwordauthentication", "yes"),
		KbdInteractiveAuthentication: c.first("kbdinteractiveauthentication", "yes"),
		PermitEmptyPasswords:         c.first("permitemptypasswords", "no"),
		Ciphers:                      c.algorithms("ciphers", DefaultSSHCiphers),
		KexAlgorithms:                c.algorithms("kexalgorithms", c.kexDefaults()),
		MACs:                         c.algorithms("macs", DefaultSSHMACs),
		HostKeyAlgorithms:            c.algorithms("hostkeyalgorithms", DefaultSSHHostKeyAlgorithms),
		UsePAM:                       c.first("usepam", "no"),
		AuthenticationMethods:        c.list("authenticationmethods", []string{"any"}),
		AllowGroups:                  c.list("allowgroups", []string{}),
		DenyGroups:                   c.list("denygroups", []string{}),
		AllowUsers:                   c.list("allowusers", []string{}),
		DenyUsers:                    c.list("denyusers", []string{}),
		Explicit:                     append([]string{}, c.Explicit...),
		Options:                      c.options(),
		Locations:                    maps.Clone(c.Locations),
		Match:                        slices.Clone(match),
	}
}

// SSHOptionDefaults are the options Settings reports in Options, with
// OpenSSH's defaults (sshd_config(5) of OpenSSH 8.9 and 9.x) for a file
// that does not set them.
var SSHOptionDefaults = map[string]string{
	"allowtcpforwarding":      "yes",
	"clientalivecountmax":     "3",
	"clientaliveinterval":     "0",
	"hostbasedauthentication": "no",
	"ignorerhosts":            "yes",
	"logingracetime":          "120",
	"loglevel":                "info",
	"maxauthtries":            "6",
	"maxsessions":             "10",
	"maxstartups":             "10:30:100",
	"permituserenvironment":   "no",
	"x11forwarding":           "no",
}

// options is each of SSHOptionDefaults' keywords' first value, else its
// default, written as sshd -T writes it.
func (c *SSHDConfig) options() map[string]string {
	out := make(map[string]string, len(SSHOptionDefaults))
	for k, def := range SSHOptionDefaults {
		out[k] = canonicalValue(k, c.first(k, def))
	}
	return out
}

// sshdTimes are the options whose value is a time, which sshd -T prints
// in seconds.
var sshdTimes = map[string]bool{"clientaliveinterval": true, "logingracetime": true}

// canonicalValue writes a value as sshd -T does: a time in seconds
// ("5m" is 300), MaxStartups in full ("20" is 20:30:20). A value sshd would
// refuse is left as written.
func canonicalValue(keyword, v string) string {
	switch {
	case sshdTimes[keyword]:
		if n, ok := sshdSeconds(v); ok {
			return strconv.Itoa(n)
		}
	case keyword == "loglevel" && strings.EqualFold(v, "quiet"):
		// sshd -T names the quiet level SILENT.
		return "SILENT"
	}
	return v
}

// overMaxStartups is MaxStartups start:rate:full after a line setting v
// over prev: "a:b:c" replaces all three, "n" start and full. A value sshd
// would refuse replaces prev as written.
func overMaxStartups(prev, v string) string {
	parts := strings.Split(v, ":")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return v
		}
	}
	switch len(parts) {
	case 3:
		return v
	case 1:
		old := strings.Split(prev, ":")
		if len(old) != 3 {
			old = []string{"10", "30", "100"}
		}
		return v + ":" + old[1] + ":" + v
	}
	return v
}

// sshdSeconds reads OpenSSH's time format (sshd_config(5), TIME FORMATS):
// a number of seconds, or numbers each followed by s, m, h, d or w, in
// either case, added up ("1h30m").
func sshdSeconds(v string) (int, bool) {
	if v == "" {
		return 0, false
	}
	units := map[byte]int{'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800}
	total, n, digits := 0, 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + int(c-'0')
			if digits++; digits > 9 {
				return 0, false
			}
		case digits > 0 && units[c|0x20] != 0:
			total += n * units[c|0x20]
			n, digits = 0, 0
		default:
			return 0, false
		}
	}
	if total+n > math.MaxInt32 {
		return 0, false
	}
	return total + n, true
}

// debianKexAlias is the first openssh-server of Debian 12 that offers
// sntrup761x25519-sha512 under that name too (its changelog: "available
// without the @openssh.com suffix too").
const debianKexAlias = "1:9.2p1-2+deb12u4"

// KexDefaultsFor is the default KexAlgorithms of an openssh-server
// package version ("" when not known: DefaultSSHKexAlgorithms).
func KexDefaultsFor(pkgVersion string) []string {
	v, err := version.NewVersion(pkgVersion)
	if pkgVersion == "" || err != nil || !strings.HasPrefix(pkgVersion, "1:9.2p1-") {
		return slices.Clone(DefaultSSHKexAlgorithms)
	}
	alias, _ := version.NewVersion(debianKexAlias)
	if v.LessThan(alias) {
		return slices.Clone(DefaultSSHKexAlgorithms)
	}
	return slices.Insert(slices.Clone(DefaultSSHKexAlgorithms), 0, "sntrup761x25519-sha512")
}

func (c *SSHDConfig) kexDefaults() []string {
	if c.KexDefaults != nil {
		return c.KexDefaults
	}
	return DefaultSSHKexAlgorithms
}

// list returns every argument keyword had, or def.
func (c *SSHDConfig) list(keyword string, def []string) []string {
	if v := c.Values[keyword]; len(v) > 0 {
		return slices.Clone(v)
	}
	return def
}

func (c *SSHDConfig) algorithms(keyword string, defaults []string) []string {
	v := c.Values[keyword]
	if len(v) == 0 {
		return append([]string{}, defaults...)
	}
	return AssembleAlgorithms(v[0], defaults)
}

// AssembleAlgorithms applies an OpenSSH algorithm list to the defaults: a
// plain list replaces them, "+list" appends, "^list" prepends, and "-list"
// removes the defaults matching any of its wildcard patterns.
func AssembleAlgorithms(spec string, defaults []string) []string {
	op := byte(0)
	if spec != "" && strings.IndexByte("+-^", spec[0]) >= 0 {
		op, spec = spec[0], spec[1:]
	}
	var items []string
	for _, s := range strings.Split(spec, ",") {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	out := []string{}
	add := func(list []string) {
		for _, s := range list {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	switch op {
	case '+':
		add(defaults)
		add(items)
	case '^':
		add(items)
		add(defaults)
	case '-':
		for _, d := range defaults {
			drop := false
			for _, pat := range items {
				if ok, err := path.Match(pat, d); err == nil && ok {
					drop = true
					break
				}
			}
			if !drop {
				add([]string{d})
			}
		}
	default:
		add(items)
	}
	return out
}
