package gpu

import (
	"strconv"
	"strings"
	"testing"
)

// An AER counter file is untrusted text: its total is found only on the
// line it names, is never negative, and is the number the line says.
func FuzzAERTotal(f *testing.F) {
	f.Add("Receiver Error 2\nBad TLP 0\nTOTAL_ERR_COR 2\n", "TOTAL_ERR_COR")
	f.Add("TOTAL_ERR_FATAL -1\n", "TOTAL_ERR_FATAL")
	f.Add("TOTAL_ERR_NONFATAL 99999999999999999999\n", "TOTAL_ERR_NONFATAL")
	f.Fuzz(func(t *testing.T, text, total string) {
		n, ok := aerTotal(text, total)
		if !ok {
			return
		}
		if n < 0 || !strings.Contains(text, total+" ") || !strings.Contains(text, strconv.FormatInt(n, 10)) {
			t.Fatalf("aerTotal(%q, %q) = %d", text, total, n)
		}
	})
}
