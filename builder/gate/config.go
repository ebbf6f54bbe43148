//go:generate ../../bin/packer-sdc mapstructure-to-hcl2 -type Config,Publish,Signing,Vulnerabilities
//go:generate go run ./internal/gendocs -sdc ../../bin/packer-sdc -out ../../docs/post-processor-gate.mdx

// Package gate is the Packer post-processor "gpuhost-gate": it scans the
// artifact a build produced with the one gpuhost pipeline (collectors, the
// policy engine, waivers), writes the reports beside the artifact, fails the
// build when a check fails at or above fail_on or when the scan cannot be
// trusted, and on a pass publishes the disk image with its evidence to an
// OCI registry.
package gate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/reports"
)

// Vulnerabilities sets the CVE params of the policy pack (cve_fail_on,
// cve_grace_days, cve_ignore_unfixed). Unset settings keep the params
// file's, or the pack's defaults.
type Vulnerabilities struct {
	// Fail on a CVE at this severity or above, once past the grace
	// period: `critical`, `high`, `medium` or `low`. Defaults to
	// `critical`.
	FailOn string `mapstructure:"fail_on"`
	// Days a CVE may stay unpatched, from its published date to the scan.
	// Defaults to 14.
	GraceDays *int `mapstructure:"grace_days"`
	// Leave CVEs with no fixed version out: nothing can be installed for
	// them. Defaults to true; false fails them too.
	IgnoreUnfixed *bool `mapstructure:"ignore_unfixed"`
}

// params are the params the block sets.
func (v Vulnerabilities) params() map[string]any {
	p := map[string]any{}
	if v.FailOn != "" {
		p["cve_fail_on"] = v.FailOn
	}
	if v.GraceDays != nil {
		p["cve_grace_days"] = *v.GraceDays
	}
	if v.IgnoreUnfixed != nil {
		p["cve_ignore_unfixed"] = *v.IgnoreUnfixed
	}
	return p
}

// Publish says where a passing image is pushed.
type Publish struct {
	// The OCI repository to push to, without a tag, such as
	// `registry.example.com/gpu/ubuntu-22.04-gpu`. Empty: nothing is pushed,
	// and the other publish settings are not used.
	Repository string `mapstructure:"repository"`
	// The tag of the pushed image. Defaults to the image's file name without
	// its extension, a dash and the build time in UTC
	// (`rootfs-20250101T120000Z`).
	Tag string `mapstructure:"tag"`
	// The name of the environment variable holding the registry user name.
	// The credentials themselves never appear in the template or the log.
	UsernameEnv string `mapstructure:"username_env"`
	// The name of the environment variable holding the registry password or
	// token. Set together with username_env.
	PasswordEnv string `mapstructure:"password_env"`
	// Reach the registry over plain HTTP. Loopback and private addresses
	// always are; this is for other registries without TLS.
	Insecure bool `mapstructure:"insecure"`
	// How the pushed image is signed. Required when repository is set:
	// the image's manifest digest is signed and its SLSA provenance
	// attached, in the layout `cosign verify` and `cosign
	// verify-attestation` read, before the tag is pushed.
	Signing Signing `mapstructure:"signing"`
	// The Packer template that built the image, recorded in the provenance
	// by path and sha256, such as `"${path.root}/debian-12-gpu.pkr.hcl"`
	// (Packer does not tell a post-processor which file it runs).
	TemplateFile string `mapstructure:"template_file"`
	// The lock file the image was built from, recorded in the provenance
	// by path and sha256. Unset: the build had none.
	LockFile string `mapstructure:"lock_file"`
}

// Signing names the key that signs a published image. Set exactly one of
// key_file, key_env and kms_key. The key itself never appears in the
// template or the log.
type Signing struct {
	// A PEM file holding the ECDSA P-256 private key: PKCS#8, SEC 1, or
	// the encrypted format `cosign generate-key-pair` writes (then
	// password_env is needed).
	KeyFile string `mapstructure:"key_file"`
	// The name of an environment variable holding the PEM private key
	// itself, for pipelines that hand keys over as secrets in the
	// environment.
	KeyEnv string `mapstructure:"key_env"`
	// The name of the environment variable holding the password of an
	// encrypted key (cosign reads COSIGN_PASSWORD).
	PasswordEnv string `mapstructure:"password_env"`
	// A KMS key URI, such as `awskms:///alias/gpuhost-sign` or
	// `hashivault://gpuhost-sign`: the private key stays in the KMS. It
	// is opened through sigstore's KMS providers, which this build reaches
	// through the sigstore KMS plugins (`sigstore-kms-<scheme>` on PATH);
	// a build of the plugin that imports a provider package links it in.
	KMSKey string `mapstructure:"kms_key"`
}

