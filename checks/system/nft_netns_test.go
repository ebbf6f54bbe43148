package system

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// netnsRuleset drops by default and admits through a named interval set
// reached by a jump, an anonymous set, a goto and a plain port; a chain no
// rule jumps to opens nothing, and a drop ahead of an accept wins.
const netnsRuleset = `table inet filter {
	set allowed {
		type inet_service
		flags interval
		elements = { 22, 8000-8002 }
	}
	chain services {
		tcp dport 8001 drop
		tcp dport @allowed accept
		udp dport { 53, 123 } accept
	}
	chain web {
		tcp dport { 80, 443 } accept
	}
	chain unused {
		tcp dport 7777 accept
	}
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		iif lo accept
		jump services
		tcp dport 9090 counter accept
		meta l4proto tcp goto web
		tcp dport 9999 accept
	}
}
`

// loadNetns creates a network namespace, loads ruleset into it with nft
// and returns the namespace's file and the nft command prefix.
func loadNetns(t *testing.T, ruleset string) (netns string, nft []string) {
	t.Helper()
	prefix := testutil.Netns(t)
	nftPath := testutil.Tool(t, "nft", "nftables")
	file := filepath.Join(t.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(ruleset), 0o644); err != nil {
		t.Fatal(err)
	}
	nft = append(slices.Clone(prefix), nftPath)
	testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "-f", file)...)
	return "/run/netns/" + prefix[len(prefix)-1], nft
}

func TestNftKernelRulesetInNetns(t *testing.T) {
	netns, nft := loadNetns(t, netnsRuleset)
	want := []int{22, 53, 80, 123, 443, 8000, 8002, 9090}

	rs, err := readKernelRuleset(netns)
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := rs.verdict()
	if err != nil {
		t.Fatal(err)
	}
	file, err := parseNftVerdict([]byte(netnsRuleset))
	if err != nil {
		t.Fatal(err)
	}
	listed := nftJSONPorts(t, testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "-j", "list", "ruleset")...))
	for name, got := range map[string][]int{"kernel": kernel.ports, "file": file.ports, "nft -j": listed} {
		if !equalInts(got, want) {
			t.Errorf("%s: accepted ports %v, want %v", name, got, want)
		}
	}
	if kernel.policy != "drop" || file.policy != "drop" {
		t.Errorf("policy kernel %q file %q, want drop", kernel.policy, file.policy)
	}
	if len(kernel.unknown) != 0 || len(file.unknown) != 0 {
		t.Errorf("unmodeled rules: kernel %+v, file %+v", kernel.unknown, file.unknown)
	}
	// The rule that admits 8000 is the set lookup in the chain jumped to.
	if a := admitOf(kernel.admits, "tcp", 8000); !strings.HasPrefix(a, "inet filter services handle ") || !strings.Contains(a, "@allowed accept") {
		t.Errorf("8000 admitted by %q, want the @allowed rule of services", a)
	}
	if a := admitOf(kernel.admits, "tcp", 443); !strings.HasPrefix(a, "inet filter web handle ") {
		t.Errorf("443 admitted by %q, want the web chain reached by goto", a)
	}
	// What nft prints back is also a file the parser must read the same.
	text := testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "list", "ruleset")...)
	if back, err := parseNftVerdict([]byte(text)); err != nil || !equalInts(back.ports, want) {
		t.Errorf("nft list ruleset parsed back: %v %v\n%s", back.ports, err, text)
	}
}

func admitOf(admits []facts.FirewallAdmit, proto string, port int) string {
	for _, a := range admits {
		if a.Proto == proto && a.From <= port && port <= a.To {
			return a.Rule
		}
	}
	return ""
}

// nftJSONPorts computes the accepted ports from nft's own JSON listing, for
// the shapes netnsRuleset uses: it follows jumps and gotos from the input
// base chain and applies drops that come before accepts.
func nftJSONPorts(t *testing.T, out string) []int {
	t.Helper()
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("nft -j: %v\n%s", err, out)
	}
	type rule struct{ Expr []map[string]json.RawMessage }
	rules := map[string][]rule{}
	sets := map[string][]any{}
	base := ""
	for _, o := range doc.Nftables {
		if raw, ok := o["chain"]; ok {
			var c struct{ Name, Hook string }
			mustJSON(t, raw, &c)
			if c.Hook == "input" {
				base = c.Name
			}
		}
		if raw, ok := o["set"]; ok {
			var s struct {
				Name string
				Elem []any
			}
			mustJSON(t, raw, &s)
			sets[s.Name] = s.Elem
		}
		if raw, ok := o["rule"]; ok {
			var r struct {
				Chain string
				Expr  []map[string]json.RawMessage
			}
			mustJSON(t, raw, &r)
			rules[r.Chain] = append(rules[r.Chain], rule{r.Expr})
		}
	}
	var accepted, decided portSet
	var walk func(chain string, depth int)
	walk = func(chain string, depth int) {
		if depth > 8 {
			t.Fatalf("jump loop at %s", chain)
		}
		for _, r := range rules[chain] {
			var ports *portSet
			verdict, target := "", ""
			for _, e := range r.Expr {
				if raw, ok := e["match"]; ok {
					var m struct {
						Left  map[string]map[string]string
						Right any
					}
					mustJSON(t, raw, &m)
					if m.Left["payload"]["field"] == "dport" {
						ports = jsonPorts(m.Right, sets)
					} else if _, isCt := m.Left["ct"]; isCt {
						verdict = "skip"
					} else if _, isMeta := m.Left["meta"]; isMeta && m.Left["meta"]["key"] == "iif" {
						verdict = "skip"
					}
				}
				for _, v := range []string{"accept", "drop", "jump", "goto"} {
					raw, ok := e[v]
					if !ok || verdict == "skip" {
						continue
					}
					verdict = v
					if v == "jump" || v == "goto" {
						var j struct{ Target string }
						mustJSON(t, raw, &j)
						target = j.Target
					}
				}
			}
			if verdict == "skip" {
				continue
			}
			if ports == nil {
				ports = &portSet{}
				ports.fill()
			}
			fresh := *ports
			fresh.andNot(&decided)
			switch verdict {
			case "accept":
				accepted.or(&fresh)
				decided.or(&fresh)
			case "drop":
				decided.or(&fresh)
			case "jump":
				walk(target, depth+1)
			case "goto":
				walk(target, depth+1)
				decided.or(&fresh)
			}
		}
	}
	if base == "" {
		t.Fatal("nft -j lists no input chain")
	}
	walk(base, 0)
	return accepted.list()
}

func jsonPorts(v any, sets map[string][]any) *portSet {
	var ps portSet
	var add func(v any)
	add = func(v any) {
		switch v := v.(type) {
		case float64:
			ps.add(int(v), int(v))
		case string:
			for _, e := range sets[strings.TrimPrefix(v, "@")] {
				add(e)
			}
		case map[string]any:
			if r, ok := v["range"].([]any); ok && len(r) == 2 {
				ps.add(int(r[0].(float64)), int(r[1].(float64)))
			}
			if s, ok := v["set"].([]any); ok {
				for _, e := range s {
					add(e)
				}
			}
		}
	}
	add(v)
	return &ps
}

func mustJSON(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
}
