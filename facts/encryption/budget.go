package encryption

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
)

// trialBudget is what trying the empty passphrase may spend on one target,
// across every key slot of every LUKS header in it. A header is the
// attacker's to write: thirty-two slots each at the per-slot limits would
// hold a scan for many minutes, so the slots share one purse, each slot's
// full cost is taken before any of its work, and the trials stop at a
// deadline of their own or the scan's, whichever comes first. A slot the
// budget cannot pay for is not tried and says why, which the checks report
// as not judged, never as a pass.
type trialBudget struct {
	lim   trialLimits
	ctx   context.Context
	until time.Time
	spend time.Duration

	mu                    sync.Mutex
	argonLeft, pbkdf2Left uint64
}

// newTrialBudget starts the budget of one target's trials under the scan's
// ctx and budget.
func newTrialBudget(ctx context.Context, b collect.Budget) *trialBudget {
	lim := defaultTrialLimits
	if b.KDFMemory > 0 {
		lim.ArgonKiB = uint64(b.KDFMemory) >> 10
	}
	spend := b.KDFTime
	if spend <= 0 {
		spend = collect.DefaultBudget.KDFTime
	}
	return &trialBudget{lim: lim, ctx: ctx, until: time.Now().Add(spend), spend: spend,
		argonLeft: lim.TotalArgonWork, pbkdf2Left: lim.TotalPBKDF2Blocks}
}

// errNotPaid marks a slot the budget left untried, whose outcome says
// nothing about the header and so is not remembered.
var errNotPaid = errors.New("not tried")

// charge takes a slot's full cost, argon2 work (KiB times passes) and PBKDF2
// blocks (iterations times the hash blocks of the key), before any of its
// work is done. The error says why the slot is not tried.
func (b *trialBudget) charge(argonWork, pbkdf2Blocks uint64) error {
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("%w: the scan's deadline passed before this key slot's trial (%v)", errNotPaid, err)
	}
	if time.Now().After(b.until) {
		return fmt.Errorf("%w: the target's key slot trials used their %v", errNotPaid, b.spend)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if argonWork > b.argonLeft || pbkdf2Blocks > b.pbkdf2Left {
		return fmt.Errorf("%w: the target's key slot trials have spent their budget (%d KiB-passes of argon2, %d PBKDF2 blocks in all)",
			errNotPaid, b.lim.TotalArgonWork, b.lim.TotalPBKDF2Blocks)
	}
	b.argonLeft -= argonWork
	b.pbkdf2Left -= pbkdf2Blocks
	return nil
}

// release hands what an argon2 trial allocated back to the system before
// the next slot asks for as much again: left to the collector, the buffers
// of several slots were held at once.
func release(argonWork uint64) {
	if argonWork > 0 {
		debug.FreeOSMemory()
	}
}

// pbkdf2Blocks is what PBKDF2 with iterations costs for a key of keyBytes
// under a hash of hashBytes: each block of the output runs every iteration.
func pbkdf2Blocks(iterations uint64, keyBytes, hashBytes int) uint64 {
	if keyBytes <= 0 || hashBytes <= 0 {
		return iterations
	}
	return iterations * uint64((keyBytes+hashBytes-1)/hashBytes)
}
