#!/bin/sh
# gendocs.sh PACKER_SDC OUT PKG SOURCE PARTIAL [TITLE=PARTIAL ...]
#
# Renders a Packer component's page into OUT: PKG/docs-intro.mdx (front
# matter and prose, ending where the first partial goes), then the partials
# packer-sdc struct-markdown writes from the field comments in PKG/SOURCE,
# each later one under its TITLE line. Run from the repository root or a
# component folder; PKG is the folder's path from the root (builder/rootfs).
#
# packer-sdc struct-markdown guesses the project root from a parent directory
# named packer-plugin-* (and loops forever when there is none), so it runs on
# a copy of SOURCE under such a directory, and its partials are inlined.
set -eu
sdc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2 pkg=$3 source=$4
shift 4
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy="$tmp/packer-plugin-gpuhost/$pkg"
mkdir -p "$copy"
cp "$root/$pkg/$source" "$copy/"
(cd "$copy" && "$sdc" struct-markdown "$source")
parts="$tmp/packer-plugin-gpuhost/docs-partials/$pkg"
{
	cat "$root/$pkg/docs-intro.mdx"
	for part in "$@"; do
		case $part in
		*=*)
			printf '\n%s\n\n' "${part%%=*}"
			part=${part#*=}
			;;
		esac
		cat "$parts/$part.mdx"
	done
} >"$out"
