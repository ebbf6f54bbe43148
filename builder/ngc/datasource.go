//go:generate packer-sdc mapstructure-to-hcl2 -type Config,DatasourceOutput
//go:generate sh gendocs.sh packer-sdc ../../docs/datasource-ngc.mdx

// Package ngc is the Packer data source "gpuhost-ngc": it resolves an NGC
// image tag to the manifest digest the registry serves now, so that a
// template can pin container bases by digest (the gpuhost-gpu provisioner
// refuses a tag alone).
package ngc

import (
	"context"
	"errors"
	"fmt"
	"log"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/hcl2helper"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/containers/seed"
)

// Config is the configuration of `data "gpuhost-ngc"`. Credentials come
// from the environment only: with NGC_API_KEY set, requests authenticate
// as `$oauthtoken` with the key as password; without it they are
// anonymous, which public NGC images allow.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// The image to resolve, `registry/repository:tag`, such as
	// `nvcr.io/nvidia/pytorch:24.08-py3`. A reference that already carries
	// `@sha256:...` is checked against the registry instead.
	Ref string `mapstructure:"ref" required:"true"`
	// A registry `host[:port]` to ask instead of the one `ref` names, such
	// as a mirror of nvcr.io. The outputs keep `ref`'s own name.
	Registry string `mapstructure:"registry" required:"false"`
	// The registries `ref` may name. Defaults to `["nvcr.io"]`. The
	// `registry` override is not checked against this list: it says where
	// to ask, not what the image is called.
	AllowedRegistries []string `mapstructure:"allowed_registries" required:"false"`
	// How long resolving may take, as a Go duration. Defaults to `2m`.
	Timeout string `mapstructure:"timeout" required:"false"`
	// The reviewed digest of `ref`, `sha256:<64 hex>`, as a pins file keeps
	// it. When set, `digest` is this pin whatever the tag says now, and a
	// tag that has moved to another manifest is handled as `on_moved`
	// says: a moved tag means an image nobody reviewed is what the tag
	// names today.
	Pinned string `mapstructure:"pinned" required:"false"`
	// What a tag that no longer resolves to `pinned` does: `fail` (the
	// default) stops the build, naming both digests; `warn` logs it, keeps
	// the pin, and sets the output `moved`. Without `pinned` it has no
	// effect.
	OnMoved string `mapstructure:"on_moved" required:"false"`

	timeout time.Duration
}

// DatasourceOutput is what `data.gpuhost-ngc.NAME` gives.
type DatasourceOutput struct {
	// The reference as configured.
	Ref string `mapstructure:"ref"`
	// The manifest digest, `sha256:<64 hex>`: the value for a
	// gpuhost-gpu `ngc_images` entry's `digest`.
	Digest string `mapstructure:"digest"`
	// The repository pinned by digest, `registry/repository@sha256:...`.
	PinnedRef string `mapstructure:"pinned_ref"`
	// The manifest's media type: an image index for multi-platform images.
	MediaType string `mapstructure:"media_type"`
	// What the registry resolves `ref` to now; differs from `digest` only
	// when `pinned` is set and the tag has moved.
	Current string `mapstructure:"current"`
	// Whether the tag has moved away from `pinned` (with `on_moved = "warn"`).
	Moved bool `mapstructure:"moved"`
}

// Datasource is the Packer data source "gpuhost-ngc".
type Datasource struct {
	config Config
	// opts are the seed options the configuration does not set; tests
	// set Auth and Transport.
	opts seed.Options
}

var _ packersdk.Datasource = (*Datasource)(nil)

// ConfigSpec returns the HCL2 spec of Config.
func (d *Datasource) ConfigSpec() hcldec.ObjectSpec { return d.config.FlatMapstructure().HCL2Spec() }

// OutputSpec returns the HCL2 spec of DatasourceOutput.
func (d *Datasource) OutputSpec() hcldec.ObjectSpec {
	return (&DatasourceOutput{}).FlatMapstructure().HCL2Spec()
}

// Configure decodes and validates the configuration.
func (d *Datasource) Configure(raws ...interface{}) error {
	if err := config.Decode(&d.config, &config.DecodeOpts{PluginType: "gpuhost-ngc"}, raws...); err != nil {
		return err
	}
	c := &d.config
	var errs []string
	if c.Ref == "" {
		errs = append(errs, "ref: required")
	}
	if c.Timeout == "" {
		c.Timeout = "2m"
	}
	t, err := time.ParseDuration(c.Timeout)
	if err != nil || t <= 0 {
		errs = append(errs, fmt.Sprintf("timeout: %q is not a positive duration such as 2m", c.Timeout))
	}
	c.timeout = t
	if strings.ContainsAny(c.Registry, "/ \t\n") {
		errs = append(errs, fmt.Sprintf("registry: %q is not a host[:port]", c.Registry))
	}
	if c.Pinned != "" && !digestRE.MatchString(c.Pinned) {
		errs = append(errs, fmt.Sprintf("pinned: %q is not a digest sha256:<64 lowercase hex>", c.Pinned))
	}
	switch c.OnMoved {
	case "":
		c.OnMoved = "fail"
	case "fail", "warn":
	default:
		errs = append(errs, fmt.Sprintf("on_moved: %q is not fail or warn", c.OnMoved))
	}
	return configerr.Check("gpuhost-ngc", errs)
}

// Execute resolves the reference against the registry.
func (d *Datasource) Execute() (cty.Value, error) {
	out, err := d.resolve()
	if err != nil {
		return cty.NullVal(cty.EmptyObject), err
	}
	return hcl2helper.HCL2ValueFromConfig(out, d.OutputSpec()), nil
}

func (d *Datasource) resolve() (DatasourceOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.config.timeout)
	defer cancel()
	o := d.opts
	o.Registry = d.config.Registry
	o.Allowed = d.config.AllowedRegistries
	r, err := seed.Resolve(ctx, d.config.Ref, o)
	if err != nil {
		return DatasourceOutput{}, fmt.Errorf("gpuhost-ngc: %w", err)
	}
	out := DatasourceOutput{
		Ref:       d.config.Ref,
		Digest:    r.Digest,
		PinnedRef: seed.Repository(d.config.Ref) + "@" + r.Digest,
		MediaType: r.MediaType,
		Current:   r.Digest,
	}
	if pin := d.config.Pinned; pin != "" && pin != r.Digest {
		msg := fmt.Sprintf("gpuhost-ngc: %s has moved: it resolves to %s, and the reviewed pin is %s", d.config.Ref, r.Digest, pin)
		if d.config.OnMoved != "warn" {
			return DatasourceOutput{}, errors.New(msg + "; review the new image and update the pin (or set on_moved = \"warn\" to build the pin anyway)")
		}
		log.Print(msg + "; building the pin")
		// The pin is what is baked; its media type is the registry's
		// answer for the pin, not for the tag's new manifest.
		pinned, err := seed.Resolve(ctx, seed.Repository(d.config.Ref)+"@"+pin, o)
		if err != nil {
			return DatasourceOutput{}, fmt.Errorf("gpuhost-ngc: the pin of %s: %w", d.config.Ref, err)
		}
		out.Digest, out.PinnedRef, out.MediaType, out.Moved = pin, seed.Repository(d.config.Ref)+"@"+pin, pinned.MediaType, true
	}
	return out, nil
}

// digestRE is a sha256 manifest digest as registries and pins files write it.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
