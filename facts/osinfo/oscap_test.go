package osinfo_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// ssgUbuntu2204 is ComplianceAsCode's data stream for Ubuntu 22.04, as the
// ssg-debderived package installs it.
const ssgUbuntu2204 = "/usr/share/xml/scap/ssg/content/ssg-ubuntu2204-ds.xml"

// cisLevel2Server is the profile OpenSCAP evaluates: Level 2 holds every
// Level 1 rule here and adds the network modules (dccp, rds, sctp, tipc).
const cisLevel2Server = "xccdf_org.ssgproject.content_profile_cis_level2_server"

// cisDisagreements are where OpenSCAP and gpuhost part ways on the trees,
// by tree and rule, each with why. On every other rule of every tree the
// two must agree. OpenSCAP's side is ComplianceAsCode's OVAL: each file is
// matched on its own, with no modprobe.d(5) or sysctl.d(5) precedence.
var cisDisagreements = map[string]map[string]string{
	"mixed": {
		"kernel_module_hfsplus_disabled":                    "gpuhost fails, OpenSCAP passes: the install line is in /usr/lib/modprobe.d/60-hfs.conf, which /etc/modprobe.d/60-hfs.conf hides from modprobe; OVAL reads the hidden file",
		"kernel_module_jffs2_disabled":                      "gpuhost fails, OpenSCAP passes: /etc/modprobe.d/jffs2.conf links to /dev/null and so masks /usr/lib/modprobe.d/jffs2.conf; OVAL reads the masked file",
		"kernel_module_usb-storage_disabled":                "gpuhost passes, OpenSCAP fails: \"install usb_storage /bin/true\" disables usb-storage, modprobe reading - and _ alike in a name; OVAL's pattern wants it spelt usb-storage",
		"kernel_module_rds_disabled":                        "gpuhost fails, OpenSCAP passes: modprobe obeys the first install line for rds, 10-rds.conf's \"/sbin/modprobe --ignore-install rds\"; OVAL takes any line with /bin/false",
		"sysctl_net_ipv4_conf_all_log_martians":             "gpuhost passes, OpenSCAP fails: the glob \"net.ipv4.conf.*.log_martians = 1\" sets it, as systemd-sysctl applies globs; OVAL matches the literal key only",
		"sysctl_net_ipv4_conf_all_rp_filter":                "gpuhost passes, OpenSCAP fails: procps' 10-network-security.conf sets 2 and 60-cis.conf sets 1 after it, which systemd-sysctl leaves in force; OVAL wants every line in every file to say 1",
		"sysctl_net_ipv4_conf_default_secure_redirects":     "gpuhost fails, OpenSCAP passes: its one line is in /usr/lib/sysctl.d/60-vendor.conf, which /etc/sysctl.d/60-vendor.conf hides from systemd-sysctl; OVAL reads the hidden file",
		"sysctl_net_ipv4_icmp_ignore_bogus_error_responses": "gpuhost passes, OpenSCAP fails: in \"-net.ipv4.icmp_ignore_bogus_error_responses = 1\" the - only tells systemd-sysctl to ignore a failure to set it; OVAL's pattern wants the line to start with the key",
	},
}

// TestOpenSCAPAgrees runs OpenSCAP (oscap-chroot, ComplianceAsCode's
// Ubuntu 22.04 content) on the trees the kernel checks judge and compares
// its result for each rule with the check's verdict on the rule's subject.
//
// oscap-chroot reads files from the tree, but its sysctl probe does not
// run offline: every sysctl rule's runtime half is "not applicable" (the
// test holds it so), which leaves the rule's result to its static half,
// the configuration files, as gpuhost judges an image. Nothing of the
// running machine's /proc enters either verdict.
func TestOpenSCAPAgrees(t *testing.T) {
	oscap := testutil.Tool(t, "oscap-chroot", "openscap-utils")
	testutil.File(t, ssgUbuntu2204, "ssg-debderived")
	// OpenSCAP's dpkginfo probe (libapt-pkg) reads dpkg's CPU tables from
	// the tree; without them every package reads as absent.
	cputable := testutil.File(t, "/usr/share/dpkg/cputable", "dpkg")
	tupletable := testutil.File(t, "/usr/share/dpkg/tupletable", "dpkg")
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "tree\trule\tgpuhost\topenscap\tagree")
	agree, total := 0, 0
	for _, name := range slices.Sorted(maps.Keys(cisTrees)) {
		dir := collecttest.TempTreeOf(t, cisTrees[name]())
		ours := verdicts(judge(t, collectTree(t, dir, false)))
		addOscapScaffold(t, dir, cputable, tupletable)
		theirs := runOscap(t, oscap, dir)
		for _, r := range cisRules {
			total++
			why, expected := cisDisagreements[name][r.id]
			same := ours[r.id] == theirs[r.id]
			if same {
				agree++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", name, r.id, ours[r.id], theirs[r.id], same)
			switch {
			case same && expected:
				t.Errorf("%s %s: both %s, yet a disagreement is listed: %s", name, r.id, ours[r.id], why)
			case !same && !expected:
				t.Errorf("%s %s (%s %s): gpuhost %s, OpenSCAP %s, and no reason is listed", name, r.id, r.check, r.subject, ours[r.id], theirs[r.id])
			}
		}
	}
	tw.Flush()
	t.Logf("gpuhost and OpenSCAP agree on %d of %d rule verdicts:\n%s", agree, total, table.String())
	for tree, rules := range cisDisagreements {
		for _, id := range slices.Sorted(maps.Keys(rules)) {
			t.Logf("disagreement, %s %s: %s", tree, id, rules[id])
		}
	}
}

