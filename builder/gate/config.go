//go:generate packer-sdc mapstructure-to-hcl2 -type Config,Publish,Signing
//go:generate sh gendocs.sh packer-sdc ../../docs/post-processor-gate.mdx

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
	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

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

	// The policy pack, params, waivers, thresholds and reports, as the
	// gpuhost-scan provisioner takes them. The reports are written beside
	// the artifact.
	evaluation.Config `mapstructure:",squash"`

	// Push the image and its evidence when the gate passes.
	Publish Publish `mapstructure:"publish"`

	ctx interpolate.Context
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

func (c *Config) defaults() { c.Config.Defaults() }

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// tagName is the OCI distribution spec's tag grammar.
	tagName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

func (c *Config) validate() []string {
	return append(c.Config.Validate(), c.Publish.validate()...)
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
