package reports

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// sortResults must order exactly as a stable sort on (status, severity, id)
// does, equal keys keeping their input order.
func TestSortResultsIsStable(t *testing.T) {
	statuses := append(slices.Clone(Statuses), "bogus")
	severities := append(slices.Clone(Severities), "")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		results := make([]Result, rng.IntN(60))
		for i := range results {
			results[i] = Result{
				ID:       []string{"GH-A-1", "GH-A-2", "GH-B-1"}[rng.IntN(3)],
				Status:   statuses[rng.IntN(len(statuses))],
				Severity: severities[rng.IntN(len(severities))],
				Messages: []string{string(rune('a' + i%26))},
			}
			results[i].Title = results[i].ID + "#" + string(rune('0'+i%10))
		}
		want := slices.Clone(results)
		sort.SliceStable(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if ra, rb := statusRank(a.Status), statusRank(b.Status); ra != rb {
				return ra < rb
			}
			if ra, rb := SeverityRank(a.Severity), SeverityRank(b.Severity); ra != rb {
				return ra < rb
			}
			return a.ID < b.ID
		})
		sortResults(results)
		for i := range want {
			if results[i].Title != want[i].Title || results[i].Messages[0] != want[i].Messages[0] {
				t.Fatalf("round %d: position %d is %+v, want %+v", round, i, results[i], want[i])
			}
		}
	}
}
