package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// judgingTarget is how many times collecting a scan may cost, judged: a
// scan's policy work should not dwarf reading the target.
const judgingTarget = 1.5

// complianceTarget is how many times the plain scan a scan judging the
// CIS Level 2 profile may cost.
const complianceTarget = 2.0

// complianceProfile is the largest compliance profile the pack ships.
const complianceProfile = "cis-ubuntu-22.04-l2-server"

// measureJudging times, side by side, what collecting a tree costs and
// what judging it adds: `facts rootfs` (collect alone), `scan rootfs`
// (collect and judge) and `scan facts` of that tree's saved document
// (judge alone, one document, in a process of its own), each run runs
// times in turn so that a load on the machine weighs on all three alike.
// It returns those measurements and a line of their ratios of median CPU
// time to the collection's, with the Level 2 compliance scan's to the
// plain scan's beside them.
func measureJudging(gpuhost, tree string, runs int) ([]measurement, string, error) {
	doc, err := os.CreateTemp("", "gpuhost-bench-judging-*.json")
	if err != nil {
		return nil, "", err
	}
	doc.Close()
	defer os.Remove(doc.Name())
	res, err := timed("", true, gpuhost, "facts", "rootfs", tree)
	if err != nil {
		return nil, "", fmt.Errorf("gpuhost facts rootfs %s: %w\n%s", tree, err, res.stderr)
	}
	if err := os.WriteFile(doc.Name(), res.stdout, 0o600); err != nil {
		return nil, "", err
	}
	name := filepath.Base(tree)
	collect := measurement{name: "gpuhost facts rootfs (" + name + ")"}
	scanTree := measurement{name: "gpuhost scan rootfs (" + name + ")"}
	scanDoc := measurement{name: "gpuhost scan facts (" + name + ", one document)"}
	scanCIS := measurement{name: "gpuhost scan rootfs --compliance " + complianceProfile + " (" + name + ")"}
	for range runs {
		for _, m := range []struct {
			to   *measurement
			args []string
		}{
			{&collect, []string{"facts", "rootfs", tree}},
			{&scanTree, []string{"scan", "rootfs", tree, "--format", "json"}},
			{&scanDoc, []string{"scan", "facts", doc.Name(), "--format", "json"}},
			{&scanCIS, []string{"scan", "rootfs", tree, "--compliance", complianceProfile, "--format", "json"}},
		} {
			res, err := timed("", false, gpuhost, m.args...)
			// A scan exits 1 when a check fails; that is a verdict, not an error.
			if err != nil && exitCode(err) != 1 {
				return nil, "", fmt.Errorf("gpuhost %v: %w\n%s", m.args, err, res.stderr)
			}
			m.to.add(res)
		}
	}
	base := collect.medianCPU()
	ratio := func(m measurement) string {
		return fmt.Sprintf("%.1f", float64(m.medianCPU())/float64(max(base, time.Millisecond)))
	}
	collect.finding = "collecting alone"
	scanTree.finding = ratio(scanTree) + " times the collection's CPU"
	scanDoc.finding = ratio(scanDoc) + " times the collection's CPU"
	cis := fmt.Sprintf("%.1f", float64(scanCIS.medianCPU())/float64(max(scanTree.medianCPU(), time.Millisecond)))
	scanCIS.finding = cis + " times the plain scan's CPU"
	line := fmt.Sprintf("judging: scan rootfs %s and scan facts %s times the CPU of facts rootfs on %s (target: at most %.1f); "+
		"--compliance %s %s times the plain scan (target: at most %.1f)",
		ratio(scanTree), ratio(scanDoc), name, judgingTarget, complianceProfile, cis, complianceTarget)
	return []measurement{collect, scanTree, scanDoc, scanCIS}, line, nil
}
