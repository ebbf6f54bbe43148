package rootfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Bounds on reading the build machine's apt sources: they are small, and a
// runaway file must not stall Prepare.
const (
	maxSourceFiles = 256
	maxSourceBytes = 1 << 20
)

// aptSource is one archive the build machine's apt is configured with.
type aptSource struct {
	uri    string
	suites []string
}

// debianSuites are the Debian release names and aliases; a mirror that serves
// any of them serves every Debian suite.
var debianSuites = []string{"buster", "bullseye", "bookworm", "trixie", "forky", "sid", "oldoldstable", "oldstable", "stable", "testing", "unstable"}

// hostMirror returns the archive URL of the build machine's apt sources under
// root that serves suite of dist. Security archives are skipped: they carry
// only updates.
func hostMirror(root, dist, suite string) (string, error) {
	srcs, err := readAptSources(root)
	if err != nil {
		return "", err
	}
	var fallback string
	for _, s := range srcs {
		if isSecurity(s) {
			continue
		}
		for _, su := range s.suites {
			if su == suite || strings.HasPrefix(su, suite+"-") {
				return s.uri, nil
			}
			base, _, _ := strings.Cut(su, "-")
			if fallback == "" && dist == "debian" && slices.Contains(debianSuites, base) {
				fallback = s.uri
			}
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	return "", fmt.Errorf("no apt source of this machine (%s) serves %s", filepath.Join(root, "etc/apt"), suite)
}

func isSecurity(s aptSource) bool {
	if strings.HasSuffix(strings.TrimSuffix(s.uri, "/"), "-security") {
		return true
	}
	for _, su := range s.suites {
		if !strings.HasSuffix(su, "-security") && !strings.HasSuffix(su, "/updates") {
			return false
		}
	}
	return len(s.suites) > 0
}

// readAptSources reads the deb822 .sources files, then sources.list and the
// .list files, in apt's order. Only "deb" entries count; deb-src ones do not
// carry binary packages.
func readAptSources(root string) ([]aptSource, error) {
	dir := filepath.Join(root, "etc/apt/sources.list.d")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var deb822, oneLine []string
	for i, e := range entries {
		if i >= maxSourceFiles {
			break
		}
		switch {
		case !e.Type().IsRegular():
		case strings.HasSuffix(e.Name(), ".sources"):
			deb822 = append(deb822, filepath.Join(dir, e.Name()))
		case strings.HasSuffix(e.Name(), ".list"):
			oneLine = append(oneLine, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(deb822)
	sort.Strings(oneLine)
	oneLine = append([]string{filepath.Join(root, "etc/apt/sources.list")}, oneLine...)

	var out []aptSource
	for _, f := range deb822 {
		data, err := readBounded(f)
		if err != nil {
			return nil, err
		}
		out = append(out, parseDeb822Sources(data)...)
	}
	for _, f := range oneLine {
		data, err := readBounded(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, parseOneLineSources(data)...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no apt sources found under %s", filepath.Join(root, "etc/apt"))
	}
	return out, nil
}

func readBounded(name string) ([]byte, error) { return readFileBounded(name, maxSourceBytes) }

// parseDeb822Sources reads stanzas of Types/URIs/Suites fields separated by
// blank lines. Fields may continue on indented lines; "Enabled: no" stanzas
// are skipped.
func parseDeb822Sources(data []byte) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	var last string
	flush := func() {
		defer clear(fields)
		if strings.EqualFold(fields["enabled"], "no") || !slices.Contains(strings.Fields(fields["types"]), "deb") {
			return
		}
		suites := strings.Fields(fields["suites"])
		for _, uri := range strings.Fields(fields["uris"]) {
			out = append(out, aptSource{uri: uri, suites: suites})
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxSourceBytes)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			flush()
			last = ""
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				last = ""
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

// parseOneLineSources reads "deb [options] URI SUITE [COMPONENT...]" lines.
func parseOneLineSources(data []byte) []aptSource {
	var out []aptSource
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxSourceBytes)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			// Options run to the first field that ends the bracket.
			i := slices.IndexFunc(f, func(s string) bool { return strings.HasSuffix(s, "]") })
			if i < 0 {
				continue
			}
			f = f[i+1:]
		}
		if len(f) < 2 {
			continue
		}
		out = append(out, aptSource{uri: f[0], suites: []string{f[1]}})
	}
	return out
}
