#!/bin/sh
# gendocs.sh PACKER_SDC OUT renders the gpuhost-scan provisioner's page from
# docs-intro.mdx and the field comments of its Config (config.go) and of
# the evaluation settings it shares with the gpuhost-gate post-processor
# into OUT.
ev=builder/internal/evaluation
exec sh "$(dirname "$0")/../gendocs.sh" "$1" "$2" builder/scan "config.go $ev/evaluation.go" \
	'## Configuration reference=Config' '### Required=Config-required' \
	"### Optional=Config-not-required" "$ev/Config-not-required" \
	"## \`vulnerabilities\` block=$ev/Vulnerabilities" "### Optional=$ev/Vulnerabilities-not-required"
