package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses, shared by the commands that judge (scan, drift, verify)
// and by those that only read or write (facts, sbom, policy list).
const (
	exitJudging = `0  nothing failed at or above --fail-on (and, with --fail-on-skip, every check at or above it reached a verdict)
1  a check failed at or above --fail-on (or --exit-code N, when given)
2  the verdict cannot be trusted: bad input, a collector that failed, a check that errored, a policy that does not compile, a mistyped command or flag`
	exitPlain = `0  done
2  it could not be done: bad input, an unreadable target, a mistyped command or flag`
	exitChecking = `0  the checks pass
1  one fails: each failure is printed
2  the input could not be read, or a mistyped command or flag`
)

// helpExample is a command's examples and exit status, as its --help and
// man page print them.
type helpExample struct {
	example string
	exit    string
}

// examples are keyed by the command's path below gpuhost. Every command
// that runs has one; TestExamplesRun holds each example's subcommands and
// flags to the command tree, so an example cannot name what is gone.
var examples = map[string]helpExample{
	"": {`  gpuhost scan rootfs out/rootfs --params images/params-debian-12.yaml
  gpuhost scan --help`, exitJudging},
	"scan rootfs": {`  # the pre-deploy gate over a baked tree, with the image's params and waivers
  gpuhost scan rootfs out/rootfs --params images/params-debian-12.yaml --waivers images/waivers-debian-12.yaml
  # an advisory run that still exits 2 when it cannot be trusted, with reports for CI
  gpuhost scan rootfs out/rootfs --fail-on none --report sarif=out/scan.sarif --report junit=out/scan.xml
  # only the sshd and TLS checks, and the CIS Level 1 controls they answer
  gpuhost scan rootfs out/rootfs --checks ssh,tls --compliance cis-ubuntu-22.04-l1-server`, exitJudging},
	"scan image": {`  gpuhost scan image out/debian-12-gpu/disk.qcow2 --params images/params-debian-12.yaml
  # a root inside LUKS: its files from the tree it was made from
  gpuhost scan image out/debian-12-gpu/disk.qcow2 --rootfs out/debian-12-gpu/rootfs --format sarif -o out/scan.sarif`, exitJudging},
	"scan host": {`  # the running host, as root: live probes, loaded modules, the kernel's values
  sudo gpuhost scan host --params /etc/gpuhost/params.yaml --fail-on high
  gpuhost scan host --host-root /host --format json -o /var/lib/gpuhost/scan.json`, exitJudging},
	"scan facts": {`  gpuhost facts rootfs out/rootfs > out/facts.json
  gpuhost scan facts out/facts.json --params images/params-debian-12.yaml
  # a fleet's saved documents, one NDJSON report each, and one table of all
  gpuhost scan facts hosts/*.json --format json > out/reports.ndjson
  gpuhost scan facts hosts/*.json --summary`, exitJudging},
	"facts rootfs": {`  gpuhost facts rootfs out/rootfs > out/facts.json`, exitPlain},
	"facts image":  {`  gpuhost facts image out/debian-12-gpu/disk.qcow2 --rootfs out/debian-12-gpu/rootfs > out/facts.json`, exitPlain},
	"facts host":   {`  sudo gpuhost facts host > host.json`, exitPlain},
	"drift": {`  # what changed on this host since the bake its manifest records
  sudo gpuhost drift --baseline /etc/gpuhost/manifest.json --params /etc/gpuhost/params.yaml
  gpuhost drift --baseline out/manifest.json --rootfs out/rootfs --format json`, exitJudging},
	"verify": {`  gpuhost verify 127.0.0.1:5055/gpuhost/debian-12-gpu@sha256:<digest> --key out/cosign.pub
  # refuse a report older than a week, or one that fails at medium
  gpuhost verify REGISTRY/REPO@sha256:<digest> --key cosign.pub --max-age 7d --fail-on medium`, `0  verified and accepted
1  verified, but the report fails at --fail-on, was made with another policy, or is too old
2  bad input, no or a bad signature or provenance, missing or tampered evidence, a registry too
   slow, or a mistyped command or flag`},
	"policy list": {`  gpuhost policy list
  gpuhost policy list --policy my-pack/ --params params.yaml`, exitPlain},
	"policy doc": {`  gpuhost policy doc --format markdown -o docs/policies.md`, exitPlain},
	"policy export": {`  # the embedded pack as one directory, to review or extend
  gpuhost policy export out/pack`, exitPlain},
	"policy lint": {`  gpuhost policy lint --policy my-pack/`, exitChecking},
	"policy test": {`  # the pack's own Rego tests, failing below 95% coverage
  gpuhost policy test --fail-under 95`, exitChecking},
	"policy bundle": {`  gpuhost policy bundle --policy my-pack/ --signing-key bundle.key -o out/pack.tar.gz
  gpuhost scan rootfs out/rootfs --policy out/pack.tar.gz --verification-key bundle.pub`, exitPlain},
	"compliance list":      {`  gpuhost compliance list`, exitPlain},
	"compliance tailoring": {`  gpuhost compliance tailoring gpu-container-host > out/tailoring.xml`, exitPlain},
	"report diff": {`  # what a rebuild fixed and what it broke
  gpuhost report diff out/old.json out/new.json --format markdown`, `0  no new failures
1  something fails (or errors) that did not before
2  an input is unreadable, or a mistyped command or flag`},
	"waivers check": {`  # every waiver well formed, naming a check, and none expiring within 30 days
  gpuhost waivers check images/waivers-debian-12.yaml --within 30 --strict`, `0  every waiver is valid, current, names a check and can apply
1  a waiver is expired, names an unknown check or is out of scope (with --strict, also one that
   expires within --within days)
2  the file cannot be trusted: unreadable, invalid (a missing ticket, a bad date, glob or scope),
   or, with a key, unsigned, tampered with or signed with another key; or the pack cannot be read`},
	"waivers sign": {`  gpuhost waivers sign waivers.yaml --signing-key waivers.key -o waivers.yaml.sig`, exitPlain},
	"agent": {`  # a scan an hour, kept for a month, with /metrics for Prometheus
  sudo gpuhost agent --interval 1h --db /var/lib/gpuhost/history.db --baseline /etc/gpuhost/manifest.json
  # one run, as a systemd timer's service does
  sudo gpuhost agent --once --db /var/lib/gpuhost/history.db`, exitJudging},
	"history":      {`  gpuhost history --db /var/lib/gpuhost/history.db --limit 20`, exitPlain},
	"history diff": {`  gpuhost history diff 41 42`, exitPlain},
	"validate": {`  # is this GPU node fit to take work: the driver, the GPUs and their links
  sudo gpuhost validate --params /etc/gpuhost/params.yaml --format json`, `0  every step passed (or was not needed)
1  a step failed
2  a step the node needs did not run, the validation could not be trusted, or a mistyped command
   or flag`},
	"version": {`  gpuhost version`, exitPlain},
	"plan": {`  # the shell plan the gpuhost-gpu provisioner runs, for review
  gpuhost plan --config provisioner.json`, exitPlain},
	"lock":            {`  gpuhost lock --from out/manifest.json -o images/lock-debian-12.json`, exitPlain},
	"manifest rootfs": {`  gpuhost manifest rootfs out/rootfs -o out/manifest.json`, exitPlain},
	"manifest host":   {`  sudo gpuhost manifest host -o /etc/gpuhost/manifest.json`, exitPlain},
	"sbom rootfs":     {`  gpuhost sbom rootfs out/rootfs -o out/sbom.cdx.json`, exitPlain},
	"sbom image":      {`  gpuhost sbom image out/debian-12-gpu/disk.qcow2 --rootfs out/debian-12-gpu/rootfs -o out/sbom.cdx.json`, exitPlain},
	"tree-digest":     {`  gpuhost tree-digest out/rootfs`, exitPlain},
	"boot": {`  # boot a baked disk under QEMU and scan it from inside
  gpuhost boot out/debian-12-gpu/disk.qcow2 --selftest --overlay`, `0  the guest booted (and, with --selftest, its scan passed)
1  the guest's scan failed
2  it did not boot, the image is unreadable, or a mistyped command or flag`},
}

// exitStatusKey is the annotation that carries a command's exit status
// to its help and its man page.
const exitStatusKey = "exit-status"

// addExamples gives every command under root its examples and exit
// status, and teaches the help template to print the latter.
func addExamples(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if e, ok := examples[path]; ok {
			c.Example = e.example
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[exitStatusKey] = "  " + strings.ReplaceAll(e.exit, "\n", "\n  ")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	cobra.AddTemplateFunc("plainBools", plainBools)
	tmpl := root.UsageTemplate()
	for _, set := range []string{".LocalFlags.FlagUsages", ".InheritedFlags.FlagUsages"} {
		tmpl = strings.ReplaceAll(tmpl, "{{"+set+" |", "{{plainBools "+set+" |")
	}
	root.SetUsageTemplate(tmpl + `{{with index .Annotations "` + exitStatusKey + `"}}
Exit status:
{{.}}
{{end}}`)
}

// plainBools shows a switch as the switch it is: pflag writes every bool
// flag as --name[=true|false], which reads as if it took a value. The
// mark is blanked rather than cut so that the descriptions stay in one
// column.
func plainBools(usages string) string {
	const mark = "[=true|false]"
	return strings.ReplaceAll(usages, mark, strings.Repeat(" ", len(mark)))
}
