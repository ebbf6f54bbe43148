package network_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/network"
	"github.com/gpuhost/gpuhost/scan"
)

func init() {
	network.ValidateFacts = func(d *network.Doc) error { return facts.Validate(*document(d)) }
	network.EvaluatePack = evaluatePack
}

// document is the facts document of what d collected.
func document(d *network.Doc) *facts.Facts {
	f := facts.New(d.Kind(), "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	f.Network = d.Network
	for name, status := range d.Statuses() {
		f.Record(name, status, "")
	}
	return f
}

// evaluatePack scans d's facts with the default pack and params, as
// "gpuhost scan facts" does.
func evaluatePack(t *testing.T, d *network.Doc) map[string]network.PackResult {
	t.Helper()
	ctx := context.Background()
	e, err := scan.Pack{}.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scan.New(e).Facts(ctx, document(d))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]network.PackResult{}
	for _, r := range rep.Results {
		out[r.ID] = network.PackResult{Status: r.Status, Messages: r.Messages}
	}
	return out
}
