package ubunturepo

import (
	"fmt"
	"regexp"
	"strings"
)

// Reversion is the version a Debian package is published at in suite's
// release: Debian's version with "ubuntu0.<release>.<build>" appended,
// build 1 in the release pocket and 2 for a newer build in -updates
// (1:9.2p1-2+deb12u5 becomes 1:9.2p1-2+deb12u5ubuntu0.22.04.1 in jammy),
// the shape of Ubuntu's stable release updates.
//
// Appending letters keeps every version above Debian's own (dpkg sorts the
// end of a version before any letter), and the suffix is the same for
// every package of a pocket, so a relation keeps its meaning when only the
// versions it names exactly are rewritten (rewriteRelations): a lower
// bound below a package's version stays below it, and an upper bound
// above it differs from it before the suffix begins.
func Reversion(debian, suite string, build int) string {
	return fmt.Sprintf("%subuntu0.%s.%d", debian, releases[suite].number, build)
}

// relationFields are the control fields whose values are lists of
// package relations.
var relationFields = []string{"Depends", "Pre-Depends", "Recommends", "Suggests", "Enhances", "Breaks", "Conflicts", "Replaces", "Provides"}

// relation matches one package name of a relation with its optional
// architecture qualifier and version restriction.
var relation = regexp.MustCompile(`([a-z0-9][a-z0-9+.-]+)(:[a-z0-9-]+)?(\s*\(\s*(<<|<=|=|>=|>>|<|>)\s*([^)\s]+)\s*\))?`)

// rewriteRelations rewrites a relation field: a package renamed (renames)
// takes its new name, and a version restriction that names exactly the
// version a package was re-versioned from (versions: name -> old -> new)
// names its new one instead.
func rewriteRelations(value string, renames map[string]string, versions map[string][2]string) string {
	return relation.ReplaceAllStringFunc(value, func(m string) string {
		sub := relation.FindStringSubmatch(m)
		name, arch, restriction, op, ver := sub[1], sub[2], sub[3], sub[4], sub[5]
		if n, ok := renames[name]; ok {
			name = n
		}
		if restriction == "" {
			return name + arch
		}
		if v, ok := versions[name]; ok && v[0] == ver {
			ver = v[1]
		}
		return fmt.Sprintf("%s%s (%s %s)", name, arch, op, ver)
	})
}

// rewriteControl gives a stanza its new version and rewrites its
// relations; Source's version, which names the source package's, stays.
func rewriteControl(s stanza, version string, renames map[string]string, versions map[string][2]string) stanza {
	s = s.set("Version", version)
	for i, f := range s {
		for _, r := range relationFields {
			if strings.EqualFold(f.name, r) {
				s[i].value = rewriteRelations(f.value, renames, versions)
			}
		}
	}
	return s
}

// kernelMetaVersion is the version Ubuntu gives its kernel meta packages
// for a kernel release: 6.1.0-50-amd64 -> 6.1.0.50.50 (Ubuntu's
// 5.15.0-153-generic has linux-image-generic 5.15.0.153.153).
func kernelMetaVersion(kernel string) (string, error) {
	parts := strings.SplitN(kernel, "-", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || strings.Trim(parts[1], "0123456789") != "" {
		return "", fmt.Errorf("ubunturepo: kernel release %q is not VERSION-ABI-FLAVOUR (6.1.0-50-amd64)", kernel)
	}
	return fmt.Sprintf("%s.%s.%s", parts[0], parts[1], parts[1]), nil
}
