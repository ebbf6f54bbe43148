package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuhost/gpuhost/internal/boundedyaml"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// configFile is read from the working directory when --config names none:
// a pre-deploy job's nine flags, written once beside the pipeline.
const configFile = "gpuhost.yaml"

// maxConfig bounds the configuration file, which is a page of settings.
const maxConfig = 1 << 20

// envPrefix starts the environment variable of each flag: --fail-on is
// GPUHOST_FAIL_ON.
const envPrefix = "GPUHOST_"

// settings fills each flag of cmd that the command line left unset, from
// its environment variable, else from the configuration file, so that a
// flag beats the environment, which beats the file, which beats the
// default. The file is --config, else gpuhost.yaml in the working
// directory when there is one; its keys are flag names (fail-on: high,
// report: [sarif=out.sarif]). A key that is no flag of any command is an
// error naming the flag meant; one that is another command's flag is left
// to that command, so one file serves scan, drift and policy alike.
func settings(cmd *cobra.Command, explicit string, env func(string) string) (string, error) {
	name := explicit
	if name == "" {
		if _, err := os.Stat(configFile); errors.Is(err, fs.ErrNotExist) {
			name = ""
		} else {
			name = configFile
		}
	}
	file := map[string]any{}
	if name != "" {
		data, err := userfile.Read(name, maxConfig)
		if err != nil {
			return "", fmt.Errorf("reading the configuration %s: %w", name, err)
		}
		if err := boundedyaml.Decode(name, data, &file); err != nil {
			return "", fmt.Errorf("reading the configuration: %w", err)
		}
		all := allFlags(cmd.Root())
		for key := range file {
			if !slices.Contains(all, key) || key == "config" {
				return "", fmt.Errorf("%s: %q is no flag of gpuhost%s", name, key, nearest(key, all))
			}
		}
	}
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		if v := env(envName(f.Name)); v != "" {
			if err := setFlag(f, strings.Split(v, ",")); err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %w", envName(f.Name), v, err))
			}
			return
		}
		v, ok := file[f.Name]
		if !ok {
			return
		}
		values, err := configValues(v)
		if err == nil {
			err = setFlag(f, values)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", name, f.Name, err))
		}
	})
	return name, errors.Join(errs...)
}

// envName is the environment variable of the flag named name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// setFlag sets f to each of values in turn: one value for most flags, each
// of a list for a repeatable flag (--report, --policy, --checks).
func setFlag(f *pflag.Flag, values []string) error {
	_, repeatable := f.Value.(pflag.SliceValue)
	repeatable = repeatable || f.Value.Type() == (reportsValue{}).Type() || strings.HasSuffix(f.Value.Type(), "Array")
	if !repeatable && len(values) > 1 {
		return fmt.Errorf("takes one value, not a list")
	}
	for _, v := range values {
		if err := f.Value.Set(strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	f.Changed = true
	return nil
}

// configValues turns a YAML value into a flag's values: a scalar is one, a
// list of scalars is each.
func configValues(v any) ([]string, error) {
	switch v := v.(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, err := scalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	default:
		s, err := scalar(v)
		return []string{s}, err
	}
}

func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int, int64, uint64, float64:
		return fmt.Sprint(v), nil
	}
	return "", fmt.Errorf("want a value or a list of values, not %T", v)
}

// allFlags are the names of every flag of every command under root.
func allFlags(root *cobra.Command) []string {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { seen[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { seen[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
