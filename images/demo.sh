#!/usr/bin/env bash
# The image half of `make demo`: a local OCI registry (Debian's
# docker-registry) stands in for NGC and for the release registry. A small
# real base (busybox-static from Debian) is pushed to it, the Debian 12 image
# is baked with that base pre-seeded by digest, the gpuhost-gate
# post-processor scans the image and, on a pass, publishes it to the same
# registry with its report, manifest and SBOM as referrers, signed with a
# key made for the demo and with its SLSA provenance; then gpuhost verify
# and cosign check it as a pre-deploy gate would.
#
# Then the agent's own image is built (go-containerregistry on an
# mmdebstrap base), pushed by digest, and the DaemonSet that runs it is
# rendered into $OUT/daemonset.yaml; and the disk, the sample trees and this
# machine are scanned into every report format. Each stage says what it
# proves and how long it took. cosign's own check of the signature is part
# of make test (images/e2e), and the boot is make demo-boot.
#
# The Makefile passes the tools in: PACKER, CRANE, GPUHOST, OUT, IMAGE_DIR,
# APT_CACHE_DIR, TRIVY_DB, PACKER_PLUGIN_PATH, AGENTIMAGE, AGENT, AGENT_BASE
# and VERSION. DEMO_REGISTRY picks the address.
set -euo pipefail

: "${PACKER:?}" "${CRANE:?}" "${GPUHOST:?}" "${OUT:?}" "${IMAGE_DIR:?}" "${APT_CACHE_DIR:?}" "${TRIVY_DB:?}" "${PACKER_PLUGIN_PATH:?}"
: "${AGENTIMAGE:?}" "${AGENT:?}" "${AGENT_BASE:?}" "${VERSION:?}"
registry=${DEMO_REGISTRY:-127.0.0.1:5055}
here=$(cd "$(dirname "$0")" && pwd)
work=$OUT/demo-registry

say() { printf '   %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# stage NAME PROVES starts a stage: it prints what the stage proves, and the
# one before it ends with its time. The times are listed again at the end.
demo_start=$(date +%s)
stage_name='' stage_start=0 summary=''
end_stage() {
	[ -n "$stage_name" ] || return 0
	local took=$(($(date +%s) - stage_start))
	printf '   (%ss)\n' "$took"
	summary+=$(printf '%5ss  %s' "$took" "$stage_name")$'\n'
	stage_name=''
}
stage() {
	end_stage
	stage_name=$1 stage_start=$(date +%s)
	printf '\n== %s ==\n   proves: %s\n' "$1" "$2"
}

command -v docker-registry >/dev/null || die "docker-registry is not installed (apt-get install docker-registry)"

stage "registry" "NGC and the release registry can be stood in for: a local OCI registry ($registry) with a real base image"
rm -rf "$work"
mkdir -p "$work/storage" "$work/base/root"
cat >"$work/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: $registry
EOF
docker-registry serve "$work/config.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill "$registry_pid" 2>/dev/null; wait "$registry_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	"$CRANE" catalog --insecure "$registry" >/dev/null 2>&1 && break
	kill -0 "$registry_pid" 2>/dev/null || die "docker-registry exited: $(cat "$work/registry.log")"
	sleep 0.1
done
"$CRANE" catalog --insecure "$registry" >/dev/null || die "the registry on $registry does not answer (is the port taken? set DEMO_REGISTRY)"

say "pushing a small base image (busybox-static from Debian)"
(
	cd "$work/base"
	apt-get download busybox-static >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get download busybox-static >/dev/null; } ||
		die "apt-get download busybox-static failed"
)
deb=$(ls "$work"/base/busybox-static_*.deb)
dpkg-deb -x "$deb" "$work/base/root"
ln -s busybox "$work/base/root/bin/sh"
# What a vulnerability scanner reads from a base: the release the package
# came from, and a dpkg status that lists it. GH-SC-001 matches the seeded
# base from these, and a base without them is an error, never a pass.
mkdir -p "$work/base/root/etc" "$work/base/root/var/lib/dpkg"
cp /etc/os-release "$work/base/root/etc/os-release"
{
	dpkg-deb -f "$deb" Package Version Architecture Maintainer Description
	echo "Status: install ok installed"
	echo
} >"$work/base/root/var/lib/dpkg/status"
tar -C "$work/base/root" -cf "$work/base/layer.tar" .
version=$(dpkg-deb -f "$deb" Version)
tag=$(printf '%s' "${version#*:}" | tr -c 'A-Za-z0-9_.-' '_')
base="$registry/demo/busybox:$tag"
"$CRANE" append --insecure --oci-empty-base --platform linux/amd64 -f "$work/base/layer.tar" -t "$base" >/dev/null
digest=$("$CRANE" digest --insecure "$base")
echo "base $base@$digest"

say "making the demo's signing key (ECDSA P-256)"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/cosign.key" 2>/dev/null
openssl pkey -in "$work/cosign.key" -pubout -out "$work/cosign.pub"

