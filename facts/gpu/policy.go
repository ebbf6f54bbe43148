package gpu

import "embed"

// Policy is the domain's checks, the Rego beside this file with its tests.
// The default pack (package policies) holds them as its gpu/ folder, where
// the catalog, reports and bundles name them.
//
//go:embed *.rego
var Policy embed.FS