// Config is the configuration of the gpuhost-gate post-processor.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// Policy directories or OPA bundles (`.tar.gz`) that replace the
	// embedded policy pack. Empty: the embedded pack.
	Policy []string `mapstructure:"policy"`
	// Policy directories or bundles added to the pack in use.
	ExtendPolicy []string `mapstructure:"extend_policy"`
	// A public key (PEM file) that policy bundles must be signed with.
	VerificationKey string `mapstructure:"verification_key"`
	// The signing algorithm of verification_key. Defaults to `RS256`.
	VerificationAlg string `mapstructure:"verification_alg"`
	// A parameters file (YAML or JSON) read as `data.gpuhost.params`:
	// pins, allowed ports, expected GPU count. It is checked against the
	// pack's parameter schema.
	Params string `mapstructure:"params"`
	// A waiver file: a YAML list of `{id, target, justification,
	// approved_by, expires}`.
	Waivers string `mapstructure:"waivers"`
	// Fail the build when a check fails at this severity or above:
	// `critical`, `high`, `medium`, `low` or `info`. Defaults to `high`. A
	// scan that cannot be trusted (a check or collector error) always fails
	// the build.
	FailOn string `mapstructure:"fail_on"`
	// Also fail the build when a check at this severity or above could not
	// be evaluated (skipped for missing facts, or errored), so that an image
	// cannot pass on checks that never ran. Unset: skips never fail it.
	// Checks that do not apply to the artifact's kind are not counted.
	FailOnSkip string `mapstructure:"fail_on_skip"`
	// An offline trivy vulnerability DB directory (`trivy.db` and
	// `metadata.json`, as `trivy --download-db-only` leaves them) that the
	// image's OS packages are matched against, as `gpuhost --trivy-db` does.
	// Never downloaded. Unset: no vulnerability facts, so GH-SC-001 is
	// skipped, which `fail_on_skip = "critical"` turns into a failed build.
	TrivyDB string `mapstructure:"trivy_db"`
	// How GH-SC-001 judges the CVEs trivy_db finds. Each setting set here
	// replaces the params file's, so the template shows the threshold the
	// image is held to.
	Vulnerabilities Vulnerabilities `mapstructure:"vulnerabilities"`
	// The report formats written beside the artifact, as
	// `<artifact>.gate.<extension>`: `table` (.txt), `json`, `sarif`,
	// `junit` (.junit.xml), `markdown` (.md), `html`. Defaults to all six.
	Reports []string `mapstructure:"reports"`
	// Push the image and its evidence when the gate passes.
	Publish Publish `mapstructure:"publish"`

	ctx interpolate.Context
}

// reportExt is the file name ending of each report format.
var reportExt = map[string]string{
	"table":    "txt",
	"json":     "json",
	"sarif":    "sarif",
	"junit":    "junit.xml",
	"markdown": "md",
	"html":     "html",
}

