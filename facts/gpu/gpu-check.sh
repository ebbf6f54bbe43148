#!/usr/bin/env bash
# gpu-check: run gpuhost against this machine's real GPUs. Writes to OUT_DIR
# (default $OUT, then ./out):
#   facts-host.json  facts-host.exit   "gpuhost facts host" (gpuhost.facts/v1) and its exit code
#   scan-host.json   scan-host.exit    "gpuhost scan host" (gpuhost.report/v1) and its exit code
#   scan-host.txt                      the same report as a table
#   validate.json    validate.exit     "gpuhost validate --format json" (gpuhost.validation/v1):
#                                      driver, container, cuda, fabric and mig steps; exit 0 passed,
#                                      1 a step failed, 2 a required step did not run
#   nvidia-smi.txt   nvidia-smi.exit   "nvidia-smi -q", when nvidia-smi is installed
# and prints nvidia-smi -q, the GPU checks and the validation's verdict.
# Extra arguments go to "gpuhost scan host" (e.g. --params FILE);
# GPU_VALIDATE_ARGS go to "gpuhost validate" (e.g. "--skip container").
# Each command is killed after GPU_CHECK_TIMEOUT seconds (default 120; exit
# code 124); validate's own steps stop at its --timeout, 2m each by default,
# so give it more when a slow container runtime needs it.
# Exit status is the scan's: 0 pass, 1 a check failed at or above --fail-on,
# 2 the scan could not be trusted. validate's is kept in validate.exit.
# To keep a host's facts as a test fixture, check facts-host.json and
# validate.json in under facts/gpu/testdata/ with a test that validates the
# facts against the schema and evaluates every GPU check over them (git log
# -- facts/gpu/real_test.go has the one that waited for such a file).
set -eu

cd "$(dirname "$0")/../.."
OUT_DIR="${OUT_DIR:-${OUT:-./out}}"
GPUHOST="${GPUHOST:-bin/gpuhost}"
LIMIT="${GPU_CHECK_TIMEOUT:-120}"
mkdir -p "$OUT_DIR"

if [ ! -x "$GPUHOST" ]; then
	# go-nvml is cgo; the NVIDIA headers warn about deprecated declarations.
	CGO_ENABLED=1 CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}" \
		timeout 1200 go build -trimpath -o "$GPUHOST" ./cmd/gpuhost
fi

# run NAME CMD...: stdout to $OUT_DIR/NAME, exit code to $OUT_DIR/NAME without
# its extension + .exit; never stops the script.
run() {
	local out="$1" rc=0
	shift
	timeout --kill-after=10 "$LIMIT" "$@" >"$OUT_DIR/$out" || rc=$?
	echo "$rc" >"$OUT_DIR/${out%.*}.exit"
	return 0
}

if command -v nvidia-smi >/dev/null; then
	run nvidia-smi.txt nvidia-smi -q
	cat "$OUT_DIR/nvidia-smi.txt"
else
	echo "gpu-check: nvidia-smi is not installed"
fi

run facts-host.json "$GPUHOST" facts host
run scan-host.json "$GPUHOST" scan host --format json --report "table=$OUT_DIR/scan-host.txt" "$@"
# shellcheck disable=SC2086 # GPU_VALIDATE_ARGS is split into flags on purpose
run validate.json "$GPUHOST" validate --format json ${GPU_VALIDATE_ARGS:-}

echo
grep -E '^(ID |GH-GPU-)' "$OUT_DIR/scan-host.txt" 2>/dev/null || echo "gpu-check: no report table; see $OUT_DIR"
# The verdict, then each step's name and status (the lines of "steps" at the
# steps' own indent, not their GPUs').
if grep -m1 '"verdict"' "$OUT_DIR/validate.json" 2>/dev/null; then
	sed -n '/^  "steps"/,$p' "$OUT_DIR/validate.json" | grep -E '^      "(name|status)"' || true
else
	echo "gpu-check: no validation; see $OUT_DIR"
fi
status="$(cat "$OUT_DIR/scan-host.exit")"
echo "gpu-check: wrote $OUT_DIR (facts exit $(cat "$OUT_DIR/facts-host.exit"), scan exit $status, validate exit $(cat "$OUT_DIR/validate.exit"))"
exit "$status"
