package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusesBeforeBootstrapping: what is wrong with the command line is
// said before a base is bootstrapped, which takes minutes and root.
func TestRefusesBeforeBootstrapping(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.tar")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give -layout or -push"},
		{[]string{"-daemonset", "ds.yaml", "-layout", "x"}, "give -layout or -push"},
		{[]string{"-push", "gpuhost-agent"}, `parsing repository "gpuhost-agent"`},
		{[]string{"-push", "registry.test/Bad Name"}, "parsing repository"},
	} {
		err := run(context.Background(), append([]string{"-base", base}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
		if strings.Contains(tc.want, "give") && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: a usage error is not flag.ErrHelp (exit 2)", tc.args)
		}
		if _, err := os.Stat(base); err == nil {
			t.Fatalf("%q: bootstrapped a base before refusing", tc.args)
		}
	}
}
