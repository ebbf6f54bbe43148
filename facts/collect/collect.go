// Package collect is what a collector is given and what it may answer
// besides its facts: the environment it reads (the tree, whether the host is
// live, the scan's budget, a disk image's raw partitions) and the outcomes
// that are neither facts nor a failure (not applicable, unavailable). It
// imports nothing of the facts document, so that a domain's facts types can
// sit beside the collector that fills them.
package collect

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// A collector's outcome, as the facts document records it in
// collectors.<name>.status. Anything other than StatusOK makes the checks
// that require the collector skip (unavailable, not_applicable) or error
// (error).
const (
	StatusOK            = "ok"
	StatusUnavailable   = "unavailable"
	StatusNotApplicable = "not_applicable"
	StatusError         = "error"
)

// FileLine is a place in a file of the target: its path as shown to users
// and a line, from 1. Facts of every domain carry it where a setting was
// found, so that a finding can point at the line that decided it.
type FileLine struct {
	File string `json:"file"`
	Line int    `json:"line" jsonschema:"minimum=1"`
}

// Env is what a collector may look at.
type Env struct {
	// FS is the tree being scanned: an image's rootfs, or "/" on a live host.
	FS sysroot.FS
	// Live is true on a running host, where /proc, /sys and sockets are real.
	Live bool
	// Log receives debug detail; never nil once the orchestrator runs.
	Log *slog.Logger
	// ProbeTimeout bounds one TLS handshake; ProbeConcurrency bounds how many
	// run at once.
	ProbeTimeout     time.Duration
	ProbeConcurrency int
	// Devices are the raw partitions of a disk image, for collectors that
	// read on-disk headers (a LUKS volume's); nil for other targets.
	Devices []BlockDevice
	// NetNS is the network namespace file (/run/netns/NAME, /proc/PID/ns/net)
	// whose kernel state a live scan reads, such as the nftables ruleset;
	// empty means the scanner's own.
	NetNS string
	// Budget is what the scan may spend, all collectors together.
	Budget Budget
	// UnitState reports a systemd unit's ActiveState on a live host; nil
	// asks the host's systemd. It returns "unknown" and a reason when no
	// service manager answers.
	UnitState func(ctx context.Context, unit string) (state, reason string)
}

// Budget is what one scan may spend, its collectors together, whatever the
// target. Everything a scan reads is untrusted, and a limit that holds for
// each piece (a file, a key slot) does not hold for the whole.
type Budget struct {
	// Deadline bounds the collection as a whole. A collector it cuts
	// short, or never lets run, is recorded as an error that names it.
	Deadline time.Duration
	// KDFTime bounds trying the empty passphrase on one target's LUKS key
	// slots, all slots together, and KDFMemory the memory one trial's KDF
	// may ask for; the trials free it before the next.
	KDFTime   time.Duration
	KDFMemory int64
	// Memory is the ceiling on the scanner's heap while the collectors
	// run, all together: once a garbage collection finds more than this
	// reachable, the collector running is cut short and none after it
	// runs, each recorded as an error that names the ceiling. It must
	// leave room for KDFMemory, which one trial holds at once.
	Memory int64
}

// DefaultBudget is what a scan spends when its options leave a limit zero
// (docs/limits.md).
var DefaultBudget = Budget{Deadline: 5 * time.Minute, KDFTime: 30 * time.Second, KDFMemory: 512 << 20, Memory: 1 << 30}

// WithDefaults is b with every limit it leaves zero taken from
// DefaultBudget.
func (b Budget) WithDefaults() Budget {
	if b.Deadline <= 0 {
		b.Deadline = DefaultBudget.Deadline
	}
	if b.KDFTime <= 0 {
		b.KDFTime = DefaultBudget.KDFTime
	}
	if b.KDFMemory <= 0 {
		b.KDFMemory = DefaultBudget.KDFMemory
	}
	if b.Memory <= 0 {
		b.Memory = DefaultBudget.Memory
	}
	return b
}

// BlockDevice is a raw device of a disk image.
type BlockDevice struct {
	// Name says which, as the image's partition table numbers it.
	Name string
	// PartUUID and PartLabel are what the partition table calls it.
	PartUUID, PartLabel string
	// PartType is its type in the partition table: a GPT type GUID in
	// upper case, or an MBR type byte in two hex digits.
	PartType string
	// Size bounds every read of R.
	Size int64
	R    io.ReaderAt
}

// Outcome is a non-error, non-ok result: the facts are not there to be had.
type Outcome struct {
	Status string
	Reason string
}

// Error says the status and why.
func (o *Outcome) Error() string { return o.Status + ": " + o.Reason }

// NotApplicable says the collector has nothing to look at on this kind of
// target, such as listening sockets in an offline rootfs.
func NotApplicable(reason string) error {
	return &Outcome{Status: StatusNotApplicable, Reason: reason}
}

// Unavailable says the facts could exist but cannot be read here, such as
// NVML without a driver.
func Unavailable(reason string) error {
	return &Outcome{Status: StatusUnavailable, Reason: reason}
}

// Classify maps a collector's return value to a status and reason.
func Classify(err error) (status, reason string) {
	if err == nil {
		return StatusOK, ""
	}
	var o *Outcome
	if errors.As(err, &o) {
		return o.Status, o.Reason
	}
	return StatusError, err.Error()
}
