package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ValidateSARIF runs the SARIF Multitool's validate (make sarif-multitool)
// over files, with its SARIF rules and GitHub code scanning's ingestion
// rules (a region on every location, among others), and fails the test for
// every error or warning it reports: what GitHub would not annotate is a
// defect of the report.
func ValidateSARIF(t testing.TB, files ...string) {
	t.Helper()
	tool := BuiltTool(t, "sarif-multitool", "sarif-multitool")
	out := filepath.Join(t.TempDir(), "validation.sarif")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The files go first: --log takes every word after it as a value.
	args := append(append([]string{"validate"}, files...), "--rule-kind", "Gh;Sarif", "--output", out, "--log", "ForceOverwrite")
	cmd := exec.CommandContext(ctx, tool, args...)
	// .NET needs ICU unless told to do without; nothing here sorts by locale.
	cmd.Env = append(os.Environ(), "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1", "DOTNET_CLI_TELEMETRY_OPTOUT=1")
	var console bytes.Buffer
	cmd.Stdout, cmd.Stderr = &console, &console
	if err := cmd.Run(); err != nil {
		t.Fatalf("sarif-multitool validate: %v\n%s", err, console.String())
	}
	errs, warnings, err := multitoolFindings(out)
	if err != nil {
		t.Fatalf("reading the Multitool's log: %v\n%s", err, console.String())
	}
	for _, e := range append(errs, warnings...) {
		t.Errorf("sarif-multitool: %s", e)
	}
}

// multitoolFindings reads the Multitool's own SARIF log: its results, at
// each one's effective level (the result's, else its rule's default,
// else warning), and its execution notifications.
func multitoolFindings(file string) (errs, warnings []string, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID                   string `json:"id"`
						DefaultConfiguration struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
						MessageStrings map[string]struct {
							Text string `json:"text"`
						} `json:"messageStrings"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Invocations []struct {
				ExecutionSuccessful        bool `json:"executionSuccessful"`
				ToolExecutionNotifications []struct {
					Level   string `json:"level"`
					Message struct {
						Text string `json:"text"`
					} `json:"message"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex *int   `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text      string   `json:"text"`
					ID        string   `json:"id"`
					Arguments []string `json:"arguments"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		return nil, nil, err
	}
	if len(log.Runs) == 0 {
		return nil, nil, fmt.Errorf("%s holds no run", file)
	}
	for _, run := range log.Runs {
		for _, inv := range run.Invocations {
			if !inv.ExecutionSuccessful {
				errs = append(errs, "the validation did not run to completion")
			}
			for _, n := range inv.ToolExecutionNotifications {
				if n.Level == "error" || n.Level == "" {
					errs = append(errs, "tool notification: "+n.Message.Text)
				}
			}
		}
		for _, r := range run.Results {
			level, text := r.Level, r.Message.Text
			if r.RuleIndex != nil && *r.RuleIndex < len(run.Tool.Driver.Rules) {
				rule := run.Tool.Driver.Rules[*r.RuleIndex]
				if level == "" {
					level = rule.DefaultConfiguration.Level
				}
				if text == "" {
					text = rule.MessageStrings[r.Message.ID].Text
					for i, a := range r.Message.Arguments {
						text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", i), a)
					}
				}
			}
			if level == "" {
				level = "warning"
			}
			where := ""
			if len(r.Locations) > 0 {
				l := r.Locations[0].PhysicalLocation
				where = fmt.Sprintf("%s:%d: ", filepath.Base(l.ArtifactLocation.URI), l.Region.StartLine)
			}
			line := where + r.RuleID + ": " + text
			switch level {
			case "error":
				errs = append(errs, line)
			case "warning":
				warnings = append(warnings, line)
			}
		}
	}
	return errs, warnings, nil
}
