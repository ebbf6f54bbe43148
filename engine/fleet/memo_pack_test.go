package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policies"
)

// The memo answers a check from another host's outcome when the two agree on
// everything the read analysis says the check reads. If the analysis missed
// a read, a host would be given another's pass. These tests run the embedded
// pack over hosts that differ from real documents by small mutations, the
// kind a fleet shows (a field changed, a key missing, a GPU more or less, a
// value of another type), and require every result to equal evaluation's.

// packFleetParams are a fleet's params, so that the count and MIG checks run.
var packFleetParams = map[string]any{"gpu_expected_count": 4, "gpu_mig": false}

// packEngines are the embedded pack with the memo off (every check
// evaluated, as OPA alone would) and on, built once for the tests and the
// fuzz target.
var packEngines = sync.OnceValues(func() ([2]evaluator, error) {
	var out [2]evaluator
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		return out, err
	}
	// The cold engine is OPA as it comes: no memo, and OPA's own virtual
	// cache, so the tests hold refCache to it as well.
	for i := range out {
		e, err := engine.New(context.Background(), engine.WithSource(src), engine.WithParams(packFleetParams))
		if err != nil {
			return out, err
		}
		out[i] = e
		if i == 1 {
			out[i] = New(e, 1<<16)
		}
	}
	return out, nil
})

// memoBaseDocs are real documents: the policy pack's compliant host, the
// scanner's weak and hardened rootfs facts, and a four-GPU host with a
// baseline manifest, so that the GPU and drift checks have GPUs and a
// baseline to compare.
func memoBaseDocs(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, file := range []string{
		"../../scan/testdata/compliant-host.json",
		"../../scan/testdata/noncompliant-image.json",
		"../../scan/testdata/weak-facts.json",
		"../../scan/testdata/hardened-facts.json",
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, decodeMap(tb, data))
	}
	host := deepCopy(out[0]).(map[string]any)
	gpu := host["gpu"].(map[string]any)
	dev := gpu["devices"].([]any)[0].(map[string]any)
	var devs []any
	for i := range 4 {
		d := deepCopy(dev).(map[string]any)
		d["index"] = json.Number(fmt.Sprint(i))
		d["uuid"] = fmt.Sprintf("GPU-%08x-0000-0000-0000-000000000000", i)
		d["pci_bus_id"] = fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)
		devs = append(devs, d)
	}
	gpu["devices"] = devs
	var pkgs []any
	for _, p := range host["packages"].([]any) {
		p := p.(map[string]any)
		pkgs = append(pkgs, map[string]any{"name": p["name"], "version": p["version"], "arch": p["arch"], "held": p["held"]})
	}
	host["manifest"] = map[string]any{
		"schema":       "gpuhost.manifest/v1",
		"packages":     pkgs,
		"pins":         map[string]any{"packages": []any{pkgs[0]}, "driver": gpu["driver_version"], "kernel": "6.8.0-45-generic", "ngc_images": []any{}},
		"config_files": []any{map[string]any{"path": "/etc/ssh/sshd_config", "sha256": "ab"}},
	}
	host["config_files"] = []any{map[string]any{"path": "/etc/ssh/sshd_config", "sha256": "ab"}}
	host["collectors"].(map[string]any)["manifest"] = map[string]any{"status": "ok"}
	host["collectors"].(map[string]any)["config_files"] = map[string]any{"status": "ok"}
	return append(out, host)
}

func decodeMap(tb testing.TB, data []byte) map[string]any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// mutator changes a document in the ways hosts of one fleet differ.
type mutator struct {
	rng     *rand.Rand
	strings []string
}

// protected paths decide gating and parsing, which the memo is not asked
// about: a document without them is refused before evaluation.
func protected(path []string) bool {
	if len(path) == 0 || path[0] == "schema" || path[0] == "collectors" {
		return true
	}
	return len(path) >= 2 && path[0] == "target" && path[1] == "kind"
}

// nodes lists every path in v with its parent container.
func nodes(v any, path []string, visit func(path []string, parent any, key any)) {
	switch c := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(slices.Clone(path), k)
			visit(p, c, k)
			nodes(c[k], p, visit)
		}
	case []any:
		for i := range c {
			p := append(slices.Clone(path), fmt.Sprint(i))
			visit(p, c, i)
			nodes(c[i], p, visit)
		}
	}
}

