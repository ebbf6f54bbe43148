// Package policies holds gpuhost's default policy pack: one Rego v1 package
// per check under <domain>/<name>.rego, each with its tests beside it, plus the
// default parameters and their JSON Schema.
package policies

import "embed"

// params.default.yaml is written from params.schema.json, each parameter's
// default under its description:
//
//go:generate go run ./internal/paramsgen

// FS is the default pack as shipped in the binary. It holds every .rego file
// (tests included: the engine drops *_test.rego before it compiles checks, and
// `gpuhost policy test` needs them), params.default.yaml and params.schema.json.
//
//go:embed */*.rego params.default.yaml params.schema.json
var FS embed.FS

// DefaultParamsFile and ParamsSchemaFile name the two data files inside FS.
const (
	DefaultParamsFile = "params.default.yaml"
	ParamsSchemaFile  = "params.schema.json"
)

// DefaultParams returns the bytes of params.default.yaml, the parameters the
// engine loads as data.gpuhost.params when the user gives none.
func DefaultParams() ([]byte, error) {
	return FS.ReadFile(DefaultParamsFile)
}

// ParamsSchema returns the bytes of params.schema.json (JSON Schema draft
// 2020-12) that a params file must satisfy.
func ParamsSchema() ([]byte, error) {
	return FS.ReadFile(ParamsSchemaFile)
}
