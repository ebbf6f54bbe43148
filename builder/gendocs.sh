#!/bin/sh
# gendocs.sh PACKER_SDC OUT PKG SOURCES PARTIAL [TITLE=PARTIAL ...]
#
# Renders a Packer component's page into OUT: PKG/docs-intro.mdx (front
# matter and prose, ending where the first partial goes), then the partials
# packer-sdc struct-markdown writes from the field comments in SOURCES, each
# later one under its TITLE line. Run from the repository root or a
# component folder; PKG is the folder's path from the root (builder/rootfs).
#
# SOURCES is one argument, a space-separated list of Go files: a bare name
# is in PKG, a path with a slash is from the root, for settings a component
# shares with another (builder/internal/evaluation/evaluation.go). A bare
# PARTIAL names one of PKG's structs; one with a slash names another
# package's (builder/internal/evaluation/Config-not-required).
#
# packer-sdc struct-markdown guesses the project root from a parent directory
# named packer-plugin-* (and loops forever when there is none), so it runs on
# copies of SOURCES under such a directory, and its partials are inlined.
set -eu
# PACKER_SDC is a path, or a name looked up on PATH as go:generate does.
case $1 in
*/*) sdc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;;
*) sdc=$(command -v "$1") || { echo "gendocs.sh: $1 is not on PATH (make packer-sdc builds bin/packer-sdc)" >&2; exit 2; } ;;
esac
out=$2 pkg=$3 sources=$4
shift 4
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for source in $sources; do
	case $source in
	*/*) rel=$source ;;
	*) rel=$pkg/$source ;;
	esac
	copy="$tmp/packer-plugin-gpuhost/$(dirname "$rel")"
	mkdir -p "$copy"
	cp "$root/$rel" "$copy/"
	(cd "$copy" && "$sdc" struct-markdown "$(basename "$rel")")
done
parts="$tmp/packer-plugin-gpuhost/docs-partials"
{
	cat "$root/$pkg/docs-intro.mdx"
	first=1
	for part in "$@"; do
		case $part in
		*=*)
			printf '\n%s\n\n' "${part%%=*}"
			part=${part#*=}
			;;
		*)
			# Partials of two structs under one title, such as the
			# shared settings and the component's own.
			[ -n "$first" ] || printf '\n'
			;;
		esac
		first=
		case $part in
		*/*) cat "$parts/$part.mdx" ;;
		*) cat "$parts/$pkg/$part.mdx" ;;
		esac
	done
} >"$out"
