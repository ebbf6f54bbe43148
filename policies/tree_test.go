package policies

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

// The pack is one tree whichever folder of the repository holds a file:
// fstest checks it as io/fs's contract asks (opening, reading, listing
// in pages, stat), with a domain's files under its pack folder.
func TestTreeIsOneFS(t *testing.T) {
	if err := fstest.TestFS(FS, "sb/lockdown.rego", "sb/lib.rego", "ssh/lib.rego", DefaultParamsFile, ParamsSchemaFile); err != nil {
		t.Fatal(err)
	}
}

// A domain beside its collector is the pack's folder of that name, and
// policies/ holds no folder of the same name that it would hide.
func TestDomainsAreMounted(t *testing.T) {
	for _, d := range Domains {
		if _, err := fs.Stat(own, d.Folder); err == nil {
			t.Errorf("policies/%s and %s both hold the pack's %s/ folder", d.Folder, d.Dir, d.Folder)
		}
		want, err := fs.Glob(d.FS, "*.rego")
		if err != nil || len(want) == 0 {
			t.Fatalf("%s: no Rego (%v)", d.Dir, err)
		}
		got, err := fs.Glob(FS, d.Folder+"/*.rego")
		if err != nil || len(got) != len(want) {
			t.Errorf("the pack's %s/ holds %d files, %s %d (%v)", d.Folder, len(got), d.Dir, len(want), err)
		}
		if _, err := FS.Open(d.Folder + "/missing.rego"); err == nil || err.(*fs.PathError).Path != d.Folder+"/missing.rego" {
			t.Errorf("opening a missing file: %v, want an error naming it in the pack", err)
		}
	}
}
