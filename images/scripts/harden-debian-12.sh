#!/bin/sh
# Hardening for images/debian-12-gpu.pkr.hcl, run in the rootfs by the shell
# provisioner before gpuhost-gpu, so that the manifest that provisioner
# writes records the hardened configuration files and packages.
#
# The file provisioner has put images/files/* under /tmp/gpuhost-harden.
set -eu
export LC_ALL=C
src=/tmp/gpuhost-harden

die() {
	echo "harden-debian-12: $*" >&2
	exit 1
}

echo "==> firewall: nftables, inbound default drop, ssh allowed"
command -v nft >/dev/null 2>&1 || die "nftables is not installed (the template's extra_packages installs it)"
install -m 0755 -o root -g root "$src/nftables.conf" /etc/nftables.conf
# Offline enable: systemctl only writes the wants link, nothing starts.
systemctl enable nftables.service
ls /etc/systemd/system/*.wants/nftables.service >/dev/null 2>&1 || die "nftables.service did not get enabled"

echo "==> OpenSSL: system default MinProtocol TLSv1.3"
cnf=/etc/ssl/openssl.cnf
[ -f "$cnf" ] || die "$cnf is missing"
# Debian's openssl.cnf names openssl_init but gives it no ssl_conf; one
# already there means someone configured TLS another way, so do not guess.
if grep -Eq '^[[:space:]]*ssl_conf[[:space:]]*=' "$cnf" || grep -Eq '^[[:space:]]*\[[[:space:]]*(ssl_sect|system_default_sect)[[:space:]]*\]' "$cnf"; then
	die "$cnf already has an ssl_conf or system_default section; refusing to edit it"
fi
grep -Eq '^[[:space:]]*openssl_conf[[:space:]]*=[[:space:]]*openssl_init[[:space:]]*$' "$cnf" || die "$cnf does not set openssl_conf = openssl_init"
grep -Eq '^[[:space:]]*\[[[:space:]]*openssl_init[[:space:]]*\]' "$cnf" || die "$cnf has no [openssl_init] section"
sed -E '/^[[:space:]]*\[[[:space:]]*openssl_init[[:space:]]*\]/a ssl_conf = ssl_sect' "$cnf" >"$cnf.gpuhost"
cat "$src/openssl-system-default.cnf" >>"$cnf.gpuhost"
# Write through the existing file, keeping its owner and mode.
cat "$cnf.gpuhost" >"$cnf"
rm -f "$cnf.gpuhost"
grep -Eq '^ssl_conf = ssl_sect$' "$cnf" || die "could not add ssl_conf to [openssl_init] in $cnf"

echo "==> sshd: keys only, no root, strong algorithms"
[ -f /etc/ssh/sshd_config ] || die "openssh-server is not installed (the template's extra_packages installs it)"
grep -Eq '^[[:space:]]*Include[[:space:]]+/etc/ssh/sshd_config.d/\*\.conf' /etc/ssh/sshd_config || die "/etc/ssh/sshd_config does not include sshd_config.d/*.conf"
install -m 0644 -o root -g root "$src/sshd-gpuhost.conf" /etc/ssh/sshd_config.d/50-gpuhost.conf

echo "==> hostname: a neutral one instead of the build machine's"
# mmdebstrap copies the build machine's /etc/hostname; deployment sets the
# host's real name.
echo debian-12-gpu >/etc/hostname

rm -rf "$src"
echo "harden-debian-12: done"
