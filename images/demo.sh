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
# Last, the agent's own image is built (go-containerregistry on an
# mmdebstrap base), pushed by digest, and the DaemonSet that runs it is
# rendered into $OUT/daemonset.yaml.
#
# The Makefile passes the tools in: PACKER, CRANE, GPUHOST, COSIGN, OUT,
# IMAGE_DIR, APT_CACHE_DIR, TRIVY_DB, PACKER_PLUGIN_PATH, AGENTIMAGE, AGENT,
# AGENT_BASE and VERSION. DEMO_REGISTRY picks the address.
set -euo pipefail

: "${PACKER:?}" "${CRANE:?}" "${GPUHOST:?}" "${COSIGN:?}" "${OUT:?}" "${IMAGE_DIR:?}" "${APT_CACHE_DIR:?}" "${TRIVY_DB:?}" "${PACKER_PLUGIN_PATH:?}"
: "${AGENTIMAGE:?}" "${AGENT:?}" "${AGENT_BASE:?}" "${VERSION:?}"
registry=${DEMO_REGISTRY:-127.0.0.1:5055}
here=$(cd "$(dirname "$0")" && pwd)
work=$OUT/demo-registry

say() { printf '== %s ==\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v docker-registry >/dev/null || die "docker-registry is not installed (apt-get install docker-registry)"

say "starting a local registry on $registry"
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

say "baking images/debian-12-gpu.pkr.hcl with Packer, gated by gpuhost-gate"
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

say "verifying $pushed as a pre-deploy gate (referrers only, never the disk)"
"$GPUHOST" verify "$pushed" --key "$work/cosign.pub" --max-age 1d --fail-on high
# cosign checks the same signature and provenance with no transparency log.
"$COSIGN" verify --key "$work/cosign.pub" --insecure-ignore-tlog=true "$pushed" >/dev/null
"$COSIGN" verify-attestation --key "$work/cosign.pub" --type slsaprovenance1 --insecure-ignore-tlog=true "$pushed" >/dev/null
echo "cosign verify and cosign verify-attestation --type slsaprovenance1: ok"

say "building the agent's image and pushing it by digest"
"$AGENTIMAGE" -base "$AGENT_BASE" -apt-cache "$APT_CACHE_DIR" -binary "$AGENT" -version "$VERSION" \
	-revision "$(git -C "$here" rev-parse HEAD 2>/dev/null || true)" \
	-push "$registry/gpuhost/gpuhost-agent" -insecure -daemonset "$OUT/daemonset.yaml"
echo "the DaemonSet runs $(sed -n 's/^ *image: //p' "$OUT/daemonset.yaml")"
