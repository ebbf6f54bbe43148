// Command trivydb writes a small trivy vulnerability DB from a YAML fixture
// (see containers/trivy.Fixture), for the demo and the tests on machines
// that cannot download trivy's own DB:
//
//	go run ./tools/trivydb -o out/trivy-db images/trivy-db-demo.yaml
//
// The directory it writes is what `gpuhost --trivy-db` and the gate's
// trivy_db read. A real pipeline points those at `trivy --download-db-only`'s
// cache instead. Its metadata.json carries a GpuhostDemo key, which trivy
// ignores: every scan with it records db_demo in the facts and labels its
// report "demo vulnerability DB: not for release gating".
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuhost/gpuhost/containers/trivy"
)

func main() {
	out := flag.String("o", "", "directory to write trivy.db and metadata.json into (replaced if it holds them)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: trivydb -o DIR FIXTURE.yaml")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "trivydb:", err)
		os.Exit(1)
	}
}

func run(out, fixture string) error {
	fx, err := trivy.ReadFixture(fixture)
	if err != nil {
		return err
	}
	// A rerun replaces the DB rather than adding to it.
	for _, name := range []string{"trivy.db", "metadata.json"} {
		if err := os.Remove(filepath.Join(out, name)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return trivy.WriteDB(out, fx)
}