func (m *mutator) value(old any) any {
	switch m.rng.IntN(9) {
	case 0:
		return nil
	case 1:
		return m.rng.IntN(2) == 0
	case 2:
		return json.Number(fmt.Sprint(m.rng.IntN(130) - 2))
	case 3:
		return m.strings[m.rng.IntN(len(m.strings))]
	case 4:
		return []any{}
	case 5:
		return map[string]any{}
	case 6:
		if s, ok := old.(string); ok {
			return s + "x"
		}
		return "x"
	case 7:
		switch o := old.(type) {
		case bool:
			return !o
		case json.Number:
			n, _ := o.Int64()
			return json.Number(fmt.Sprint(n + 1))
		}
		return old
	default:
		return deepCopy(old)
	}
}

// mutate applies n random changes to a copy of doc.
func (m *mutator) mutate(doc map[string]any, n int) map[string]any {
	out := deepCopy(doc).(map[string]any)
	for range n {
		type site struct {
			parent any
			key    any
		}
		var sites []site
		nodes(out, nil, func(path []string, parent, key any) {
			if !protected(path) {
				sites = append(sites, site{parent, key})
			}
		})
		if len(sites) == 0 {
			return out
		}
		s := sites[m.rng.IntN(len(sites))]
		switch p := s.parent.(type) {
		case map[string]any:
			k := s.key.(string)
			if m.rng.IntN(4) == 0 {
				delete(p, k)
			} else {
				p[k] = m.value(p[k])
			}
		case []any:
			i := s.key.(int)
			switch m.rng.IntN(4) {
			case 0:
				j := m.rng.IntN(len(p))
				p[i], p[j] = p[j], p[i]
			case 1:
				p[i] = deepCopy(p[m.rng.IntN(len(p))])
			default:
				p[i] = m.value(p[i])
			}
		}
	}
	return out
}

func stringsOf(docs []map[string]any) []string {
	seen := map[string]bool{}
	for _, d := range docs {
		nodes(d, nil, func(_ []string, parent, key any) {
			var v any
			switch p := parent.(type) {
			case map[string]any:
				v = p[key.(string)]
			case []any:
				v = p[key.(int)]
			}
			if s, ok := v.(string); ok && len(s) < 40 {
				seen[s] = true
			}
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// agree evaluates doc cold and warm, as parsed AST and as decoded JSON, and
// fails the test on any difference.
func agree(t testing.TB, cold, warm evaluator, doc map[string]any, what string) {
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := engine.ParseDocument(data, what)
	if err != nil {
		return
	}
	want, err := cold.Evaluate(context.Background(), parsed)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	decoded, err := engine.DocumentFromValue(decodeMap(t, data), what)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	again, err := engine.ParseDocument(data, what)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*engine.Document{again, decoded} {
		got, err := warm.Evaluate(context.Background(), d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s: %s from the memo is %s %q; evaluated it is %s %q\ndocument: %s",
					what, want[i].ID, got[i].Status, got[i].Messages, want[i].Status, want[i].Messages, data)
			}
		}
	}
}

func TestMemoAgreesOnMutatedHosts(t *testing.T) {
	engines, err := packEngines()
	if err != nil {
		t.Fatal(err)
	}
	cold, warm := engines[0], engines[1]
	base := memoBaseDocs(t)
	m := &mutator{rng: rand.New(rand.NewPCG(1, 2)), strings: stringsOf(base)}
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := range rounds {
		for i, b := range base {
			// One host as it is, then hosts a change or three away: the
			// memo holds the first when the others are asked.
			agree(t, cold, warm, b, fmt.Sprintf("base %d", i))
			for v := range 3 {
				agree(t, cold, warm, m.mutate(b, 1+v), fmt.Sprintf("round %d base %d variant %d", round, i, v))
			}
		}
	}
	var hits, lookups int64
	stats := warm.(*Memo).memo.checks
	for i := range stats {
		hits += stats[i].hits.Load()
		lookups += stats[i].lookups.Load()
	}
	t.Logf("memo: %d hits in %d lookups", hits, lookups)
	if hits == 0 {
		t.Fatal("the memo never answered: the test compared nothing")
	}
}

// FuzzMemoAgrees lets the fuzzer choose the mutations: its bytes seed the
// choices, so that coverage guides it towards reads the analysis missed.
func FuzzMemoAgrees(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(seed, uint8(2))
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		engines, err := packEngines()
		if err != nil {
			t.Fatal(err)
		}
		base := memoBaseDocs(t)
		m := &mutator{rng: rand.New(rand.NewPCG(seed, uint64(n))), strings: stringsOf(base)}
		b := base[int(seed%uint64(len(base)))]
		agree(t, engines[0], engines[1], b, "base")
		for v := range 4 {
			agree(t, engines[0], engines[1], m.mutate(b, 1+int(n%5)), fmt.Sprintf("seed %d variant %d", seed, v))
		}
	})
}