stage "bake and gate" "Packer bakes images/debian-12-gpu.pkr.hcl (pinned NVIDIA stack, hardening, the base pre-seeded by digest), and gpuhost-gate passes it, signs it and publishes it with its evidence"
repository="$registry/gpuhost/debian-12-gpu"
log="$OUT/packer-build.log"
(
	cd "$here"
	CHECKPOINT_DISABLE=1 "$PACKER" build -force -color=false \
		-var-file=pins-debian-12.pkrvars.hcl \
		-var "output_dir=$IMAGE_DIR" \
		-var "apt_cache_dir=$APT_CACHE_DIR" \
		-var "ngc_images=[{ref = \"$base\", digest = \"$digest\"}]" \
		-var "ngc_allowed_registries=[\"nvcr.io\", \"$registry\"]" \
		-var "publish_repository=$repository" \
		-var "signing_key_file=$work/cosign.key" \
		-var "trivy_db=$TRIVY_DB" \
		debian-12-gpu.pkr.hcl
) 2>&1 | tee "$log"

pushed=$(sed -n 's/.*gpuhost-gate: pushed \([^ ]*\)$/\1/p' "$log" | tail -n1)
[ -n "$pushed" ] || die "the gate published nothing; see $log"
image_digest=${pushed##*@}
say "published $pushed"
echo "referrers (read back from the registry: docker-registry 2.8 keeps them under the referrers tag schema):"
"$CRANE" manifest --insecure "$repository:sha256-${image_digest#sha256:}" |
	grep -o '"digest":"[^"]*"\|"artifactType":"[^"]*"' | tr -d '"' | sed 's/^/   /'
echo "gate reports beside the image:"
ls -1 "$IMAGE_DIR" | grep '\.gate\.' | sed "s|^|  $IMAGE_DIR/|"

stage "verify" "a pre-deploy gate can check what was published from its signed referrers alone, never pulling the disk"
"$GPUHOST" verify "$pushed" --key "$work/cosign.pub" --max-age 1d --fail-on high

stage "agent image" "the fleet agent ships as an OCI image pinned by digest, with the DaemonSet that runs it"
"$AGENTIMAGE" -base "$AGENT_BASE" -apt-cache "$APT_CACHE_DIR" -binary "$AGENT" -version "$VERSION" \
	-revision "$(git -C "$here" rev-parse HEAD 2>/dev/null || true)" \
	-push "$registry/gpuhost/gpuhost-agent" -insecure -daemonset "$OUT/daemonset.yaml"
echo "the DaemonSet runs $(sed -n 's/^ *image: //p' "$OUT/daemonset.yaml")"

reports() { for f in table json sarif junit markdown html; do printf -- '--report %s=%s ' "$f" "$OUT/$1.$f"; done; }

stage "scan the disk" "the pre-deploy gate: the baked disk judged offline, without mounting it, passing at --fail-on high"
# shellcheck disable=SC2046
"$GPUHOST" scan image "$IMAGE_DIR/disk.qcow2" --rootfs "$IMAGE_DIR/rootfs" --params "$here/params-debian-12.yaml" \
	--waivers "$here/waivers-debian-12.yaml" --trivy-db "$TRIVY_DB" --fail-on-skip critical --no-color $(reports debian-12-gpu) >/dev/null
say "passed; $OUT/debian-12-gpu.table"

stage "scan the samples" "the same checks tell a hardened tree from a weak one"
samples=$here/../cmd/gpuhost/testdata
# shellcheck disable=SC2046
"$GPUHOST" scan rootfs "$samples/rootfs-hardened" --params "$samples/params-demo.yaml" --no-color $(reports sample-rootfs) >/dev/null
rc=0
# shellcheck disable=SC2046
"$GPUHOST" scan rootfs "$samples/rootfs-weak" --params "$samples/params-demo.yaml" --no-color $(reports weak-rootfs) >/dev/null || rc=$?
[ "$rc" -eq 1 ] || die "the weak sample tree exited $rc, want 1 (it fails, as it should)"
say "the hardened tree passes; the weak one fails (exit 1), as it should"

stage "scan this machine" "a live scan reads what runs here; this build machine is no GPU host, so findings are expected"
rc=0
# shellcheck disable=SC2046
"$GPUHOST" scan host --no-color $(reports host) >/dev/null || rc=$?
[ "$rc" -le 2 ] || die "gpuhost scan host exited $rc"
say "exit $rc (1: findings, 2: checks it could not judge here); $OUT/host.table"
end_stage

printf '\n== done in %ss ==\n%s' "$(($(date +%s) - demo_start))" "$summary"
printf '\nThe image is %s, published as %s.\n' "$IMAGE_DIR/disk.qcow2" "$pushed"
printf 'Reports, one file per format (table, json, sarif, junit, markdown, html), in %s:\n' "$OUT"
printf '  debian-12-gpu.*   the disk, judged offline\n'
printf '  sample-rootfs.*   the hardened sample tree; weak-rootfs.* the weak one\n'
printf '  host.*            this machine\n'
printf 'Open the HTML report in a browser: file://%s/debian-12-gpu.html\n' "$OUT"
printf 'Boot the disk and scan it live from inside, beside the offline verdict: make demo-boot\n'
