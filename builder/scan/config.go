//go:generate packer-sdc mapstructure-to-hcl2 -type Config
//go:generate sh gendocs.sh packer-sdc ../../docs/provisioner-scan.mdx

// Package scan is the Packer provisioner "gpuhost-scan", the gate for
// builders whose output the gpuhost-gate post-processor cannot read (an
// AMI, an Azure managed image, a GCE image, a QEMU disk behind a
// communicator): it judges the build instance itself. It uploads the lean
// gpuhost CLI over the communicator, collects the facts on the instance,
// downloads them, judges them on the build machine with the gate's own
// settings and code (builder/internal/evaluation), writes the reports
// beside the build, and fails the build when the instance does not pass.
package scan

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// Config is the configuration of the gpuhost-scan provisioner.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`
	// The policy pack, params, waivers, thresholds and reports, as the
	// gpuhost-gate post-processor takes them.
	evaluation.Config `mapstructure:",squash"`

	// The gpuhost CLI on the build machine that is uploaded to the
	// instance: the lean build for the instance's architecture (`go build
	// -tags lean ./cmd/gpuhost`; `make build` writes `bin/gpuhost-agent`),
	// which collects facts without the image builder and trivy. Only
	// `facts` runs there; the judging is done here, so the instance never
	// sees the policy, params or waivers.
	GpuhostBinary string `mapstructure:"gpuhost_binary" required:"true"`
	// The arguments the uploaded CLI collects the facts with. Defaults to
	// `["facts", "host"]`: the running instance, its daemons read as they
	// run. Add `"--probe-timeout", "5s"` for slow listeners; `["facts",
	// "rootfs", "/mnt/target"]` judges a tree the build mounted instead.
	// The first must be `facts`.
	FactsArgs []string `mapstructure:"facts_args"`
	// The command that runs the CLI on the instance. `{{.Path}}` is the
	// uploaded CLI, `{{.Args}}` facts_args (each quoted for the shell) and
	// `{{.Output}}` the file the facts document must be written to.
	// Defaults to `sudo -n '{{.Path}}' {{.Args}} > '{{.Output}}'`: facts
	// host reads what only root may (shadow, sudoers, other users'
	// processes and sockets), while the redirect leaves the file to the
	// login user, who downloads and removes it. Logged in as root, or
	// without sudo, use `'{{.Path}}' {{.Args}} > '{{.Output}}'`.
	ExecuteCommand string `mapstructure:"execute_command"`
	// Where the CLI and the facts are staged on the instance, under names
	// no other build shares; both are removed after, whether or not the
	// scan succeeded. Defaults to `/tmp`.
	RemoteFolder string `mapstructure:"remote_folder"`
	// Where the reports go on the build machine:
	// `<report_prefix>.scan.<extension>`, beside the judged facts document
	// `<report_prefix>.scan.facts.json` (whose sha256 is the reports'
	// facts_digest; `gpuhost scan facts` judges it again). A missing
	// directory is made. Defaults to the build's name, such as
	// `amazon-ebs.ubuntu`, in the directory Packer runs in.
	ReportPrefix string `mapstructure:"report_prefix"`

	ctx interpolate.Context
}

const defaultExecuteCommand = `sudo -n '{{.Path}}' {{.Args}} > '{{.Output}}'`

