package facts

import "embed"

// Rego holds every domain's checks, the Rego in each domain's folder with
// its tests. It lives here, beside the types the checks read, so that the
// default pack (package policies) can hold them without linking the
// collectors: a domain's folder is a Go package too, and go:embed reaches
// only a package's own folder and those below it.
//
//go:embed */*.rego
var Rego embed.FS
