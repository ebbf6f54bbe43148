#!/bin/sh
# gendocs.sh PACKER_SDC OUT renders the gpuhost-gate post-processor's page
# from docs-intro.mdx and the field comments of its Config, Publish and
# Signing (config.go) and of the evaluation settings it shares with the
# gpuhost-scan provisioner into OUT.
ev=builder/internal/evaluation
exec sh "$(dirname "$0")/../gendocs.sh" "$1" "$2" builder/gate "config.go $ev/evaluation.go" \
	'## Configuration reference=Config' \
	"### Optional=$ev/Config-not-required" Config-not-required \
	'## `publish` block=Publish' '### Optional=Publish-not-required' \
	'## `publish.signing` block=Signing' '### Optional=Signing-not-required' \
	"## \`vulnerabilities\` block=$ev/Vulnerabilities" "### Optional=$ev/Vulnerabilities-not-required"
