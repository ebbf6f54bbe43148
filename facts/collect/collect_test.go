package collect

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBudgetDefaults(t *testing.T) {
	if got := (Budget{KDFTime: time.Second}).WithDefaults(); got.Deadline != DefaultBudget.Deadline || got.KDFTime != time.Second || got.KDFMemory != DefaultBudget.KDFMemory || got.Memory != DefaultBudget.Memory {
		t.Errorf("WithDefaults: %+v", got)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err            error
		status, reason string
	}{
		{nil, StatusOK, ""},
		{NotApplicable("no sockets offline"), StatusNotApplicable, "no sockets offline"},
		{fmt.Errorf("reading the ESP: %w", Unavailable("no device")), StatusUnavailable, "no device"},
		{errors.New("parsing /etc/x: line 3"), StatusError, "parsing /etc/x: line 3"},
	} {
		if s, r := Classify(c.err); s != c.status || r != c.reason {
			t.Errorf("Classify(%v) = %q, %q; want %q, %q", c.err, s, r, c.status, c.reason)
		}
	}
}
