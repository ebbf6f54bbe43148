//go:build !lean

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/containers/verify"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// verifyCommand checks a published image for a pre-deploy gate: one
// command a CI job in another pipeline can gate a rollout on, reading only
// manifests and the small evidence blobs, never the disk.
func (a *app) verifyCommand() *cobra.Command {
	var (
		key, policyDigest, maxAge, failOn string
		usernameEnv, passwordEnv          string
		insecure                          bool
		timeout                           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "verify REGISTRY/REPO@DIGEST --key KEY",
		Short: "Verify a published image's signature, provenance and gate report without pulling the disk",
		Long: fmt.Sprintf(`verify checks an image the gpuhost-gate post-processor published: the signature
on its manifest digest, the SLSA v1 provenance the gate signed (both in cosign's
layout, checked offline with the public key), that the report, baked manifest
and SBOM referrers the provenance names by digest are present and hold the
documents it signs, and that the report passes at --fail-on, was made with
--policy-digest, and is no older than --max-age.

Only the signed referrers are read, by digest: the image's list of referrers is
not, so others attached to it by anyone who can push change nothing. The whole
check must finish within --timeout; each registry response must start within %s
and then bring at least %d KiB, or its end, every %s.`,
			verify.DefaultReadTimeout, verify.MinProgress>>10, verify.DefaultReadTimeout),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return errors.New("--key is required: the public key (PEM file) or KMS URI the image was signed with")
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive duration such as 2m", timeout)
			}
			age, err := parseAge("--max-age", maxAge)
			if err != nil {
				return err
			}
			v, err := verifier(cmd, key)
			if err != nil {
				return err
			}
			o := verify.Options{Key: v, PolicyDigest: policyDigest, MaxAge: age, FailOn: failOn, Timeout: timeout,
				Registry: []publish.Option{publish.WithInsecure(insecure)}}
			if (usernameEnv == "") != (passwordEnv == "") {
				return errors.New("--username-env and --password-env: set both or neither")
			}
			if usernameEnv != "" {
				user, pass := os.Getenv(usernameEnv), os.Getenv(passwordEnv)
				if user == "" || pass == "" {
					return fmt.Errorf("environment variables %s and %s must both be set", usernameEnv, passwordEnv)
				}
				o.Registry = append(o.Registry, publish.WithBasicAuth(user, pass))
			}
			res, err := verify.Verify(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			a.printVerified(res)
			if len(res.Problems) > 0 {
				for _, p := range res.Problems {
					fmt.Fprintln(a.stderr, "gpuhost: refused:", p)
				}
				return &exitError{code: scan.ExitFail}
			}
			fmt.Fprintln(a.stdout, "verified")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&key, "key", "", "the public key (PEM, as cosign.pub) or KMS URI the image was signed with (required)")
	f.StringVar(&policyDigest, "policy-digest", "", "the policy pack digest the report must have been made with (default: the one the provenance records)")
	f.StringVar(&maxAge, "max-age", "", "refuse a report older than this: a duration such as 168h, or days such as 7d (default: no limit)")
	f.Var(choiceVar(&failOn, "high", reports.Severities...), "fail-on", "refuse when a check failed at this severity or above: "+strings.Join(reports.Severities, ", "))
	f.StringVar(&usernameEnv, "username-env", "", "environment variable holding the registry user name")
	f.StringVar(&passwordEnv, "password-env", "", "environment variable holding the registry password or token")
	f.BoolVar(&insecure, "insecure", false, "reach a registry that is not on a loopback or private address over plain HTTP")
	f.DurationVar(&timeout, "timeout", verify.DefaultTimeout, "give up, with exit 2, when the whole check has not finished within this")
	return cmd
}

// verifier opens --key: a KMS URI through sigstore's providers, else a
// PEM public key file.
func verifier(cmd *cobra.Command, key string) (sign.Verifier, error) {
	if strings.Contains(key, "://") {
		return sign.OpenKMS(cmd.Context(), key)
	}
	pem, err := userfile.Read(key, userfile.MaxKey)
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	v, err := sign.LoadPublicKey(pem)
	if err != nil {
		return nil, fmt.Errorf("--key %s: %w", key, err)
	}
	return v, nil
}

// printVerified says what was checked, for the job's log.
func (a *app) printVerified(res *verify.Result) {
	rep, prov := res.Report, res.Provenance
	fmt.Fprintf(a.stdout, "image:      %s\n", res.Image)
	fmt.Fprintf(a.stdout, "signature:  ok\n")
	fmt.Fprintf(a.stdout, "provenance: ok (builder %s, verdict %s, finished %s)\n", prov.BuilderID, prov.Gate.Verdict, prov.FinishedOn.UTC().Format("2006-01-02T15:04:05Z"))
	for _, n := range []string{"report", "manifest", "sbom", "vex"} {
		if e, ok := prov.Evidence[n]; ok {
			fmt.Fprintf(a.stdout, "%-11s %s (referrer %s)\n", n+":", e.Digest, res.Evidence[n])
		}
	}
	fmt.Fprintf(a.stdout, "policy:     %s\n", rep.PolicyDigest)
	fmt.Fprintf(a.stdout, "scanned:    %s: %d checks, %d failed, %d waived\n", rep.Target.ScannedAt, rep.Summary.Total,
		rep.Summary.ByStatus[reports.StatusFail], rep.Summary.ByStatus[reports.StatusWaived])
}
