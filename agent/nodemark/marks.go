package nodemark

import (
	"fmt"
	"slices"
	"strings"
)

// nodeObject is what a run reads of its node. Taints stay as the API
// server sent them, every field kept, since the patch sends the whole list
// back.
type nodeObject struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Taints []map[string]any `json:"taints"`
	} `json:"spec"`
}

// patch is the strategic merge patch that leaves n with exactly the marks
// wanted, or nil when it carries them already. A mark not wanted is
// removed, so that one left by an earlier run, or by a flag since turned
// off, goes too. Labels and annotations merge by key (null deletes).
// Taints do not: the API treats the list as one value, so the patch sends
// the whole list, the others' taints as read, with the resourceVersion
// read, and a taint changed meanwhile makes it fail with 409 rather than
// drop that change.
func (m *marker) patch(n nodeObject, failing []string) map[string]any {
	marked := len(failing) > 0
	meta := map[string]any{}
	wantLabel, wantAnnotation := "", ""
	if marked && m.label {
		wantLabel, wantAnnotation = "false", annotation(failing)
	}
	if v, ok := n.Metadata.Labels[Label]; v != wantLabel || ok != (wantLabel != "") {
		meta["labels"] = map[string]any{Label: orNull(wantLabel)}
	}
	if v, ok := n.Metadata.Annotations[Annotation]; v != wantAnnotation || ok != (wantAnnotation != "") {
		meta["annotations"] = map[string]any{Annotation: orNull(wantAnnotation)}
	}
	out := map[string]any{}
	if taints, changed := m.taints(n.Spec.Taints, marked); changed {
		meta["resourceVersion"] = n.Metadata.ResourceVersion
		out["spec"] = map[string]any{"taints": taints}
	}
	if len(meta) == 0 && len(out) == 0 {
		return nil
	}
	if len(meta) > 0 {
		out["metadata"] = meta
	}
	return out
}

// taints is the list with the agent's taint as wanted and every other one
// as it was, and whether that differs from the list given.
func (m *marker) taints(have []map[string]any, marked bool) ([]map[string]any, bool) {
	want := marked && m.taint
	others := slices.DeleteFunc(slices.Clone(have), func(t map[string]any) bool { return t["key"] == Taint })
	if want {
		others = append(others, map[string]any{"key": Taint, "effect": "NoSchedule"})
	}
	ours := slices.IndexFunc(have, func(t map[string]any) bool { return t["key"] == Taint })
	switch {
	case want && ours >= 0:
		// Present already: changed only if it is not exactly ours.
		same := len(have[ours]) == 2 && have[ours]["effect"] == "NoSchedule" && len(others) == len(have)
		return others, !same
	case want:
		return others, true
	default:
		return others, ours >= 0
	}
}

func orNull(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// annotation is the value for the failing check ids: sorted, each once,
// comma-separated, and past the bound cut at a whole id, with a count of
// those left out.
func annotation(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	all := strings.Join(ids, ",")
	if len(all) <= maxAnnotation {
		return all
	}
	var kept []string
	n := 0
	for i, id := range ids {
		rest := fmt.Sprintf("+%d more", len(ids)-i)
		if n+len(id)+1+len(rest) > maxAnnotation {
			return strings.Join(append(kept, rest), ",")
		}
		kept = append(kept, id)
		n += len(id) + 1
	}
	return all
}
