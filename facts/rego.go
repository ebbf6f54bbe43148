package facts

import "embed"

// Rego holds every domain's checks with their tests: the Rego in each
// domain's folder, under a folder named as the pack names it
// (access/iam/, secureboot/sb/), so that the path a report gives
// (iam/sudo_log.rego) is the end of the file's path in the repository, and
// opa, run on those folders, loads no collector's fixture as data. It
// lives here, beside the types the checks read, so that the
// default pack (package policies) can hold them without linking the
// collectors: a domain's folder is a Go package too, and go:embed reaches
// only a package's own folder and those below it.
//
//go:embed */*/*.rego
var Rego embed.FS
