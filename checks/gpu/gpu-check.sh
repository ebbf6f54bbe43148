#!/usr/bin/env bash
# gpu-check: collect this host's facts (NVML included) and scan them, writing
#   $OUT_DIR/facts-host.json  the gpuhost.facts/v1 document
#   $OUT_DIR/scan-host.json   the gpuhost.report/v1 report
# and print the GPU part in short. OUT_DIR defaults to $OUT, then ./out.
# Extra arguments go to "gpuhost scan host" (e.g. --params FILE).
# Exit status is the scan's: 0 pass, 1 a check failed at or above --fail-on,
# 2 the scan could not be trusted.
set -euo pipefail

cd "$(dirname "$0")/../.."
OUT_DIR="${OUT_DIR:-${OUT:-./out}}"
GPUHOST="${GPUHOST:-bin/gpuhost}"
mkdir -p "$OUT_DIR"

if [[ ! -x "$GPUHOST" ]]; then
	# go-nvml is cgo; the NVIDIA headers warn about deprecated declarations.
	export CGO_ENABLED=1 CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"
	go build -trimpath -o "$GPUHOST" ./cmd/gpuhost
fi

"$GPUHOST" facts host >"$OUT_DIR/facts-host.json"
status=0
"$GPUHOST" scan host --format json "$@" >"$OUT_DIR/scan-host.json" || status=$?

summary() {
	python3 - "$OUT_DIR/facts-host.json" "$OUT_DIR/scan-host.json" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
g = facts.get("gpu") or {}
st = facts.get("collectors", {}).get("gpu", {})
print(f"gpu collector: {st.get('status', 'did not run')} {st.get('reason', '')}".rstrip())
if g:
    print(f"NVML available: {g.get('available')}  driver {g.get('driver_version', '-')}  "
          f"kernel module {g.get('kernel_module_version', '-')}  CUDA {g.get('cuda_driver_version', '-')}")
    for d in g.get("devices") or []:
        print(f"  GPU {d['index']} {d.get('uuid', '')} {d.get('name', '')} {d.get('pci_bus_id', '')}")
    print(f"XID events: {len(g.get('xid_events') or [])} ({g.get('xid_source') or g.get('xid_error', '')})")
counts = {}
for r in report.get("results", []):
    if r["id"].startswith("GH-GPU-"):
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] in ("fail", "error"):
            for m in r.get("messages") or [""]:
                print(f"  {r['status'].upper()} {r['id']} [{r['severity']}] {m}")
print("GPU checks: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
PY
}
if command -v python3 >/dev/null; then
	summary || echo "gpu-check: could not summarise; see $OUT_DIR" >&2
fi
echo "gpu-check: wrote $OUT_DIR/facts-host.json and $OUT_DIR/scan-host.json (scan exit $status)"
exit "$status"
