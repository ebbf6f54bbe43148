#!/usr/bin/env bash
# The boot half of `make demo`: the disk the demo baked and gated is booted
# in QEMU with gpuhost boot, scans itself live from inside
# (gpuhost-selftest.service), and the live verdict is printed beside the
# offline one. The agent gets a certificate from a CA made here and a
# token, as system credentials, as a deployment would give them.
#
# The Makefile passes GPUHOST, IMAGE_DIR and OUT.
set -euo pipefail

: "${GPUHOST:?}" "${IMAGE_DIR:?}" "${OUT:?}"
here=$(cd "$(dirname "$0")" && pwd)
work=$OUT/demo-boot
disk=$IMAGE_DIR/disk.qcow2
rm -rf "$work" "$OUT/selftest"
mkdir -p "$work"

say() { printf '== %s ==\n' "$*"; }

say "a CA, and a certificate and token for the booted host's agent"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 90 -subj "/CN=gpuhost demo CA" \
	-keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=debian-12-gpu" \
	-keyout "$work/agent.key" -out "$work/agent.csr" 2>/dev/null
printf 'subjectAltName=DNS:debian-12-gpu,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/agent.ext"
openssl x509 -req -in "$work/agent.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 90 \
	-extfile "$work/agent.ext" -out "$work/agent.crt" 2>/dev/null
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$work/token"
cat "$here/waivers-debian-12.yaml" "$here/waivers-qemu.yaml" >"$work/waivers.yaml"

say "booting $disk in QEMU (UEFI); the console follows in $work/console.log"
rc=0
# The root is LUKS2: the first boot seals its key to this swtpm's TPM, kept
# in $work/tpm as a host keeps its chip.
"$GPUHOST" boot "$disk" --disk-size 4G --tpm-state "$work/tpm" --selftest "$OUT/selftest" --waivers "$work/waivers.yaml" \
	--credential "gpuhost.agent-token=$work/token" \
	--credential "gpuhost.agent-tls-crt=$work/agent.crt" \
	--credential "gpuhost.agent-tls-key=$work/agent.key" >"$work/console.log" || rc=$?
grep '^live \|^  GH-' "$work/console.log" || true
[ "$rc" -le 1 ] || { tail -n 60 "$work/console.log" >&2; echo "error: gpuhost boot exited $rc" >&2; exit 1; }

say "the offline gate and the live scan of the same disk"
# by_status of a JSON report, whatever its layout.
by_status() { tr -d ' \n\t' <"$1" | sed -n 's/.*"by_status":\({[^}]*}\).*/\1/p'; }
offline=$(by_status "$OUT/debian-12-gpu.json")
live=$(by_status "$OUT/selftest/scan.json")
printf '  offline (gpuhost scan image): %s\n  live    (gpuhost scan host):  %s, exit %s\n' "$offline" "$live" "$rc"
echo "  the live reports are in $OUT/selftest"
