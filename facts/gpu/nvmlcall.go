package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// errWedged is returned for every call after one has timed out: a driver that
// hangs one call usually hangs the next, and waiting out every deadline in
// turn would stall the scan for minutes.
var errWedged = errors.New("skipped: an earlier NVML call timed out")

// caller runs NVML calls under a deadline. A sick GPU can block a call inside
// the driver for minutes, and cgo calls cannot be interrupted, so each call
// runs on its own goroutine and is abandoned when the deadline passes. An
// abandoned goroutine leaks until the call returns (perhaps never): that is
// the price of a scan that always finishes, and it is bounded because the
// caller makes no further calls once one has timed out.
type caller struct {
	timeout time.Duration
	wedged  bool
}

// do runs fn, which makes exactly one NVML call named name and returns its
// status. fn must only write variables the caller reads after do returns nil:
// on a timeout the goroutine may still write them later, so they must not be
// read then. A panic inside fn (a broken binding, an unset test mock) is
// reported as an error for that call rather than crashing the scan.
func (c *caller) do(ctx context.Context, name string, fn func() nvml.Return) (nvml.Return, error) {
	if c.wedged {
		return nvml.ERROR_UNKNOWN, errWedged
	}
	if err := ctx.Err(); err != nil {
		return nvml.ERROR_UNKNOWN, fmt.Errorf("NVML call %s not made: %w", name, err)
	}
	type result struct {
		ret nvml.Return
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned call must not block on send
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{nvml.ERROR_UNKNOWN, fmt.Errorf("NVML call %s panicked: %v", name, p)}
			}
		}()
		done <- result{ret: fn()}
	}()
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.ret, r.err
	case <-timer.C:
		c.wedged = true
		return nvml.ERROR_TIMEOUT, fmt.Errorf("NVML call %s timed out after %s", name, c.timeout)
	case <-ctx.Done():
		c.wedged = true
		return nvml.ERROR_TIMEOUT, fmt.Errorf("NVML call %s abandoned: %w", name, ctx.Err())
	}
}

// symbols names NVML's return codes. Once the real library is loaded,
// nvml.ErrorString gives its prose ("Driver/library version mismatch"), which
// does not say which code it was; reports carry both.
var symbols = map[nvml.Return]string{
	nvml.SUCCESS:                         "SUCCESS",
	nvml.ERROR_UNINITIALIZED:             "ERROR_UNINITIALIZED",
	nvml.ERROR_INVALID_ARGUMENT:          "ERROR_INVALID_ARGUMENT",
	nvml.ERROR_NOT_SUPPORTED:             "ERROR_NOT_SUPPORTED",
	nvml.ERROR_NO_PERMISSION:             "ERROR_NO_PERMISSION",
	nvml.ERROR_ALREADY_INITIALIZED:       "ERROR_ALREADY_INITIALIZED",
	nvml.ERROR_NOT_FOUND:                 "ERROR_NOT_FOUND",
	nvml.ERROR_INSUFFICIENT_SIZE:         "ERROR_INSUFFICIENT_SIZE",
	nvml.ERROR_INSUFFICIENT_POWER:        "ERROR_INSUFFICIENT_POWER",
	nvml.ERROR_DRIVER_NOT_LOADED:         "ERROR_DRIVER_NOT_LOADED",
	nvml.ERROR_TIMEOUT:                   "ERROR_TIMEOUT",
	nvml.ERROR_IRQ_ISSUE:                 "ERROR_IRQ_ISSUE",
	nvml.ERROR_LIBRARY_NOT_FOUND:         "ERROR_LIBRARY_NOT_FOUND",
	nvml.ERROR_FUNCTION_NOT_FOUND:        "ERROR_FUNCTION_NOT_FOUND",
	nvml.ERROR_CORRUPTED_INFOROM:         "ERROR_CORRUPTED_INFOROM",
	nvml.ERROR_GPU_IS_LOST:               "ERROR_GPU_IS_LOST",
	nvml.ERROR_RESET_REQUIRED:            "ERROR_RESET_REQUIRED",
	nvml.ERROR_OPERATING_SYSTEM:          "ERROR_OPERATING_SYSTEM",
	nvml.ERROR_LIB_RM_VERSION_MISMATCH:   "ERROR_LIB_RM_VERSION_MISMATCH",
	nvml.ERROR_IN_USE:                    "ERROR_IN_USE",
	nvml.ERROR_MEMORY:                    "ERROR_MEMORY",
	nvml.ERROR_NO_DATA:                   "ERROR_NO_DATA",
	nvml.ERROR_INSUFFICIENT_RESOURCES:    "ERROR_INSUFFICIENT_RESOURCES",
	nvml.ERROR_ARGUMENT_VERSION_MISMATCH: "ERROR_ARGUMENT_VERSION_MISMATCH",
	nvml.ERROR_DEPRECATED:                "ERROR_DEPRECATED",
	nvml.ERROR_NOT_READY:                 "ERROR_NOT_READY",
	nvml.ERROR_GPU_NOT_FOUND:             "ERROR_GPU_NOT_FOUND",
	nvml.ERROR_INVALID_STATE:             "ERROR_INVALID_STATE",
	nvml.ERROR_UNKNOWN:                   "ERROR_UNKNOWN",
}

// Symbol returns the symbolic name of an NVML return code.
func Symbol(ret nvml.Return) string {
	if s, ok := symbols[ret]; ok {
		return s
	}
	return fmt.Sprintf("NVML_RETURN_%d", int32(ret))
}

// describe renders a return code as "prose (SYMBOL)", or just the symbol
// when the prose adds nothing.
func describe(lib nvml.Interface, ret nvml.Return) (s string) {
	sym := Symbol(ret)
	defer func() {
		// ErrorString on an unset mock panics; the symbol alone will do.
		if recover() != nil {
			s = sym
		}
	}()
	msg := lib.ErrorString(ret)
	if msg == "" || msg == sym {
		return sym
	}
	return msg + " (" + sym + ")"
}