// addOscapScaffold adds what OpenSCAP's dpkginfo probe needs to read the
// tree's dpkg database: apt's directories and dpkg's CPU tables. None of
// it is read by the kernel checks' collectors.
func addOscapScaffold(t *testing.T, dir, cputable, tupletable string) {
	t.Helper()
	tables := map[string]any{}
	for name, src := range map[string]string{"usr/share/dpkg/cputable": cputable, "usr/share/dpkg/tupletable": tupletable} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		tables[name] = data
	}
	for _, d := range []string{"etc/apt/apt.conf.d/", "etc/apt/preferences.d/", "etc/apt/sources.list.d/", "var/lib/apt/lists/partial/",
		"var/cache/apt/archives/partial/", "var/lib/dpkg/updates/", "var/lib/dpkg/info/"} {
		tables[d] = nil
	}
	tables["etc/apt/sources.list"] = ""
	tables["var/lib/dpkg/available"] = ""
	collecttest.WriteTree(t, dir, tables)
}

// runOscap evaluates the cisRules on the tree and returns each rule's
// result, having checked that no sysctl rule's runtime half was judged.
func runOscap(t *testing.T, oscap, dir string) map[string]string {
	t.Helper()
	out := t.TempDir()
	// The probe's libapt-pkg reads the scanning machine's
	// /etc/apt/apt.conf.d even under oscap-chroot; a container image's
	// docker-clean there (Dir::Cache::pkgcache "") breaks its cache, and
	// every package reads as absent. APT_CONFIG keeps those parts out.
	aptConf := filepath.Join(out, "apt.conf")
	if err := os.WriteFile(aptConf, []byte("Dir::Etc::parts \""+filepath.Join(out, "no-apt-parts")+"\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{dir, "xccdf", "eval", "--profile", cisLevel2Server, "--results", filepath.Join(out, "results.xml"), "--oval-results"}
	for _, r := range cisRules {
		args = append(args, "--rule", "xccdf_org.ssgproject.content_rule_"+r.id)
	}
	args = append(args, ssgUbuntu2204)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oscap, args...)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "APT_CONFIG="+aptConf)
	stdout, err := cmd.CombinedOutput()
	// oscap exits 2 when a rule fails, which is no error here.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) {
		t.Fatalf("oscap-chroot: %v\n%s", err, stdout)
	}
	results := ruleResults(t, filepath.Join(out, "results.xml"))
	defs := definitionResults(t, filepath.Join(out, "ssg-ubuntu2204-oval.xml.result.xml"))
	for _, r := range cisRules {
		if _, ok := results[r.id]; !ok {
			t.Fatalf("OpenSCAP gave no result for %s", r.id)
		}
		if !strings.HasPrefix(r.id, "sysctl_") {
			continue
		}
		if got := defs["oval:ssg-"+r.id+"_runtime:def:1"]; got != "not applicable" {
			t.Errorf("%s: OpenSCAP judged the running kernel (%q) under oscap-chroot; this test compares the static half only", r.id, got)
		}
	}
	return results
}

// ruleResults reads each rule's result from XCCDF results.
func ruleResults(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	each(t, file, "rule-result", func(d *xml.Decoder, se xml.StartElement) error {
		var rr struct {
			IDRef  string `xml:"idref,attr"`
			Result string `xml:"result"`
		}
		if err := d.DecodeElement(&rr, &se); err != nil {
			return err
		}
		if id, ok := strings.CutPrefix(rr.IDRef, "xccdf_org.ssgproject.content_rule_"); ok && rr.Result != "notselected" {
			out[id] = rr.Result
		}
		return nil
	})
	return out
}

// definitionResults reads each OVAL definition's result.
func definitionResults(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	each(t, file, "definition", func(_ *xml.Decoder, se xml.StartElement) error {
		var id, result string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "definition_id":
				id = a.Value
			case "result":
				result = a.Value
			}
		}
		if id != "" {
			out[id] = result
		}
		return nil
	})
	return out
}

// each calls fn on every element of an XML file with the given local name.
func each(t *testing.T, file, local string, fn func(*xml.Decoder, xml.StartElement) error) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == local {
			if err := fn(d, se); err != nil {
				t.Fatalf("reading %s: %v", file, err)
			}
		}
	}
}