// Decode reads raw provisioner configuration (HCL values from Packer, or
// plain maps decoded from JSON) the way Packer does, applies defaults and
// validates. Every problem is reported at once.
func Decode(raws ...interface{}) (*Config, error) {
	var c Config
	err := config.Decode(&c, &config.DecodeOpts{
		PluginType:         "gpuhost-scan",
		Interpolate:        true,
		InterpolateContext: &c.ctx,
		// Rendered per run, with the staged paths.
		InterpolateFilter: &interpolate.RenderFilter{Exclude: []string{"execute_command"}},
	}, raws...)
	if err != nil {
		return nil, err
	}
	c.defaults()
	if err := configerr.Check("gpuhost-scan", c.validate()); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaults() {
	c.Config.Defaults()
	if c.FactsArgs == nil {
		c.FactsArgs = []string{"facts", "host"}
	}
	if c.ExecuteCommand == "" {
		c.ExecuteCommand = defaultExecuteCommand
	}
	if c.RemoteFolder == "" {
		c.RemoteFolder = "/tmp"
	}
	if c.ReportPrefix == "" {
		c.ReportPrefix = buildPrefix(c.PackerBuildName)
	}
}

var (
	// remotePath is a path that every communicator's transfer commands
	// carry unquoted without harm: the SDK's scp quotes only paths with
	// spaces.
	remotePath = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
	// unsafeName are the characters left out of a build's name when it
	// becomes a file name.
	unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// buildPrefix is the build's name as a file name in the working directory.
func buildPrefix(build string) string {
	name := strings.Trim(unsafeName.ReplaceAllString(build, "_"), "._-")
	if name == "" {
		return "gpuhost"
	}
	return name
}

// elfMagic starts every Linux executable; a CLI built for another OS would
// only fail on the instance, with a less helpful "exec format error".
var elfMagic = []byte("\x7fELF")

func (c *Config) validate() []string {
	errs := c.Config.Validate()
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.GpuhostBinary == "" {
		add("gpuhost_binary: required: the lean gpuhost CLI to run on the instance (make build writes bin/gpuhost-agent)")
	} else if err := checkELF(c.GpuhostBinary); err != nil {
		add("gpuhost_binary: %s", err)
	}
	switch {
	case len(c.FactsArgs) == 0 || c.FactsArgs[0] != "facts":
		add("facts_args: %q must start with \"facts\": the instance only collects, the build machine judges", c.FactsArgs)
	case slices.ContainsFunc(c.FactsArgs, func(a string) bool { return strings.ContainsAny(a, "\x00\n\r") }):
		add("facts_args: an argument holds a NUL or line break")
	}
	if c.TrivyDB != "" && (len(c.FactsArgs) < 2 || (c.FactsArgs[1] != "host" && c.FactsArgs[1] != "rootfs")) {
		add("trivy_db: the packages are downloaded from the tree the facts were collected from, which facts_args %q does not name (use facts host or facts rootfs)", c.FactsArgs)
	}
	if !remotePath.MatchString(c.RemoteFolder) {
		add("remote_folder: %q must be an absolute path of plain characters", c.RemoteFolder)
	}
	for _, v := range []string{"{{.Path}}", "{{.Output}}"} {
		if !strings.Contains(c.ExecuteCommand, v) {
			add("execute_command: must contain %s", v)
		}
	}
	if _, err := c.render(command{Path: "/tmp/x", Args: "facts host", Output: "/tmp/x.json"}); err != nil {
		add("execute_command: %s", err)
	}
	if strings.ContainsAny(c.ReportPrefix, "\x00") || strings.HasSuffix(c.ReportPrefix, "/") {
		add("report_prefix: %q must name a file prefix, not a directory", c.ReportPrefix)
	}
	return errs
}

// command is what execute_command is rendered with.
type command struct {
	Path, Args, Output string
}

func (c *Config) render(data command) (string, error) {
	ictx := c.ctx
	ictx.Data = data
	return interpolate.Render(c.ExecuteCommand, &ictx)
}

// checkELF refuses a path that is not a readable regular file starting as
// an ELF executable does.
func checkELF(name string) error {
	f, err := userfile.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(elfMagic))
	if _, err := f.Read(head); err != nil || !bytes.Equal(head, elfMagic) {
		return fmt.Errorf("%s is not a Linux executable (no ELF header)", name)
	}
	return nil
}

// hostRoot is where `facts host` reads the host, as facts_args sets it
// (--host-root DIR); "/" by default.
func hostRoot(args []string) string {
	root := "/"
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--host-root="); ok {
			root = v
		} else if a == "--host-root" && i+1 < len(args) {
			root = args[i+1]
		}
	}
	return root
}
