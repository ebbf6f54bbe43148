#!/bin/sh
# backports.sh DEST: give the TCG boots of make test and make demo-boot a
# QEMU of 9.0 or later, whose TCG runs a guest's AES instructions on the
# host's own and translates faster in general (docs/testing.md, "Where the
# time goes"). Each first boot re-encrypts the image's root inside the guest,
# so the guest's AES is much of what a first boot costs.
#
# When the host's qemu-system-x86_64 is already 9.0 or later, DEST/bin gets a
# link to it. On Debian 12, whose QEMU is 7.2, the QEMU of Debian's
# bookworm-backports is downloaded with apt into a private state directory
# (the host's apt sources, lists and packages are left as they are),
# unpacked under DEST and started through DEST/bin/qemu-system-x86_64, a
# script that points it at its own firmware and modules. When neither works
# the script says so and leaves DEST/bin empty: the boots then run on the
# host's QEMU, slower, and nothing else changes.
set -eu

dest=${1:?usage: backports.sh DEST}
min_major=9

warn() { echo "warning: $*; the TCG boots use the host's QEMU, about half again as slow" >&2; }

major() { "$1" --version 2>/dev/null | sed -n '1s/^QEMU emulator version \([0-9][0-9]*\)\..*/\1/p'; }

# DEST/bin may be on PATH already: look for the host's QEMU once it is gone.
# apt runs in another directory below, so DEST is made absolute.
rm -rf "$dest"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
host=$(command -v qemu-system-x86_64 || true)
[ -n "$host" ] || { echo "error: qemu-system-x86_64 is not installed (Debian package qemu-system-x86)" >&2; exit 1; }
mkdir -p "$dest/bin"
have=$(major "$host")
if [ "${have:-0}" -ge "$min_major" ]; then
	ln -s "$host" "$dest/bin/qemu-system-x86_64"
	exit 0
fi

. /etc/os-release
if [ "${ID:-}" != debian ] || [ -z "${VERSION_CODENAME:-}" ]; then
	warn "$host is QEMU $have and this is not Debian, whose backports carry a newer one"
	exit 0
fi
suite=$VERSION_CODENAME-backports
# The Debian archive this host already installs from, by apt's own account.
uri=$(apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' 'Origin: Debian' "Codename: $VERSION_CODENAME" 2>/dev/null | head -n 1)
if [ -z "$uri" ]; then
	warn "apt lists no Debian archive for $VERSION_CODENAME (run apt-get update)"
	exit 0
fi

work=$dest/apt
mkdir -p "$work/lists/partial" "$work/cache" "$work/debs" "$dest/root"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" >"$work/sources.list"
apt() {
	apt-get -q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root "$@"
}
if ! apt update >"$work/update.log" 2>&1; then
	warn "apt-get update of $suite failed ($work/update.log)"
	exit 0
fi
packages="qemu-system-x86/$suite qemu-system-common/$suite qemu-system-data/$suite seabios/$suite"
if ! (cd "$work/debs" && apt download $packages) >"$work/download.log" 2>&1; then
	warn "could not download $packages ($work/download.log)"
	exit 0
fi
for deb in "$work/debs"/*.deb; do
	dpkg-deb -x "$deb" "$dest/root"
done
root=$(cd "$dest/root" && pwd)
qemu=$root/usr/bin/qemu-system-x86_64
missing=$(ldd "$qemu" | sed -n 's/^[[:space:]]*\([^ ]*\) => not found$/\1/p' | tr '\n' ' ')
if [ -n "$missing" ]; then
	warn "the QEMU of $suite needs libraries this host lacks: $missing"
	rm -rf "$dest/root"
	exit 0
fi
# Its firmware and modules first, the host's QEMU's (the option ROMs that
# Debian links from ipxe-qemu) after them.
cat >"$dest/bin/qemu-system-x86_64" <<EOF
#!/bin/sh
# Written by tools/qemu/backports.sh: $(dpkg-deb -f "$work"/debs/qemu-system-x86_*.deb Version) from Debian's $suite.
QEMU_MODULE_DIR=$root/usr/lib/x86_64-linux-gnu/qemu
export QEMU_MODULE_DIR
exec $qemu -L $root/usr/share/seabios -L $root/usr/share/qemu -L /usr/share/qemu "\$@"
EOF
chmod 755 "$dest/bin/qemu-system-x86_64"
got=$(major "$dest/bin/qemu-system-x86_64")
if [ "${got:-0}" -lt "$min_major" ]; then
	warn "the QEMU unpacked from $suite does not start"
	rm -f "$dest/bin/qemu-system-x86_64"
	exit 0
fi
rm -rf "$work"
"$dest/bin/qemu-system-x86_64" --version | head -n 1