// Decode reads raw post-processor configuration the way Packer does, applies
// defaults and validates. Every problem is reported at once.
func Decode(raws ...interface{}) (*Config, error) {
	var c Config
	err := config.Decode(&c, &config.DecodeOpts{
		PluginType:         "gpuhost-gate",
		Interpolate:        true,
		InterpolateContext: &c.ctx,
	}, raws...)
	if err != nil {
		return nil, err
	}
	c.defaults()
	if err := configerr.Check("gpuhost-gate", c.validate()); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaults() {
	if c.FailOn == "" {
		c.FailOn = "high"
	}
	if c.VerificationAlg == "" {
		c.VerificationAlg = "RS256"
	}
	if len(c.Reports) == 0 {
		c.Reports = reports.Formats()
	}
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// tagName is the OCI distribution spec's tag grammar.
	tagName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

func (c *Config) validate() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.FailOnSkip != "" && !reports.ValidSeverity(c.FailOnSkip) {
		add("fail_on_skip: %q is not one of %s", c.FailOnSkip, strings.Join(reports.Severities, ", "))
	}
	if !reports.ValidSeverity(c.FailOn) {
		add("fail_on: %q is not one of %s", c.FailOn, strings.Join(reports.Severities, ", "))
	}
	seen := map[string]bool{}
	for i, f := range c.Reports {
		switch {
		case reportExt[f] == "":
			add("reports[%d]: %q is not one of %s", i, f, strings.Join(reports.Formats(), ", "))
		case seen[f]:
			add("reports[%d]: %q is listed twice", i, f)
		}
		seen[f] = true
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"policy", c.Policy}, {"extend_policy", c.ExtendPolicy}} {
		for i, p := range f.list {
			if strings.TrimSpace(p) == "" {
				add("%s[%d]: empty path", f.field, i)
			}
		}
	}
	if c.TrivyDB != "" {
		if err := userfile.CheckDir(c.TrivyDB); err != nil {
			add("trivy_db: %s", err)
		}
	}
	switch v := c.Vulnerabilities; {
	case v.FailOn != "" && (!reports.ValidSeverity(v.FailOn) || v.FailOn == "info"):
		add("vulnerabilities.fail_on: %q is not one of critical, high, medium, low", v.FailOn)
	case v.GraceDays != nil && *v.GraceDays < 0:
		add("vulnerabilities.grace_days: %d is negative", *v.GraceDays)
	}
	if len(c.Vulnerabilities.params()) > 0 && c.TrivyDB == "" {
		add("vulnerabilities: set, but no trivy_db to match the image's packages against")
	}
	if c.VerificationKey != "" && len(c.Policy)+len(c.ExtendPolicy) == 0 {
		add("verification_key: set, but no policy or extend_policy bundle to verify")
	}
	return append(errs, c.Publish.validate()...)
}

func (p *Publish) validate() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	// The rest only matters for a push; a template may leave the
	// repository to a variable that is empty where nothing is published.
	if p.Repository == "" {
		return errs
	}
	if strings.ContainsAny(p.Repository, "@") || strings.Count(p.Repository, ":") > strings.Count(hostOf(p.Repository), ":") {
		add("publish.repository: %q must not carry a tag or digest; use publish.tag", p.Repository)
	} else if _, err := name.NewRepository(p.Repository, name.StrictValidation); err != nil {
		add("publish.repository: %q is not registry/repository: %s", p.Repository, lower(err.Error()))
	}
	if p.Tag != "" && !tagName.MatchString(p.Tag) {
		add("publish.tag: %q is not an OCI tag", p.Tag)
	}
	errs = append(errs, p.Signing.validate()...)
	for _, f := range [][2]string{{"template_file", p.TemplateFile}, {"lock_file", p.LockFile}} {
		if f[1] != "" {
			if err := checkFile(f[1]); err != nil {
				add("publish.%s: %s", f[0], err)
			}
		}
	}
	if (p.UsernameEnv == "") != (p.PasswordEnv == "") {
		add("publish.username_env and publish.password_env: set both or neither")
	}
	for _, f := range [][2]string{{"username_env", p.UsernameEnv}, {"password_env", p.PasswordEnv}} {
		if f[1] != "" && !envName.MatchString(f[1]) {
			add("publish.%s: %q is not an environment variable name", f[0], f[1])
		}
	}
	return errs
}

func (s *Signing) validate() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	n := 0
	for _, v := range []string{s.KeyFile, s.KeyEnv, s.KMSKey} {
		if v != "" {
			n++
		}
	}
	switch {
	case n == 0:
		add("publish.signing: set key_file, key_env or kms_key: a published image is always signed")
	case n > 1:
		add("publish.signing: set only one of key_file, key_env and kms_key")
	}
	if s.KeyFile != "" {
		if err := checkFile(s.KeyFile); err != nil {
			add("publish.signing.key_file: %s", err)
		}
	}
	for _, f := range [][2]string{{"key_env", s.KeyEnv}, {"password_env", s.PasswordEnv}} {
		if f[1] != "" && !envName.MatchString(f[1]) {
			add("publish.signing.%s: %q is not an environment variable name", f[0], f[1])
		}
	}
	if s.KMSKey != "" && !strings.Contains(s.KMSKey, "://") {
		add("publish.signing.kms_key: %q is not a KMS URI (scheme://key)", s.KMSKey)
	}
	return errs
}

// checkFile refuses a path that is not a readable regular file.
func checkFile(name string) error {
	f, err := userfile.Open(name)
	if err != nil {
		return err
	}
	return f.Close()
}

// hostOf is the part of a repository before the first slash, where a port
// may carry a colon.
func hostOf(repo string) string {
	host, _, _ := strings.Cut(repo, "/")
	return host
}

func lower(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
