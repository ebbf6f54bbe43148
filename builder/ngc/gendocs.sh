#!/bin/sh
# gendocs.sh PACKER_SDC OUT renders the gpuhost-ngc data source's page from
# docs-intro.mdx and the field comments in datasource.go into OUT.
exec sh "$(dirname "$0")/../gendocs.sh" "$1" "$2" builder/ngc datasource.go \
	Config-required "### Optional=Config-not-required" "## Output=DatasourceOutput"
