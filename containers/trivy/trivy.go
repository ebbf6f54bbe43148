// Package trivy is gpuhost's only door to trivy: the SBOM of a rootfs or an
// OCI image, and offline matching of its OS packages against a trivy
// vulnerability database. Trivy's Go API is not a stable library (its
// maintainers say so), so no other package imports it; when it changes,
// this package is the one to fix.
//
// Trivy never walks the target here. The few files that matter (os-release
// and the dpkg status) are read through facts/sysroot, bounded, and trivy
// is handed the parsed packages; trivy's own walker follows symlinks and
// opens FIFOs, which an untrusted image must not be able to exploit.
package trivy

import (
	"log/slog"
	"os"

	tlog "github.com/aquasecurity/trivy/pkg/log"
)

// toolVersion names the trivy module whose code builds the documents.
const toolVersion = "0.74.0"

func init() {
	// Importing trivy's log package replaces slog's default logger with one
	// that buffers every record, unbounded and unlocked, until trivy's CLI
	// initialises logging, which never happens in gpuhost. Put a plain
	// stderr logger back; the CLI sets its own later.
	if _, ok := slog.Default().Handler().(*tlog.DeferredHandler); ok {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	}
}
