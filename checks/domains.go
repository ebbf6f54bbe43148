package checks

import (
	"context"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/access"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/encryption"
	"github.com/gpuhost/gpuhost/facts/secureboot"
)

// domains are the collectors of the domains whose folder under facts/
// holds their facts, their collector and their checks: each collect
// function returns its domain's facts, and this is where the document
// takes them, with the other domains' facts each one reads.
func domains() []collector.Collector {
	return []collector.Collector{
		collector.Func{ID: "access", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
			f.Access, err = access.Collect(ctx, env)
			return err
		}},
		collector.Func{ID: "encryption", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
			f.Encryption, err = encryption.Collect(ctx, env)
			return err
		}},
		collector.Func{ID: "secureboot", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
			f.SecureBoot, err = secureboot.Collect(ctx, env)
			return err
		}},
	}
}
