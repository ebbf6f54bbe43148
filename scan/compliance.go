package scan

import (
	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policy/compliance"
)

// ComplianceProfiles reads the compliance profiles of a compiled pack and
// holds them to its checks: a profile that names a check the pack lacks
// would judge its controls by nothing.
func ComplianceProfiles(e *engine.Engine) (*compliance.Set, error) {
	set, err := compliance.NewSet(e.Profiles(), "the policy pack")
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, c := range e.Checks() {
		known[c.ID] = true
	}
	if err := set.Validate(func(id string) bool { return known[id] }); err != nil {
		return nil, err
	}
	return set, nil
}

// ComplianceProfile is the named profile of the pack; a name the pack
// lacks is a *compliance.UnknownError.
func ComplianceProfile(e *engine.Engine, name string) (*compliance.Profile, error) {
	set, err := ComplianceProfiles(e)
	if err != nil {
		return nil, err
	}
	return set.Get(name)
}
