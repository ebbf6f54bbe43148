#!/bin/sh
# gendocs.sh PACKER_SDC OUT renders the rootfs builder's page from
# docs-intro.mdx and the field comments of Config (config.go) into OUT.
exec sh "$(dirname "$0")/../gendocs.sh" "$1" "$2" builder/rootfs config.go \
	Config-required "### Optional=Config-not-required" \
	"### The encryption block=EncryptionConfig" "#### Optional=EncryptionConfig-not-required"
