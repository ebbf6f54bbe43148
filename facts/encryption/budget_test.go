package encryption

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
)

// manySlots is a LUKS2 JSON area of n argon2id slots, each asking for
// memory KiB over passes, with a digest covering them all, over key
// material that opens none.
func manySlots(n int, memory, passes uint64) []byte {
	var slots, ids []string
	for i := range n {
		slots = append(slots, fmt.Sprintf(`"%d":{"type":"luks2","key_size":32,"area":{"type":"raw","offset":"%d","size":"4096","encryption":"aes-xts-plain64","key_size":32},"kdf":{"type":"argon2id","time":%d,"memory":%d,"cpus":1,"salt":"c2FsdHNhbHQ="},"af":{"type":"luks1","stripes":4,"hash":"sha256"}}`,
			i, i*4096, passes, memory))
		ids = append(ids, fmt.Sprintf(`"%d"`, i))
	}
	return []byte(`{"keyslots":{` + strings.Join(slots, ",") + `},"digests":{"0":{"type":"pbkdf2","keyslots":[` + strings.Join(ids, ",") +
		`],"hash":"sha256","iterations":2,"salt":"c2FsdA==","digest":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}`)
}

// Thirty-two slots each at the per-slot limit cost what one target may
// spend several times over: the slots the budget pays for are tried, the
// rest are not and say so, and the outcome is not remembered, so a scan
// with more to spend tries them.
func TestKeyslotTrialsShareOneBudget(t *testing.T) {
	device := bytes.Repeat([]byte{0x5c}, 32*4096)
	js := manySlots(32, 64, 4)
	lim := trialLimits{ArgonKiB: 64, ArgonWork: 256, PBKDF2Blocks: 1 << 20}
	b := budgetOf(lim)
	b.argonLeft = 4 * 256 // four slots' worth
	slots, err := luks2Slots(bytes.NewReader(device), int64(len(device)), js, b)
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, s := range slots {
		switch {
		case s.Untried == "":
			tried++
		case !strings.Contains(s.Untried, "spent their budget"):
			t.Errorf("slot %s untried because %q", s.ID, s.Untried)
		}
	}
	if tried != 4 || len(slots) != 32 {
		t.Fatalf("%d of %d slots tried, want 4 of 32", tried, len(slots))
	}
	again, err := luks2Slots(bytes.NewReader(device), int64(len(device)), js, budgetOf(lim))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range again {
		if s.Untried != "" {
			t.Fatalf("slot %s untried with the budget to try it: %q (the cut-short outcome was remembered)", s.ID, s.Untried)
		}
	}
}

// The trials stop at the scan's deadline and at their own time limit,
// before any work on the slots left.
func TestKeyslotTrialsStopAtTheDeadline(t *testing.T) {
	device := bytes.Repeat([]byte{0x3a}, 4*4096)
	js := manySlots(4, 64, 1)
	lim := trialLimits{ArgonKiB: 64, ArgonWork: 256, PBKDF2Blocks: 1 << 20}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := budgetOf(lim)
	b.ctx = ctx
	slots, err := luks2Slots(bytes.NewReader(device), int64(len(device)), js, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if !strings.Contains(s.Untried, "the scan's deadline passed") {
			t.Errorf("slot %s after the scan's deadline: %q", s.ID, s.Untried)
		}
	}

	b = budgetOf(lim)
	b.until, b.spend = time.Now().Add(-time.Second), 30*time.Second
	slots, err = luks2Slots(bytes.NewReader(device), int64(len(device)), js, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if !strings.Contains(s.Untried, "used their 30s") {
			t.Errorf("slot %s after the trials' time: %q", s.ID, s.Untried)
		}
	}
}

// PBKDF2's cost is its iterations times the hash blocks of the key it
// derives: a 128-byte key under SHA-1 is seven blocks, checked before any
// work, at and past the per-slot limit.
func TestPBKDF2CostCountsTheKeySize(t *testing.T) {
	if got := pbkdf2Blocks(1000, 128, 20); got != 7000 {
		t.Fatalf("pbkdf2Blocks(1000, 128, sha1) = %d, want 7000", got)
	}
	slot := func(iterations int) luks2Keyslots {
		js := fmt.Sprintf(`{"keyslots":{"0":{"type":"luks2","key_size":128,"area":{"type":"raw","offset":"0","size":"524288","encryption":"aes-xts-plain64","key_size":64},"kdf":{"type":"pbkdf2","hash":"sha1","iterations":%d,"salt":"c2FsdA=="},"af":{"type":"luks1","stripes":4000,"hash":"sha1"}}},"digests":{"0":{"type":"pbkdf2","keyslots":["0"],"hash":"sha1","iterations":1,"salt":"c2FsdA==","digest":"AAAAAAAAAAAAAAAAAAAAAAAAAAA="}}}`, iterations)
		var md luks2Keyslots
		if err := json.Unmarshal([]byte(js), &md); err != nil {
			t.Fatal(err)
		}
		return md
	}
	// The area key is 64 bytes: four SHA-1 blocks an iteration.
	lim := trialLimits{PBKDF2Blocks: 4000}
	if _, blocks, err := slot(1000).cost("0", lim); err != nil || blocks != 4000+1 {
		t.Errorf("at the limit: %d blocks, %v", blocks, err)
	}
	if _, _, err := slot(1001).cost("0", lim); err == nil || !strings.Contains(err.Error(), "more than a trial spends (4000 blocks)") {
		t.Errorf("past the limit: %v", err)
	}
}

// The budget a scan starts with follows collect.Budget: its memory
// ceiling becomes the argon2 limit, and a zero budget is the default.
func TestTrialBudgetFollowsTheScan(t *testing.T) {
	b := newTrialBudget(context.Background(), collect.Budget{KDFMemory: 64 << 20})
	if b.lim.ArgonKiB != 64<<10 {
		t.Errorf("a 64 MiB ceiling gives %d KiB", b.lim.ArgonKiB)
	}
	d := newTrialBudget(context.Background(), collect.Budget{})
	if d.lim.ArgonKiB != 512<<10 || d.spend != 30*time.Second {
		t.Errorf("the default budget: %d KiB, %v", d.lim.ArgonKiB, d.spend)
	}
}
